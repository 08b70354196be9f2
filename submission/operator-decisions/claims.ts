// Claim starts: the order workflow of a claim whose start nobody confirmed, built from its record
// and started (or attached to) — by an operator's `resubmit`, or by the API's sweep of unstarted
// claims. A `resubmit` for any other key is a compensation decision.
import type { OrderStatus } from '../../domain/order-status.js';
import { findRecord, type IdempotencyRecord, markWorkflowStarted } from '../../services/db/idempotency-records.js';
import { type StartedWorkflow, startOrderWorkflow } from '../../services/temporal/order-workflows.js';
import type { DecisionResult } from '../../workflows/definitions.js';
import { workflowInputFromRecord } from '../submit-approval.js';
import { decideCompensation } from './compensation.js';
import type { OperatorDeps } from './shared.js';

/** A claim whose start an operator confirmed: its order workflow now runs. */
export interface StartedClaim {
  idempotencyKey: string;
  workflowId: string;
  status: OrderStatus;
  outcome: 'STARTED';
}

/**
 * Starts `order-<key>` for a claim the edge accepted but whose start it never confirmed (the start
 * call ran out of time and the sender, answered 503, has not redelivered). The run is built from
 * the record — the same key and order; a run that did start after all and still runs is attached
 * to, never run twice. Returns undefined when the key is no such claim.
 */
export async function startUnconfirmedClaim(deps: OperatorDeps, key: string): Promise<StartedClaim | undefined> {
  const record = await findRecord(deps.prisma, key);
  if (!record || record.status !== 'RECEIVED' || record.workflowStartedAt) return undefined;
  // A run that closed without recording any status (terminated before its first step) is
  // replaced: no status means no decision to override, and the write is judged by the unique key.
  const started = await startClaimFromRecord(deps, record, 'ALLOW_DUPLICATE');
  return { idempotencyKey: key, workflowId: started.workflowId, status: record.status, outcome: 'STARTED' };
}

/**
 * Starts (or attaches to) `order-<key>` for a claim whose start nobody confirmed, built from its
 * record, and marks the key started — unless a closed run holds the id and `reusePolicy` leaves it
 * alone: then nothing is marked, and the claim stays listed by `awaiting`.
 */
export async function startClaimFromRecord(
  deps: OperatorDeps,
  record: IdempotencyRecord,
  reusePolicy: 'ALLOW_DUPLICATE' | 'REJECT_DUPLICATE',
): Promise<StartedWorkflow> {
  const started = await startOrderWorkflow(
    deps.temporal,
    deps.taskQueue,
    workflowInputFromRecord(record, deps.writePolicy),
    reusePolicy,
  );
  if (!started.closedRunExists) await markWorkflowStarted(deps.prisma, record.idempotencyKey);
  return started;
}

/**
 * An operator's `resubmit`: for a claim whose start was never confirmed, start it; otherwise the
 * decision goes to the compensation waiting for it.
 */
export async function resubmit(
  deps: OperatorDeps,
  request: { idempotencyKey: string; decidedBy: string },
): Promise<DecisionResult> {
  const started = await startUnconfirmedClaim(deps, request.idempotencyKey);
  if (started) return { idempotencyKey: started.idempotencyKey, status: started.status, outcome: started.outcome };
  return decideCompensation(deps.temporal, { ...request, decision: 'resubmit' });
}
