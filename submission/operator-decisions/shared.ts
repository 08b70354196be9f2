// What every family of operator decisions shares: the dependencies a decision needs, the refusal
// when no decision is pending, how long a surface waits for a decision to be carried out, and the
// short wait for a run whose decision window just closed. A decision is a workflow's `decide`
// update — or, once the workflow that waited for it has closed, a small workflow of its own — never
// a write of its own, so a workflow stays the only place that carries it out.
import type { Client } from '@temporalio/client';
import type { WritePolicy } from '../settings.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { waitForRunToClose } from '../../services/temporal/order-workflows.js';

/** What the operator commands that start or decide need. */
export interface OperatorDeps {
  prisma: PrismaClient;
  temporal: Client;
  taskQueue: string;
  writePolicy: WritePolicy;
}

/** No decision can be taken for the key now: no compensation runs, or it is not waiting for one. */
export class NoPendingDecisionError extends Error {
  constructor(
    readonly idempotencyKey: string,
    readonly reason: string,
  ) {
    super(`no decision is pending for ${idempotencyKey}: ${reason}`);
    this.name = 'NoPendingDecisionError';
  }
}

/** How long an operator surface waits for a decision to be carried out. */
const DECISION_CONFIRMATION_MS = 60_000;

/**
 * Runs a decision's call (an update, a decision workflow's result) within the time a surface waits
 * for it. The call returns once a worker carried the decision out; with no worker polling it would
 * wait for ever.
 */
export function withinConfirmation<T>(temporal: Client, call: () => Promise<T>): Promise<T> {
  return temporal.withDeadline(Date.now() + DECISION_CONFIRMATION_MS, call);
}

/** A decision that may have been accepted but whose outcome did not come back in time. */
export function notConfirmed(key: string, cause: unknown): Error {
  return new Error(
    `the decision for ${key} was not confirmed within ${DECISION_CONFIRMATION_MS / 1000} s (is a worker running?); ` +
      "if it was accepted it will still be carried out — check the key's status before deciding again",
    { cause },
  );
}

/** How long a run whose decision window just closed may take to end. */
const WINDOW_CLOSING_MS = 10_000;

/** Whether the run closes within WINDOW_CLOSING_MS: false when it still runs (or cannot be read). */
export async function closesSoon(deps: OperatorDeps, workflowId: string, runId: string): Promise<boolean> {
  try {
    await deps.temporal.withDeadline(Date.now() + WINDOW_CLOSING_MS, () =>
      waitForRunToClose(deps.temporal, workflowId, runId),
    );
    return true;
  } catch {
    return false;
  }
}
