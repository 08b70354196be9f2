// A server span per HTTP request when tracing is on: the first span of an approval's trace, or a
// child of the caller's when its request carries `traceparent`. Health probes are left out (they
// would bury the approvals). With tracing off no hook is added at all. Named and tagged after the
// HTTP conventions (services/telemetry/span-conventions.ts): `POST /webhooks/oa/approvals` for a
// route, the method alone for a request no route took — never its URL, which is the caller's, query
// and all.
import type { Span } from '@opentelemetry/api';
import { SpanStatusCode } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { httpServerAttributes, httpServerErrorType, httpSpanName } from '../../services/telemetry/span-conventions.js';
import { startServerSpan, tracingOn, withinSpan } from '../../services/telemetry/tracing.js';

const UNTRACED_ROUTES = new Set(['/livez', '/healthz', '/readyz']);
const requestSpans = new WeakMap<FastifyRequest, Span>();

export function registerRequestSpans(app: FastifyInstance): void {
  if (!tracingOn()) return;
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url;
    if (route !== undefined && UNTRACED_ROUTES.has(route)) return done();
    const span = startServerSpan(
      httpSpanName(request.method, route),
      request.headers,
      httpServerAttributes({ method: request.method, target: request.url, scheme: request.protocol, route }),
    );
    if (!span) return done();
    requestSpans.set(request, span);
    // The raw response's close: also for the MCP route, whose transport answers on its own.
    reply.raw.once('close', () => {
      const status = reply.raw.statusCode;
      span.setAttribute('http.response.status_code', status);
      const errorType = httpServerErrorType(status);
      if (errorType !== undefined) {
        span.setAttribute('error.type', errorType);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    });
    done();
  });
}

/**
 * Runs a route's work inside its request's span. Fastify reads the body between the hook and the
 * handler, which loses the async context: the handler hands it back explicitly.
 */
export function inRequestSpan<T>(request: FastifyRequest, fn: () => T): T {
  return withinSpan(requestSpans.get(request), fn);
}
