// The HTTP entry point: builds the fastify instance, its shared hooks (arrival, spans, drain, the
// webhook's outcome metric) and error answers, and registers the route families of
// edges/http/routes/: the OA webhook, order status, the OA callbacks, MCP, health and the
// contract. Routes parse and answer; the path to the workflow lives in submission/, shared with
// every other entry point.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Client } from '@temporalio/client';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { failureOutcome } from '../../submission/failure-outcome.js';
import type { StartGuard } from '../../submission/start-path-types.js';
import { noProductMetrics, type ProductMetrics, UNMATCHED_ROUTE } from '../../services/metrics/product-metrics.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerMcpRoute } from './routes/mcp.js';
import { oaCallbackPath, type OaRouteDeps, registerOaRoutes } from './routes/oa-callbacks.js';
import { registerOpenApiRoute } from './routes/openapi.js';
import { type OrderRouteDeps, registerOrderRoutes } from './routes/orders.js';
import { registerWebhookRoute, setContentTypeAside, type WebhookRouteDeps } from './routes/webhook.js';
import type { OaVendor } from '../../domain/oa-approval.js';
import type { Connector } from '../../vendors/connector.js';
import { HttpProblem, problem, problemFor, PROBLEM_CONTENT_TYPE } from './problem.js';
import { WEBHOOK_PATH } from './openapi.js';
import { registerRequestSpans } from './request-spans.js';
import { arrivalOf, registerArrivals } from './arrival.js';
import { type DoorBodyTimes, registerBodyTimes, requestTimeOptions } from './request-time.js';
import { type ApprovalEventsInFlight, approvalEventsInFlight } from '../../submission/accept-oa-event.js';
import { type IntakeLoad, intakeLoad } from '../../submission/intake-load.js';
import type { PolledWorker } from '../../services/health/readiness.js';
import type { EventConnections } from '../../services/health/event-connections.js';
import type { McpDeps } from '../mcp/tool.js';

export const MAX_BODY_BYTES = 256 * 1024;

/** The settings the routes read, each family its own. */
export type AppConfig = WebhookRouteDeps['config'] &
  OrderRouteDeps['config'] &
  OaRouteDeps['config'] &
  McpDeps['config'];

export interface AppDeps {
  config: AppConfig;
  prisma: PrismaClient;
  temporal: Client;
  logger?: FastifyBaseLogger;
  /**
   * True once the process was asked to stop: new requests get 503 + Retry-After (so the load
   * balancer and the OA side go elsewhere) while requests already running finish.
   */
  draining?: () => boolean;
  metrics?: ProductMetrics;
  /** The OA connectors that are on (Feishu, DingTalk); a vendor without one answers 404. */
  connectors?: Partial<Record<OaVendor, Connector>>;
  /** Which webhook and MCP deliveries may start their key's workflow; the product's own guard unless given. */
  startGuard?: StartGuard;
  /** The worker this process hosts (API_HOSTS_WORKER): `/readyz` is ready only while it polls. */
  hostedWorker?: PolledWorker;
  /** How many deliveries this process takes at once; its own, from INTAKE_MAX_IN_FLIGHT, unless given. */
  intake?: IntakeLoad;
  /** The OA approval events whose work goes on after their reply; the app's own unless given. */
  approvalsInFlight?: ApprovalEventsInFlight;
  /** The outbound event connections this process holds: /healthz's body says where each stands. */
  eventConnections?: EventConnections;
}

/** What the log says when a dependency was unavailable (the answer is a 503 with Retry-After). */
const UNAVAILABLE_LOG = {
  'temporal-unavailable': 'Temporal unreachable',
  'database-unavailable': 'database unreachable',
  overloaded: 'delivery shed: this instance could not take it inside its deadline',
};
/** The problem type each refused request was answered with, for the webhook outcome metric. */
const refusalTypes = new WeakMap<FastifyRequest, string>();

