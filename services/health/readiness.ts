// The readiness checks behind both processes' probes (the API's /healthz and /readyz, the worker's
// /readyz). Each names the state of one part in a word a stranger may read, never the driver's or
// the SDK's own message: that can carry hosts, users and internals, and probes are answered to
// whoever asks. The precise reason goes to the log at warn. The probes ask them through
// `sharedCheck`: they are unauthenticated, and each check takes a pooled connection the deliveries
// need (docs/architecture.md, decision 42).
import type { Client } from '@temporalio/client';
import type { State } from '@temporalio/worker';
import { pendingMigrations } from '../db/migrate.js';
import { type PrismaClient, poolAnsweredSince, poolCounts } from '../db/prisma-client.js';
import { storeOf } from '../db/stores/store.js';

/** Where a check writes why a part is not ready: pino's logger and fastify's both fit. */
export interface ProbeLog {
  warn(details: object, message: string): void;
}

/** Each dependency gets this long to answer: a probe that waits longer is itself timed out. */
const DEPENDENCY_DEADLINE_MS = 2_000;

/**
 * `ok` when the database answers `SELECT 1` within the deadline, else `unreachable`. A check that
 * spent the deadline queued for a pooled connection while the deliveries' connections came back
 * answered found the pool busy, not the database down: `ok` as well, and the log says so. A burst
 * must not take an instance out of its Service while it serves the burst.
 */
export async function databaseAnswers(prisma: PrismaClient, log: ProbeLog): Promise<string> {
  return (await reachDatabase(prisma, log)) === 'unreachable' ? 'unreachable' : 'ok';
}

/**
 * The API's database check: `databaseAnswers`, then every migration applied, else `migrations
 * pending`: which ones goes to the log only, since the names tell a stranger what the release is and
 * what it is about to change. While the pool is busy the migrations are as last read: they change
 * with a release, not with load; before the first reading, applied, as a process does not start
 * behind its schema (services/db/database-at-start.ts).
 */
export function databaseMigratedCheck(prisma: PrismaClient, log: ProbeLog): () => Promise<string> {
  let lastReading: 'ok' | 'migrations pending' | undefined;
  return async () => {
    // Reach the database first: the migration check reads an unreadable table as "all pending".
    const reached = await reachDatabase(prisma, log);
    if (reached === 'unreachable') return reached;
    if (reached === 'busy') return lastReading ?? 'ok';
    const began = performance.now();
    try {
      const pending = await withinDeadline(
        pendingMigrations((sql) => prisma.$queryRawUnsafe(sql), storeOf(prisma)),
        'the migration table',
      );
      if (pending.length > 0) log.warn({ pending }, 'health check: migrations pending');
      lastReading = pending.length === 0 ? 'ok' : 'migrations pending';
      return lastReading;
    } catch (error) {
      if (poolAnsweredSince(prisma, began)) return lastReading ?? 'ok';
      log.warn({ err: error }, 'health check: migrations could not be read');
      return 'unreachable';
    }
  };
}

/**
 * Whether `SELECT 1` was answered, or waited out the deadline behind connections the database
 * answered meanwhile (busy), or neither.
 */
async function reachDatabase(prisma: PrismaClient, log: ProbeLog): Promise<'answered' | 'busy' | 'unreachable'> {
  const began = performance.now();
  try {
    await withinDeadline(prisma.$queryRawUnsafe('SELECT 1'), 'the database');
    return 'answered';
  } catch (error) {
    if (poolAnsweredSince(prisma, began)) {
      log.warn(
        { err: error, pool: poolCounts(prisma) },
        'health check: every pooled connection busy; the database answers them',
      );
      return 'busy';
    }
    log.warn({ err: error }, 'health check: database unreachable');
    return 'unreachable';
  }
}

/** `ok` when the Temporal frontend answers within the deadline, else `unreachable`. */
export async function temporalAnswers(temporal: Client, log: ProbeLog): Promise<string> {
  try {
    await temporal.withDeadline(Date.now() + DEPENDENCY_DEADLINE_MS, () => temporal.workflowService.getSystemInfo({}));
    return 'ok';
  } catch (error) {
    log.warn({ err: error }, 'health check: Temporal unreachable');
    return 'unreachable';
  }
}

/** What a readiness check reads of a Temporal worker. */
export interface PolledWorker {
  getState(): State;
}

/**
 * `ok` while the worker polls its task queue (the SDK's `RUNNING`); otherwise its state in lower
 * case: `initialized` before it runs, `stopping` / `draining` from the moment shutdown begins,
 * `stopped`, `failed`.
 */
export function workerPolling(worker: PolledWorker): string {
  const state = worker.getState();
  return state === 'RUNNING' ? 'ok' : state.toLowerCase();
}

export interface Readiness {
  statusCode: 200 | 503;
  body: { status: 'ok' | 'unavailable' } & Record<string, string>;
}

/** 200 when every part is `ok`, else 503; the body names each part's state. */
export function readiness(parts: Record<string, string>): Readiness {
  const ready = Object.values(parts).every((state) => state === 'ok');
  return { statusCode: ready ? 200 : 503, body: { status: ready ? 'ok' : 'unavailable', ...parts } };
}

/** How long a check's result answers every probe after it: a probe period is 5–10 s, a burst of probes comes within one. */
export const CHECK_REUSED_FOR_MS = 1_000;

/**
 * `check`, run for every caller at once: while one run is in flight every caller shares it, and its
 * result answers every call for `reusedForMs` after it ended. Any number of probes then cost one
 * `SELECT 1`, one migration read and one Temporal call a second, instead of one pooled connection
 * each, taken from the deliveries' claims. A change of state shows within that second.
 */
export function sharedCheck<T>(check: () => Promise<T>, reusedForMs = CHECK_REUSED_FOR_MS): () => Promise<T> {
  let running: Promise<T> | undefined;
  let last: { result: T; endedAt: number } | undefined;
  return () => {
    if (last && performance.now() - last.endedAt < reusedForMs) return Promise.resolve(last.result);
    running ??= check().then(
      (result) => {
        last = { result, endedAt: performance.now() };
        running = undefined;
        return result;
      },
      (error: unknown) => {
        running = undefined;
        throw error;
      },
    );
    return running;
  };
}

async function withinDeadline<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what} did not answer within ${DEPENDENCY_DEADLINE_MS} ms`)),
      DEPENDENCY_DEADLINE_MS,
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
