// The readiness checks behind both processes' probes (the API's /healthz and /readyz, the worker's
// /readyz). Each names the state of one part in a word a stranger may read, never the driver's or
// the SDK's own message: that can carry hosts, users and internals, and probes are answered to
// whoever asks. The precise reason goes to the log at warn.
import type { Client } from '@temporalio/client';
import type { State } from '@temporalio/worker';
import { pendingMigrations } from '../db/migrate.js';
import type { PrismaClient } from '../db/prisma-client.js';

/** Where a check writes why a part is not ready: pino's logger and fastify's both fit. */
export interface ProbeLog {
  warn(details: object, message: string): void;
}

/** Each dependency gets this long to answer: a probe that waits longer is itself timed out. */
const DEPENDENCY_DEADLINE_MS = 2_000;

/** `ok` when PostgreSQL answers `SELECT 1` within the deadline, else `unreachable`. */
export async function databaseAnswers(prisma: PrismaClient, log: ProbeLog): Promise<string> {
  try {
    await withinDeadline(prisma.$queryRawUnsafe('SELECT 1'), 'the database');
    return 'ok';
  } catch (error) {
    log.warn({ err: error }, 'health check: database unreachable');
    return 'unreachable';
  }
}

/** `databaseAnswers`, then every migration applied (else `migrations pending: <names>`). */
export async function databaseMigrated(prisma: PrismaClient, log: ProbeLog): Promise<string> {
  // Reach the database first: the migration check reads an unreadable table as "all pending".
  const reached = await databaseAnswers(prisma, log);
  if (reached !== 'ok') return reached;
  try {
    const pending = await withinDeadline(
      pendingMigrations((sql) => prisma.$queryRawUnsafe(sql)),
      'the migration table',
    );
    return pending.length === 0 ? 'ok' : `migrations pending: ${pending.join(', ')}`;
  } catch (error) {
    log.warn({ err: error }, 'health check: migrations could not be read');
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
