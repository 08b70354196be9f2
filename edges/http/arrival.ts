// When each request arrived, so a delivery's deadline counts the time it waited in this process
// (queued behind a burst, read, authenticated, parsed) and not only the calls after it
// (docs/architecture.md, decision 34).
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DeliveryDeadline } from '../../submission/start-path-types.js';

const arrivals = new WeakMap<FastifyRequest, number>();

/**
 * Notes every request's arrival: the first hook of the app, before any other work on it. Node reads
 * a request only when its event loop comes round to the socket, so the bytes may have waited in the
 * kernel for as long as a turn of the loop takes: the arrival is taken that much earlier, by the
 * longest turn of the last second or two (`loopLag`).
 */
export function registerArrivals(app: FastifyInstance): void {
  const lag = loopLag();
  app.addHook('onClose', (_app, done) => {
    lag.stop();
    done();
  });
  app.addHook('onRequest', (request, _reply, done) => {
    arrivals.set(request, Date.now() - lag.recentMaxMs());
    done();
  });
}

/** How often the loop's lateness is sampled, and over how long its longest turn is remembered. */
const LAG_SAMPLE_MS = 50;
const LAG_WINDOW_MS = 1_000;

/**
 * How long a request read now may have waited unread: the longest lateness of a timer that fires
 * every 50 ms, over the current and the previous second — or, when the loop is in a long turn right
 * now (the timer could not fire yet), how long that turn has lasted: a burst's first requests are
 * all read in one turn, the last of them long after it began. The timer keeps no process alive.
 */
export function loopLag(): { recentMaxMs: () => number; stop: () => void } {
  let lastFired = performance.now();
  let windowStart = lastFired;
  let current = 0;
  let previous = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    current = Math.max(current, now - lastFired - LAG_SAMPLE_MS);
    lastFired = now;
    if (now - windowStart >= LAG_WINDOW_MS) {
      previous = current;
      current = 0;
      windowStart = now;
    }
  }, LAG_SAMPLE_MS);
  timer.unref();
  return {
    recentMaxMs: () => {
      const thisTurn = performance.now() - lastFired - LAG_SAMPLE_MS;
      return Math.max(0, Math.round(Math.max(current, previous, thisTurn)));
    },
    stop: () => clearInterval(timer),
  };
}

/** Epoch milliseconds at which `request` arrived. */
export function arrivalOf(request: FastifyRequest): number {
  return arrivals.get(request) ?? Date.now();
}

/**
 * What the webhook leaves for the way to and from the sender: a fifth of its deadline, at least
 * half a second. Before a request is read its connection may wait in the listening sockets' queue,
 * which no clock here sees (edges/http/accept-sockets.ts keeps that short); the answer itself
 * leaves in milliseconds. The rest is the start path's (claim and start).
 */
export function webhookAnswerBudgetMs(startTimeoutMs: number): number {
  return startTimeoutMs - Math.max(500, Math.round(startTimeoutMs / 5));
}

/**
 * The webhook's deadline: claimed and started within WEBHOOK_START_TIMEOUT_MS of its arrival, less
 * the answer's margin, so the sender whose timeout is that setting hears the answer in time.
 */
export function webhookDeadline(request: FastifyRequest, startTimeoutMs: number): DeliveryDeadline {
  const arrivedAt = arrivalOf(request);
  const answerBy = arrivedAt + webhookAnswerBudgetMs(startTimeoutMs);
  return { arrivedAt, answerBy };
}
