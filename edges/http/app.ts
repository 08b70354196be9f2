// The HTTP entry point: the OA webhook, order status and health. Routes parse and answer; the
// path to the workflow lives in submission/, shared with every other entry point.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Client } from '@temporalio/client';
import type { Config } from '../../services/config/env.js';
import { parseApproval } from '../../domain/order-input.js';
import { parseIdempotencyKey } from '../../domain/idempotency-key.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import {
  failureOutcome,
  invalidInput,
  invalidKey,
  KnownFailure,
  orderNotFound,
} from '../../submission/failure-outcome.js';
import { publicStatusView, readOrderStatus } from '../../submission/order-status-view.js';
import { type StartGuard, submissionDepsFrom, submitApproval } from '../../submission/submit-approval.js';
import { noProductMetrics, type ProductMetrics } from '../../services/metrics/product-metrics.js';
import { bearerTokenRefusal } from '../mcp/bearer-token.js';
import { registerMcpRoute } from './mcp-route.js';
import { registerOaRoutes } from './oa-routes.js';
import type { OaVendor } from '../../domain/oa-approval.js';
import type { Connector } from '../../vendors/connector.js';
import { HttpProblem, problem, problemFor, PROBLEM_CONTENT_TYPE, refusedAtTheDoor } from './problem.js';
import { requestedWaitSeconds } from './prefer.js';
import { openApiDocument, OPENAPI_PATH, WEBHOOK_PATH } from './openapi.js';
import { verifyWebhookSignature } from '../../domain-node/signature.js';
import { inRequestSpan, registerRequestSpans } from './request-spans.js';
import { arrivalOf, registerArrivals, webhookDeadline } from './arrival.js';
import { type IntakeLoad, intakeLoad } from '../../submission/intake-load.js';
import {
  databaseMigrated,
  type PolledWorker,
  readiness,
  sharedCheck,
  temporalAnswers,
  workerPolling,
} from '../../services/health/readiness.js';
import type { EventConnections } from '../../services/health/event-connections.js';

export const MAX_BODY_BYTES = 256 * 1024;

export interface AppDeps {
  config: Config;
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

  app.post(WEBHOOK_PATH, { onRequest: setContentTypeAside }, async (request, reply) => {
    const deadline = webhookDeadline(request, config.http.startTimeoutMs);
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const mediaType = (declaredContentTypes.get(request) ?? '').split(';')[0]?.trim().toLowerCase();
    if (mediaType !== 'application/json') {
      throw new HttpProblem(
        problem('unsupported-media-type', 415, 'Unsupported media type', 'the body must be application/json'),
      );
    }
    const secret = config.webhook.secret;
    if (!secret) throw new Error('WEBHOOK_SECRET is not configured');
    const signature = verifyWebhookSignature({
      scheme: config.webhook.signatureScheme,
      secret,
      previousSecret: config.webhook.previousSecret,
      header: (name) => header(request, name.toLowerCase()),
      rawBody,
      toleranceSeconds: config.webhook.toleranceSeconds,
    });
    if (!signature.ok) {
      // One answer for every signature or timestamp failure: which check failed is for the log.
      request.log.warn({ reason: signature.reason }, 'webhook refused: not authenticated');
      throw refusedAtTheDoor('invalid-signature');
    }
    let body: unknown;
    try {
      body = JSON.parse(rawBody.toString('utf8'));
    } catch (error) {
      throw new HttpProblem(
        problem('malformed-json', 400, 'Malformed JSON', `the body is not valid JSON: ${(error as Error).message}`, {
          errors: [{ pointer: '', message: 'not valid JSON' }],
        }),
      );
    }
    const parsed = parseApproval(body);
    if (!parsed.ok) throw new KnownFailure(invalidInput(parsed.errors));
    // `Prefer: wait=<seconds>`: answer with the order number if it is written by then, capped so
    // that the answer stays inside WEBHOOK_MAX_WAIT_MS (docs/architecture.md, decision 19).
    const requested = requestedWaitSeconds(request.headers.prefer);
    const wait = requested === undefined ? undefined : Math.min(requested, config.http.maxWaitSeconds);
    const submission = await inRequestSpan(request, () =>
      submitApproval({ ...submissionDepsFrom(config, deps.prisma, deps.temporal), metrics }, parsed.value, 'webhook', {
        workerInProcess: config.http.hostsWorker,
        startGuard: deps.startGuard,
        intake,
        deadline,
        ...(wait === undefined ? {} : { waitUntil: deadline.arrivedAt + wait * 1000 }),
      }),
    );
    request.log.info(
      { idempotencyKey: submission.idempotencyKey, workflowId: submission.workflowId, duplicate: submission.duplicate },
      submission.duplicate ? 'redelivery answered from the existing workflow' : 'order workflow started',
    );
    if (wait !== undefined) reply.header('preference-applied', `wait=${wait}`);
    // 201 says the order exists: the first delivery, answered once its order was written.
    const code = submission.duplicate ? 200 : submission.orderNo ? 201 : 202;
    return reply.code(code).send(submission);
  });