export function buildApp(deps: AppDeps): FastifyInstance {
  const { config } = deps;
  const metrics = deps.metrics ?? noProductMetrics();
  // One for the process: every door's deliveries share it (docs/architecture.md, decision 34).
  const intake = deps.intake ?? intakeLoad({ maxInFlight: config.http.maxInFlight });
  const app = Fastify({
    ...(deps.logger ? { loggerInstance: deps.logger } : { logger: false }),
    bodyLimit: MAX_BODY_BYTES,
    // A request that has not arrived whole within HTTP_REQUEST_TIMEOUT_MS is answered 408 and its
    // connection closed: a stranger cannot hold memory or the stop with a body it never finishes.
    // No idle timeout on the socket besides: an answer under `Prefer: wait` is silent for up to
    // 25 s, and an idle kept-alive connection has its own (72 s, fastify's keepAliveTimeout).
    ...requestTimeOptions(config.http.requestTimeoutMs),
    // Closing is answered by the drain hook below (problem+json with Retry-After), not by fastify.
    // No retries here either: the edge answers once, and the OA side's redelivery is safe by key.
    return503OnClosing: false,
  });

  // Read every body as raw bytes (the signature covers the exact bytes); the media type is
  // checked in the route, after the size limit, so the answer order is 413 → 415 → 401 → 400.
  // fastify itself answers 415 to an empty or malformed Content-Type before it reads the body,
  // so the webhook sets the header aside (see `setContentTypeAside`) and judges it in the route.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => {
    done(null, body);
  });

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof HttpProblem) {
      return sendProblem(reply.headers(error.headers), error.problem);
    }
    const fastifyError = error as { code?: string; statusCode?: number; message?: string };
    if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return sendProblem(
        reply,
        problem('payload-too-large', 413, 'Payload too large', `the body exceeds ${MAX_BODY_BYTES} bytes`),
      );
    }
    if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
      return sendProblem(
        reply,
        problem('bad-request', fastifyError.statusCode, 'Bad request', fastifyError.message ?? 'bad request'),
      );
    }
    // Everything else is a failure of the shared paths: its meaning is decided in one place.
    const outcome = failureOutcome(error);
    if (outcome.kind === 'retry-later') request.log.warn({ err: error }, UNAVAILABLE_LOG[outcome.slug]);
    if (outcome.kind === 'unexpected') request.log.error({ err: error }, 'unexpected error');
    const answer = problemFor(outcome);
    return sendProblem(reply.headers(answer.headers), answer.problem);
  });

  // First of all, each request's arrival: the deadlines of deliveries count from it.
  registerArrivals(app);
  // Then its body's time: a door's sender that gives up sooner than HTTP_REQUEST_TIMEOUT_MS gives
  // the body only that long.
  registerBodyTimes(app, config.http.requestTimeoutMs, doorBodyTimes(config, deps.connectors ?? {}));
  // With tracing on, a span per request; the routes below run their work inside it.
  registerRequestSpans(app);

  // A request that came in before the drain began closes its connection with its answer too: a
  // connection kept alive would hold the stop for the keep-alive timeout (72 s) after it answered.
  app.addHook('onSend', async (_request, reply) => {
    if (deps.draining?.()) reply.header('connection', 'close');
  });
  app.addHook('onRequest', async (request, reply) => {
    if (!deps.draining?.() || request.routeOptions.url === '/livez') return;
    reply.header('connection', 'close');
    throw new HttpProblem(
      problem(
        'shutting-down',
        503,
        'Service unavailable',
        'this instance is shutting down; nothing was started, send the request again',
      ),
      { 'retry-after': '1' },
    );
  });

  // Every answer by its route's pattern (`/orders/:key`, never the key) and status class, for the
  // 5xx ratio alert (OrdersApi5xxRatio); each route's 5xx count starts at 0 once they are all known.
  const routes = new Set<string>();
  app.addHook('onRoute', (route) => {
    routes.add(route.url);
  });
  app.addHook('onReady', (done) => {
    metrics.httpErrorsAtZero([...routes]);
    done();
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.httpAnswered(request.routeOptions.url ?? UNMATCHED_ROUTE, reply.statusCode);
  });

  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.url !== WEBHOOK_PATH) return;
    if (reply.statusCode === 202 || reply.statusCode === 201) {
      metrics.webhookAnswered('accepted');
      // The start's latency, against its deadline: an answer that waited for the write (Prefer:
      // wait, said by Preference-Applied) measures the write instead.
      if (!reply.hasHeader('preference-applied')) metrics.webhookStarted((Date.now() - arrivalOf(request)) / 1000);
    } else if (reply.statusCode === 200) {
      metrics.webhookAnswered('duplicate');
      metrics.duplicateAbsorbed('edge');
    } else if (reply.statusCode === 422) metrics.webhookAnswered('conflict');
    else metrics.webhookAnswered('refused', (refusalTypes.get(request) ?? 'unknown').replace(/^\/problems\//, ''));
  });

  app.setNotFoundHandler((request, reply) =>
    // The path only: an answer never repeats a caller's query, which may hold a token.
    sendProblem(
      reply,
      problem('not-found', 404, 'Not found', `no route for ${request.method} ${request.url.split('?')[0] ?? ''}`),
    ),
  );

  // The OA webhook: a signed approval, to the path to the workflow.
  registerWebhookRoute(app, {
    config,
    prisma: deps.prisma,
    temporal: deps.temporal,
    startGuard: deps.startGuard,
    intake,
    metrics,
  });

  // Where one key stands, for whoever asks or for STATUS_TOKEN's holders.
  registerOrderRoutes(app, { config, prisma: deps.prisma, temporal: deps.temporal });

  // The OA connectors' callbacks: approval events whose order is read from the approval form.
  registerOaRoutes(app, {
    config,
    prisma: deps.prisma,
    temporal: deps.temporal,
    metrics,
    intake,
    approvalsInFlight: deps.approvalsInFlight ?? approvalEventsInFlight(),
    connectors: deps.connectors ?? {},
    onRequest: setContentTypeAside,
  });

  // MCP tools for AI agents: the same path to the workflow as the webhook above.
  registerMcpRoute(app, {
    config,
    prisma: deps.prisma,
    temporal: deps.temporal,
    log: app.log,
    startGuard: deps.startGuard,
    intake,
    metrics,
  });

  // The probes: /livez, /healthz, /readyz.
  registerHealthRoutes(app, {
    prisma: deps.prisma,
    temporal: deps.temporal,
    hostedWorker: deps.hostedWorker,
    eventConnections: deps.eventConnections,
  });

  // The contract of every route above, built from the schemas the handlers use.
  registerOpenApiRoute(app);

  return app;
}

/**
 * The doors whose senders give up before HTTP_REQUEST_TIMEOUT_MS: the webhook's sender at
 * WEBHOOK_START_TIMEOUT_MS, each OA vendor at its own reply deadline (Feishu 3 s, DingTalk 1.5 s,
 * WeCom 5 s). A body still arriving then would be answered to nobody.
 */
function doorBodyTimes(config: AppConfig, connectors: Partial<Record<OaVendor, Connector>>): DoorBodyTimes {
  const times = new Map<string, number>([[WEBHOOK_PATH, config.http.startTimeoutMs]]);
  for (const [vendor, connector] of Object.entries(connectors)) {
    if (connector) times.set(oaCallbackPath(vendor), connector.vendorDeadlineMs);
  }
  return times;
}

function sendProblem(reply: FastifyReply, body: ReturnType<typeof problem>) {
  refusalTypes.set(reply.request, body.type);
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}
