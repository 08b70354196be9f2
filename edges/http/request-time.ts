// How long a request may take to arrive. Every body is read whole before its signature or token is
// checked (the signature covers the raw bytes), so a caller that sends its headers and then its body
// slowly, or stops half way, holds a connection and up to 256 KiB of the API's memory without
// proving anything — and, with no clock on it, holds the stop too. Node's HTTP server times out
// every request at HTTP_REQUEST_TIMEOUT_MS; a door whose sender gives up sooner gives the body only
// the sender's own deadline, since a body that arrives after it is answered to nobody. A request
// that runs out of time is answered 408 where the socket can still take it, and its connection
// closed (docs/architecture.md, decision 44).
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Problem, problem, PROBLEM_CONTENT_TYPE } from './problem.js';

/**
 * How often Node's HTTP server checks its connections against the request timeout (its own
 * default, 30 s, would let a request outlive a 10 s timeout by three times).
 */
export const CONNECTION_CHECK_INTERVAL_MS = 1_000;

/** The fastify options that put Node's own clock on every request: headers and body within `requestTimeoutMs`. */
export function requestTimeOptions(requestTimeoutMs: number) {
  return {
    requestTimeout: requestTimeoutMs,
    http: {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: CONNECTION_CHECK_INTERVAL_MS,
    },
    clientErrorHandler: answerClientError,
  };
}

/**
 * The body time of each door whose sender gives up before HTTP_REQUEST_TIMEOUT_MS, by route URL;
 * the other routes have the request timeout alone. Counted from the request's headers.
 */
export type DoorBodyTimes = ReadonlyMap<string, number>;

/** Sockets whose request arrived whole and is being answered: a stop lets these finish. */
const answering = new WeakSet<Socket>();

/** True while `socket` carries a request that arrived whole and is not answered yet. */
export function isAnswering(socket: Socket): boolean {
  return answering.has(socket);
}

/**
 * Gives each request of a door in `bodyTimes` that long for its body, and notes which sockets carry
 * a request that arrived whole (`isAnswering`).
 */
export function registerBodyTimes(app: FastifyInstance, requestTimeoutMs: number, bodyTimes: DoorBodyTimes): void {
  const timers = new WeakMap<FastifyRequest, NodeJS.Timeout>();
  const stopTimer = (request: FastifyRequest) => {
    clearTimeout(timers.get(request));
    timers.delete(request);
  };
  app.addHook('onRequest', (request, reply, done) => {
    const bodyTimeMs = bodyTimes.get(request.routeOptions.url ?? '');
    if (bodyTimeMs !== undefined && bodyTimeMs < requestTimeoutMs && !request.raw.complete) {
      const timer = setTimeout(() => {
        timers.delete(request);
        if (!request.raw.complete && !reply.raw.headersSent) closeTimedOut(request.raw.socket);
      }, bodyTimeMs);
      // The server's own request timeout is there should the process be stopping.
      timer.unref();
      timers.set(request, timer);
      request.raw.once('close', () => stopTimer(request));
    }
    done();
  });
  // The body is read: from here the request is the route's, under the route's own deadlines.
  app.addHook('preValidation', (request, _reply, done) => {
    stopTimer(request);
    answering.add(request.raw.socket);
    done();
  });
  app.addHook('onResponse', (request, _reply, done) => {
    answering.delete(request.raw.socket);
    done();
  });
}

const REQUEST_TIMEOUT = problem(
  'request-timeout',
  408,
  'Request timeout',
  'the request did not arrive in time; nothing was started, send it again',
);

/** Answers 408 where nothing was answered on the socket yet, and closes it. */
export function closeTimedOut(socket: Socket): void {
  closeWith(socket, REQUEST_TIMEOUT);
}

/**
 * What fastify hands a connection's errors before a request reached a route: Node's request
 * timeout (408), headers too large (431), anything unparseable (400) — as problem+json, like
 * every other answer of the API, and the connection closed.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return closeWith(socket, REQUEST_TIMEOUT);
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return closeWith(
      socket,
      problem('bad-request', 431, 'Request header fields too large', 'the headers are too large'),
    );
  }
  closeWith(socket, problem('bad-request', 400, 'Bad request', 'the request is not HTTP the server can read'));
}

function closeWith(socket: Socket, body: Problem): void {
  if (socket.destroyed) return;
  // A response already under way on the socket (Node keeps it as `_httpMessage`) must not be
  // followed by another: the socket is only closed then.
  const current = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && !current?.headersSent) {
    const text = JSON.stringify(body);
    socket.write(
      `HTTP/1.1 ${body.status} ${body.title}\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `content-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}