  // A status for whoever asks, or with STATUS_TOKEN for its holders only. Either way the last error
  // is the classification table's code and sentence: the raw text stays with the operator.
  const statusToken = config.statusToken;
  app.get<{ Params: { key: string } }>('/orders/:key', async (request, reply) => {
    if (statusToken !== undefined) {
      // Before the key is even parsed: one answer whatever was wrong, the log says what.
      const refusal = bearerTokenRefusal(request.headers.authorization, statusToken, 'STATUS_TOKEN');
      if (refusal) {
        request.log.warn({ reason: refusal }, 'GET /orders refused: the request could not be authenticated');
        throw refusedAtTheDoor('invalid-token', { 'www-authenticate': 'Bearer realm="orders"' });
      }
    }
    const key = request.params.key;
    if (!parseIdempotencyKey(key)) throw new KnownFailure(invalidKey('/key'));
    const view = await readOrderStatus(deps, key);
    if (!view) throw new KnownFailure(orderNotFound(key));
    return reply.send(publicStatusView(view));
  });

  // The OA connectors' callbacks: approval events whose order is read from the approval form.
  registerOaRoutes(app, {
    config,
    prisma: deps.prisma,
    temporal: deps.temporal,
    metrics,
    intake,
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

  app.get('/livez', (_request, reply) => reply.send({ status: 'ok' }));

  // The contract of every route above, built from the schemas the handlers use.
  const contract = openApiDocument();
  app.get(OPENAPI_PATH, (_request, reply) => reply.send(contract));

  // Both name the part that is down, never its own error text (services/health/readiness.ts), and
  // share one check a second however many probes ask (docs/architecture.md, decision 42).
  const dependencies = sharedCheck(async () => {
    const [database, temporal] = await Promise.all([
      databaseMigrated(deps.prisma, app.log),
      temporalAnswers(deps.temporal, app.log),
    ]);
    return { database, temporal };
  });
  // A held connection that is down changes the body, not the status: the callbacks still work.
  app.get('/healthz', async (_request, reply) => {
    const answer = readiness(await dependencies());
    const connections = deps.eventConnections?.states() ?? {};
    const held = Object.keys(connections).length > 0;
    return reply.code(answer.statusCode).send(held ? { ...answer.body, connections } : answer.body);
  });
  // What a platform's readiness probe asks: the dependencies, and the worker this process hosts.
  // While draining the hook above answers it 503, as it answers /healthz.
  app.get('/readyz', async (_request, reply) => {
    const worker = deps.hostedWorker;
    const answer = readiness({
      ...(await dependencies()),
      ...(worker ? { worker: workerPolling(worker) } : {}),
    });
    return reply.code(answer.statusCode).send(answer.body);
  });

  return app;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function sendProblem(reply: FastifyReply, body: ReturnType<typeof problem>) {
  refusalTypes.set(reply.request, body.type);
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

/** The webhook's Content-Type as sent, set aside before fastify looks at it. */
const declaredContentTypes = new WeakMap<FastifyRequest, string | undefined>();

/**
 * Without a Content-Type fastify reads the body with the catch-all parser, under the size limit;
 * the route then refuses the media type itself, so a body too large is a 413 whatever its header.
 */
function setContentTypeAside(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
  declaredContentTypes.set(request, header(request, 'content-type'));
  delete request.headers['content-type'];
  done();
}
