// Compensation decisions: an operator's `resubmit` or `abandon` for a write that failed for good,
// sent to the compensation waiting for it, and running compensation again for a key whose
// compensation ended so that an operator can decide after all.
import { randomUUID } from 'node:crypto';
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { compensationWorkflowIdFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import type { CompensationDecision } from '../../domain/order-status.js';
import { latestCompensatedRunId, OPERATOR_RECOMPENSATION } from '../../services/db/compensation-records.js';
import { findRecord } from '../../services/db/idempotency-records.js';
import { findOrderByKey } from '../../services/db/order-repository.js';
import { isTemporalUnreachable } from '../../services/temporal/connection.js';
import { describeIfExists, startCompensationWorkflow } from '../../services/temporal/order-workflows.js';
import { type CompensationWorkflow, decideUpdate, type DecisionResult } from '../../workflows/definitions.js';
import { workflowInputFromRecord } from '../submit-approval.js';
import { closesSoon, NoPendingDecisionError, notConfirmed, type OperatorDeps, withinConfirmation } from './shared.js';

export interface CompensationDecisionRequest {
  idempotencyKey: string;
  decision: CompensationDecision;
  /** Who decided: recorded with the decision. */
  decidedBy: string;
}

/**
 * Sends the decision to `compensation-<key>` and answers once it was carried out: `resubmit`
 * starts the order again with the same key (it can never double), `abandon` ends it as
 * COMPENSATED. The workflow's validator refuses a second decision or one after the window closed.
 */
export async function decideCompensation(
  temporal: Client,
  request: CompensationDecisionRequest,
): Promise<DecisionResult> {
  const key = request.idempotencyKey;
  const handle = temporal.workflow.getHandle<CompensationWorkflow>(compensationWorkflowIdFor(key));
  try {
    const description = await handle.describe();
    if (description.status.name !== 'RUNNING') {
      throw new NoPendingDecisionError(key, `its compensation has ended (${description.status.name.toLowerCase()})`);
    }
    // The decision is durable once accepted, so a timeout here says "not confirmed".
    return await withinConfirmation(temporal, () =>
      handle.executeUpdate(decideUpdate, {
        args: [{ decision: request.decision, decidedBy: request.decidedBy }],
      }),
    );
  } catch (error) {
    if (isTemporalUnreachable(error) && !(error instanceof NoPendingDecisionError)) throw notConfirmed(key, error);
    if (error instanceof WorkflowNotFoundError) {
      throw new NoPendingDecisionError(key, 'no compensation is running for this key');
    }
    if (error instanceof WorkflowUpdateFailedError) {
      // The workflow's validator refused: its reason is the operator's answer.
      throw new NoPendingDecisionError(key, error.cause?.message ?? error.message);
    }
    throw error;
  }
}

/** The key's state does not allow compensation again (it was written, or it is unknown). */
export class NothingToCompensateError extends Error {
  constructor(
    readonly idempotencyKey: string,
    readonly reason: string,
  ) {
    super(`nothing to compensate for ${idempotencyKey}: ${reason}`);
    this.name = 'NothingToCompensateError';
  }
}

/** Statuses after which compensation may be run again: it ended, or it is still waiting. */
const RECOMPENSABLE = ['FAILED', 'COMPENSATED', 'COMPENSATING'] as const;

export interface Recompensation {
  idempotencyKey: string;
  workflowId: string;
  /** False when a compensation of the key was already running: nothing new was started. */
  started: boolean;
  previousStatus: string;
}

/**
 * Runs compensation again for a key whose compensation ended — the decision window ran out, or
 * compensation itself failed (FAILED) — so an operator can decide after all. Idempotent: a
 * compensation already running is left alone; an abandoned key stays abandoned (reconciliation
 * finds the recorded decision for that failure and changes nothing); a key whose order landed is
 * continued, never written twice. Keys that were written and are fine are refused.
 */
export async function recompensate(
  deps: OperatorDeps,
  request: { idempotencyKey: string; decidedBy: string },
): Promise<Recompensation> {
  const key = request.idempotencyKey;
  const record = await findRecord(deps.prisma, key);
  if (!record) throw new NothingToCompensateError(key, 'the key is unknown (or its record expired)');
  if (!(RECOMPENSABLE as readonly string[]).includes(record.status)) {
    throw new NothingToCompensateError(
      key,
      `its status is ${record.status}; only ${RECOMPENSABLE.join(', ')} can be compensated` +
        (record.status === 'DELIVERY_FAILED' ? ' (a failed delivery: use redeliver or mark-handled)' : ''),
    );
  }
  const workflowId = compensationWorkflowIdFor(key);
  const compensation = await describeIfExists(deps.temporal, workflowId);
  if (compensation?.status.name === 'RUNNING') {
    const alreadyRunning = { idempotencyKey: key, workflowId, started: false, previousStatus: record.status };
    // COMPENSATING: it waits for a decision. FAILED or COMPENSATED: the run has recorded its end
    // and is closing — or has only just begun and not yet said COMPENSATING. Give it the moment
    // a run takes to close; one still running after that is the one in compensation.
    if (record.status === 'COMPENSATING' || !(await closesSoon(deps, workflowId, compensation.runId))) {
      return alreadyRunning;
    }
  }

  // Compensation is recorded per failed run of the order workflow: the latest run is the one.
  // When Temporal's history of it has expired, the database still knows the last failed run —
  // so a decision recorded for it (an abandon) is found again and kept.
  // A key whose order landed is different: its follow-up runs failed, and this is the operator's
  // fresh start — a run id of its own records it, so the cap on automatic continuations counts
  // from here, not from the runs that already used it up.
  const landed = (await findOrderByKey(deps.prisma, key))?.fingerprint === record.fingerprint;
  const orderRunId = landed
    ? randomUUID()
    : ((await describeIfExists(deps.temporal, orderWorkflowIdFor(key)))?.runId ??
      (await latestCompensatedRunId(deps.prisma, key)) ??
      randomUUID());
  await startCompensationWorkflow(deps.temporal, deps.taskQueue, {
    order: workflowInputFromRecord(record, deps.writePolicy),
    orderRunId,
    // The reconciliation's continuation cap counts from the latest run of this reason type.
    reasonType: OPERATOR_RECOMPENSATION,
    reason: `compensation run again by ${request.decidedBy}; before: ${record.status}${record.lastError ? ` (${record.lastError})` : ''}`,
    attempts: record.attempts,
  });
  return { idempotencyKey: key, workflowId, started: true, previousStatus: record.status };
}
