// What an operator sees and decides about writes that failed for good: the orders waiting in
// compensation, the decision itself, and compensation started again for a key whose compensation
// already ended. The one path for every operator surface (the MCP operator tools and the operator
// CLI): a decision is the compensation workflow's `decide` update, never a write of its own, so
// the workflow stays the only place that carries it out.
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { WritePolicy } from '../config/env.js';
import { compensationWorkflowIdFor, orderWorkflowIdFor } from '../domain/idempotency-key.js';
import type { Operation } from '../domain/idempotency-key.js';
import type { CompensationDecision } from '../domain/order-status.js';
import { findRecord, findRecordsByStatus } from '../db/idempotency-records.js';
import type { PrismaClient } from '../db/prisma-client.js';
import { isTemporalUnreachable } from '../temporal/connection.js';
import { describeIfExists, startCompensationWorkflow } from '../temporal/order-workflows.js';
import type { compensationWorkflow } from '../workflows/compensation-workflow.js';
import { workflowInputFromRecord } from './submit-approval.js';
import { decideUpdate, type DecisionResult } from '../workflows/definitions.js';

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

export interface AwaitingDecision {
  idempotencyKey: string;
  /** The compensation workflow that takes the decision. */
  workflowId: string;
  approvalNo: string;
  operation: Operation;
  customerId: string;
  currency: string;
  totalAmount: string;
  /** Why the write failed for good (`<type>: <message>`). */
  reason: string;
  attempts: number;
  /** When compensation reconciled the key and began to wait (ISO 8601). */
  waitingSince: string;
}

/**
 * The keys whose compensation waits for a decision, the longest waiting first. The idempotency
 * record answers: reconciliation sets COMPENSATING in the same transaction that records why, and
 * every way out of the wait (a decision, the window running out) moves it on.
 */
export async function listOrdersAwaitingDecision(prisma: PrismaClient, limit: number): Promise<AwaitingDecision[]> {
  const records = await findRecordsByStatus(prisma, 'COMPENSATING', limit);
  return records.map((record) => ({
    idempotencyKey: record.idempotencyKey,
    workflowId: compensationWorkflowIdFor(record.idempotencyKey),
    approvalNo: record.approvalNo,
    operation: record.operation,
    customerId: record.request.order.customerId,
    currency: record.request.order.currency,
    totalAmount: record.request.totalAmount,
    reason: record.lastError ?? 'unknown',
    attempts: record.attempts,
    waitingSince: record.updatedAt.toISOString(),
  }));
}

/** How long an operator surface waits for a decision to be carried out. */
const DECISION_CONFIRMATION_MS = 60_000;

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
  const handle = temporal.workflow.getHandle<typeof compensationWorkflow>(compensationWorkflowIdFor(key));
  try {
    const description = await handle.describe();
    if (description.status.name !== 'RUNNING') {
      throw new NoPendingDecisionError(key, `its compensation has ended (${description.status.name.toLowerCase()})`);
    }
    // The update returns once a worker carried the decision out; with no worker polling it would
    // wait for ever. The decision is durable once accepted, so a timeout here says "not confirmed".
    return await temporal.withDeadline(Date.now() + DECISION_CONFIRMATION_MS, () =>
      handle.executeUpdate(decideUpdate, {
        args: [{ decision: request.decision, decidedBy: request.decidedBy }],
      }),
    );
  } catch (error) {
    if (isTemporalUnreachable(error) && !(error instanceof NoPendingDecisionError)) {
      throw new Error(
        `the decision for ${key} was not confirmed within ${DECISION_CONFIRMATION_MS / 1000} s (is a worker running?); ` +
          "if it was accepted it will still be carried out — check the key's status before deciding again",
        { cause: error },
      );
    }
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
  deps: { prisma: PrismaClient; temporal: Client; taskQueue: string; writePolicy: WritePolicy },
  request: { idempotencyKey: string; decidedBy: string },
): Promise<Recompensation> {
  const key = request.idempotencyKey;
  const record = await findRecord(deps.prisma, key);
  if (!record) throw new NothingToCompensateError(key, 'the key is unknown (or its record expired)');
  if (!(RECOMPENSABLE as readonly string[]).includes(record.status)) {
    throw new NothingToCompensateError(
      key,
      `its status is ${record.status}; only ${RECOMPENSABLE.join(', ')} can be compensated`,
    );
  }
  const workflowId = compensationWorkflowIdFor(key);
  const running = (await describeIfExists(deps.temporal, workflowId))?.status.name === 'RUNNING';
  if (running) return { idempotencyKey: key, workflowId, started: false, previousStatus: record.status };

  // Compensation is recorded per failed run of the order workflow: the latest run is the one.
  // When Temporal's history of it has expired, the database still knows the last failed run —
  // so a decision recorded for it (an abandon) is found again and kept.
  const orderRunId =
    (await describeIfExists(deps.temporal, orderWorkflowIdFor(key)))?.runId ??
    (await deps.prisma.compensationRecord.findFirst({ where: { idempotentKey: key }, orderBy: { id: 'desc' } }))
      ?.orderRunId ??
    `operator-${Date.now()}`;
  await startCompensationWorkflow(deps.temporal, deps.taskQueue, {
    order: workflowInputFromRecord(record, deps.writePolicy),
    orderRunId,
    reasonType: 'OperatorRecompensation',
    reason: `compensation run again by ${request.decidedBy}; before: ${record.status}${record.lastError ? ` (${record.lastError})` : ''}`,
    attempts: record.attempts,
  });
  return { idempotencyKey: key, workflowId, started: true, previousStatus: record.status };
}
