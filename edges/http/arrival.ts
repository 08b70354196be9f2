// When each request arrived, so a delivery's deadline counts the time it waited in this process
// (queued behind a burst, read, authenticated, parsed) and not only the calls after it
// (docs/architecture.md, decision 33).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DeliveryDeadline } from '../../services/submission/submit-approval.js';

const arrivals = new WeakMap<FastifyRequest, number>();

/** Notes every request's arrival: the first hook of the app, before any other work on it. */
export function registerArrivals(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    arrivals.set(request, Date.now());
    done();
  });
}

/** Epoch milliseconds at which `request` arrived. */
export function arrivalOf(request: FastifyRequest): number {
  return arrivals.get(request) ?? Date.now();
}

/**
 * What the webhook leaves for writing its answer and for the way back to the sender: a tenth of
 * its deadline, at least 200 ms. The rest is the start path's (claim and start).
 */
export function webhookAnswerBudgetMs(startTimeoutMs: number): number {
  return startTimeoutMs - Math.max(200, Math.round(startTimeoutMs / 10));
}

/**
 * The webhook's deadline: claimed and started within WEBHOOK_START_TIMEOUT_MS of its arrival, less
 * the answer's margin, so the sender whose timeout is that setting hears the answer in time.
 */
export function webhookDeadline(request: FastifyRequest, startTimeoutMs: number): DeliveryDeadline {
  const arrivedAt = arrivalOf(request);
  const answerBy = arrivedAt + webhookAnswerBudgetMs(startTimeoutMs);
  return { arrivedAt, claimBy: answerBy, startBy: answerBy };
}
