// A bounded wait for the write's outcome, for entry points that answer with the outcome instead of a
// receipt (the MCP tool). It polls the key's idempotency record: the write commits SUBMITTED in the
// same transaction as the order, and compensation sets COMPENSATING when it has reconciled, so one
// indexed read per poll sees every way out of RECEIVED, without a Temporal round trip.
import { findRecord } from '../services/db/idempotency-records.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { OrderStatus } from '../domain/order-status.js';

const POLL_INTERVAL_MS = 200;

export interface WaitSnapshot {
  status: OrderStatus;
  attempts: number;
  lastError: string | null;
  elapsedMs: number;
}

export interface WaitOptions {
  /** Epoch milliseconds: the wait ends here whatever the status. */
  deadline: number;
  /** The caller gave up: stop waiting (the submission itself goes on regardless). */
  signal?: AbortSignal;
  /** Called after every poll while the write is still in progress. */
  onPoll?: (snapshot: WaitSnapshot) => Promise<void> | void;
  pollIntervalMs?: number;
}

/** True once the write has an outcome: committed, or failed for good and handed to compensation. */
export function isSettled(status: OrderStatus): boolean {
  return status !== 'RECEIVED';
}

/**
 * Waits until the key's status leaves RECEIVED, the deadline passes or the caller gives up, and
 * answers whether it settled. A missing record means it expired: the order row answers instead.
 */
export async function waitForOutcome(
  prisma: PrismaClient,
  idempotencyKey: string,
  options: WaitOptions,
): Promise<boolean> {
  const startedAt = Date.now();
  for (;;) {
    const record = await findRecord(prisma, idempotencyKey);
    if (!record || isSettled(record.status)) return true;
    const remaining = options.deadline - Date.now();
    if (remaining <= 0 || options.signal?.aborted) return false;
    await options.onPoll?.({
      status: record.status,
      attempts: record.attempts,
      lastError: record.lastError,
      elapsedMs: Date.now() - startedAt,
    });
    await sleep(Math.min(options.pollIntervalMs ?? POLL_INTERVAL_MS, remaining), options.signal);
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
