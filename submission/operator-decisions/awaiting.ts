// What an operator sees and decides about keys that wait for a person: writes that failed for good
// (compensation), deliveries the downstream refused, keys whose compensation ended, and claims
// whose workflow start was never confirmed. The one path for every operator surface (the MCP
// operator tools and the operator CLI): a decision is a workflow's `decide` update — or, once the
// workflow that waited for it has closed, a small workflow of its own — never a write of its own,
// so a workflow stays the only place that carries it out.
import { randomUUID } from 'node:crypto';
import { type Client, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { WritePolicy } from '../settings.js';
import { compensationWorkflowIdFor, orderWorkflowIdFor, parseIdempotencyKey } from '../../domain/idempotency-key.js';
import type { Operation } from '../../domain/idempotency-key.js';
import type { CompensationDecision, OrderStatus } from '../../domain/order-status.js';
import { latestCompensatedRunId, OPERATOR_RECOMPENSATION } from '../../services/db/compensation-records.js';
import {
  findRecord,
  type IdempotencyRecord,
  markWorkflowStarted,
  type StoredRequest,
} from '../../services/db/idempotency-records.js';
import { listOpenKeySourceConflicts } from '../../services/db/key-source-conflicts.js';
import { findOrderByKey } from '../../services/db/order-repository.js';
import { isOaVendor } from '../../domain/oa-approval.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { isTemporalUnreachable } from '../../services/temporal/connection.js';
import {
  describeIfExists,
  startCompensationWorkflow,
  type StartedWorkflow,
  startOrderWorkflow,
  waitForRunToClose,
} from '../../services/temporal/order-workflows.js';
import type { compensationWorkflow } from '../../workflows/compensation-workflow.js';
import type { deliveryWorkflow } from '../../workflows/delivery-workflow.js';
import type { orderWorkflow } from '../../workflows/order-workflow.js';
import {
  ApprovalNo,
  CustomerId,
  IdempotencyKey,
  OrderStatus as OrderStatusAttribute,
} from '../../workflows/search-attributes.js';
import { workflowInputFromRecord } from '../submit-approval.js';
import {
  decideUpdate,
  type DecisionResult,
  type DeliveryDecision,
  type DeliveryDecisionInput,
  deliveryWorkflowIdFor,
  isFormOrder,
} from '../../workflows/definitions.js';

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

/**
 * The statuses in which a key waits for a person (RECEIVED: only a claim whose start was never
 * confirmed), and KEY_SOURCE_CONFLICT: a delivery through another door than the one that holds the
 * key was refused (docs/architecture.md, decision 38) — not an order status, the key's own is unchanged.
 */
export type AwaitingStatus =
  | Extract<OrderStatus, 'COMPENSATING' | 'DELIVERY_FAILED' | 'FAILED' | 'RECEIVED'>
  | 'KEY_SOURCE_CONFLICT';

/** What an operator can do next, by the status a key waits in, the usual first. */
const NEXT_ACTIONS: Record<AwaitingStatus, string[]> = {
  COMPENSATING: ['resubmit', 'abandon'],
  DELIVERY_FAILED: ['redeliver', 'mark-handled'],
  // Compensation runs again first (it reconciles); then it waits for resubmit or abandon.
  FAILED: ['recompensate', 'resubmit', 'abandon'],
  // The sender was answered 503 and should redeliver; if it does not, an operator starts it.
  RECEIVED: ['sender-redelivery', 'resubmit'],
  // A person checks the claim against the refused door's approval (docs/operations.md), then clears it.
  KEY_SOURCE_CONFLICT: ['clear-conflict'],
};

/**
 * A claim younger than this may still be starting (the edge's start call runs within its own
 * deadline of seconds): it is not listed as waiting.
 */
export const UNCONFIRMED_AFTER_MS = 60_000;

export interface AwaitingDecision {
  idempotencyKey: string;
  /** The workflow that takes the decision (for FAILED: the compensation that `recompensate` starts). */
  workflowId: string;
  approvalNo: string;
  operation: Operation;
  customerId: string;
  currency: string;
  totalAmount: string;
  /** Why the key waits: the last error (`<type>: <message>`), or which door was refused and who holds the key. */
  reason: string;
  /** The write's attempts; for KEY_SOURCE_CONFLICT, the deliveries refused. */
  attempts: number;
  /** Since when the key waits: its last status change (ISO 8601). */
  waitingSince: string;
  status: AwaitingStatus;
  /** The commands that move it on, the usual first. */
  nextActions: string[];
}

/**
 * Every key waiting for a person, the longest waiting first: compensations waiting for a
 * decision (COMPENSATING), refused deliveries (DELIVERY_FAILED), compensations that ended without
 * one (FAILED), claims whose workflow start was never confirmed (RECEIVED with no
 * workflow_started_at — the sender was answered 503), and deliveries refused because another door
 * holds their key (KEY_SOURCE_CONFLICT, until cleared). The idempotency record answers for the
 * first four: every way into and out of these states moves it.
 */
export async function listOrdersAwaitingDecision(
  prisma: PrismaClient,
  limit: number,
  options: { unconfirmedAfterMs?: number } = {},
): Promise<AwaitingDecision[]> {
  const [keys, conflicts] = await Promise.all([
    listKeysAwaitingDecision(prisma, limit, options),
    listKeySourceConflictsAwaiting(prisma, limit),
  ]);
  return [...keys, ...conflicts]
    .sort(
      (a, b) =>
        a.waitingSince.localeCompare(b.waitingSince) ||
        a.idempotencyKey.localeCompare(b.idempotencyKey) ||
        a.status.localeCompare(b.status),
    )
    .slice(0, limit);
}

/**
 * The open key source conflicts as waiting entries, with the holding claim's order where it names
 * one: from its record, or from the order row once the retention purge removed the record.
 */
async function listKeySourceConflictsAwaiting(prisma: PrismaClient, limit: number): Promise<AwaitingDecision[]> {
  const conflicts = await listOpenKeySourceConflicts(prisma, limit);
  if (conflicts.length === 0) return [];
  const keys = [...new Set(conflicts.map((conflict) => conflict.idempotencyKey))];
  /** What the holding claim names: its customer, currency and amount. */
  const holders = new Map<string, { customerId: string; currency: string; totalAmount: string }>();
  const records = await prisma.idempotencyRecord.findMany({ where: { idempotentKey: { in: keys } } });
  for (const record of records) {
    const request = record.request as unknown as StoredRequest | null;
    if (request) {
      const { customerId, currency } = request.order;
      holders.set(record.idempotentKey, { customerId, currency, totalAmount: request.totalAmount });
    }
  }
  // A key whose record the purge removed: its order row names the order.
  const purged = keys.filter((key) => !records.some((record) => record.idempotentKey === key));
  const orders =
    purged.length === 0
      ? []
      : await prisma.orderMain.findMany({
          where: { idempotentKey: { in: purged } },
          select: { idempotentKey: true, customerId: true, currency: true, totalAmount: true },
        });
  for (const order of orders) {
    holders.set(order.idempotentKey, {
      customerId: order.customerId,
      currency: order.currency,
      totalAmount: order.totalAmount.toFixed(4),
    });
  }
  return conflicts.map((conflict) => {
    const key = conflict.idempotencyKey;
    const parts = parseIdempotencyKey(key);
    const holder = holders.get(key);
    return {
      idempotencyKey: key,
      workflowId: orderWorkflowIdFor(key),
      approvalNo: parts?.approvalNo ?? '',
      operation: parts?.operation ?? 'MAIN',
      customerId: holder?.customerId ?? '',
      currency: holder?.currency ?? '',
      totalAmount: holder?.totalAmount ?? '',
      reason:
        `a ${conflict.door} delivery was refused: the key was claimed through ${conflict.claimedBy}; ` +
        `check that claim against the ${conflict.door} approval (docs/operations.md, key source conflicts), then clear it`,
      attempts: conflict.refusals,
      waitingSince: conflict.firstRefusedAt.toISOString(),
      status: 'KEY_SOURCE_CONFLICT',
      nextActions: NEXT_ACTIONS.KEY_SOURCE_CONFLICT,
    };
  });
}

async function listKeysAwaitingDecision(
  prisma: PrismaClient,
  limit: number,
  options: { unconfirmedAfterMs?: number },
): Promise<AwaitingDecision[]> {
  const rows = await prisma.idempotencyRecord.findMany({
    where: {
      OR: [
        { status: { in: ['COMPENSATING', 'DELIVERY_FAILED', 'FAILED'] } },
        {
          status: 'RECEIVED',
          workflowStartedAt: null,
          updatedAt: { lte: new Date(Date.now() - (options.unconfirmedAfterMs ?? UNCONFIRMED_AFTER_MS)) },
        },
      ],
    },
    orderBy: [{ updatedAt: 'asc' }, { idempotentKey: 'asc' }],
    take: limit,
  });
  return rows.map((row) => {
    const status = row.status as Exclude<AwaitingStatus, 'KEY_SOURCE_CONFLICT'>;
    // An OA connector's key whose form was never mapped names no order yet.
    const request = row.request as unknown as StoredRequest | null;
    const byCompensation = status === 'COMPENSATING' || status === 'FAILED';
    // An OA vendor was answered success and never sends the event again: nobody redelivers it.
    const oaClaim = status === 'RECEIVED' && isOaVendor(row.source);
    return {
      idempotencyKey: row.idempotentKey,
      workflowId: byCompensation ? compensationWorkflowIdFor(row.idempotentKey) : orderWorkflowIdFor(row.idempotentKey),
      approvalNo: row.approvalNo,
      operation: row.operation as Operation,
      customerId: request?.order.customerId ?? '',
      currency: request?.order.currency ?? '',
      totalAmount: request?.totalAmount ?? '',
      reason:
        row.lastError ??
        (oaClaim
          ? 'the workflow start was never confirmed (an OA claim: the API starts it once OA_UNSTARTED_CLAIM_AFTER_MS old)'
          : status === 'RECEIVED'
            ? 'the workflow start was never confirmed (the sender was answered 503)'
            : 'unknown'),
      attempts: row.attempts,
      waitingSince: row.updatedAt.toISOString(),
      status,
      nextActions: oaClaim ? ['resubmit'] : NEXT_ACTIONS[status],
    };
  });
}

/** How long an operator surface waits for a decision to be carried out. */
const DECISION_CONFIRMATION_MS = 60_000;

/** A decision that may have been accepted but whose outcome did not come back in time. */
function notConfirmed(key: string, cause: unknown): Error {
  return new Error(
    `the decision for ${key} was not confirmed within ${DECISION_CONFIRMATION_MS / 1000} s (is a worker running?); ` +
      "if it was accepted it will still be carried out — check the key's status before deciding again",
    { cause },
  );
}

/** How long a run whose decision window just closed may take to end. */
const WINDOW_CLOSING_MS = 10_000;

/** Whether the run closes within WINDOW_CLOSING_MS: false when it still runs (or cannot be read). */
async function closesSoon(deps: OperatorDeps, workflowId: string, runId: string): Promise<boolean> {
  try {
    await deps.temporal.withDeadline(Date.now() + WINDOW_CLOSING_MS, () =>
      waitForRunToClose(deps.temporal, workflowId, runId),
    );
    return true;
  } catch {
    return false;
  }
}

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

export interface DeliveryDecisionRequest {
  idempotencyKey: string;
  decision: DeliveryDecision;
  /** Who decided: recorded with the decision. */
  decidedBy: string;
}

/**
 * Carries out an operator's decision on a failed delivery — `redeliver` (the same event: same key,
 * same event id) or `mark-handled` (DELIVERED, with who decided) — whether or not the order
 * workflow still runs: while it waits, its own `decide` update; once it has closed, the
 * `delivery-<key>` workflow. Only a DELIVERY_FAILED key is decided; asking again once it was
 * carried out is refused and changes nothing.
 */
export async function decideDelivery(deps: OperatorDeps, request: DeliveryDecisionRequest): Promise<DecisionResult> {
  const key = request.idempotencyKey;
  const args = { decision: request.decision, decidedBy: request.decidedBy };
  try {
    const record = await findRecord(deps.prisma, key);
    if (!record) throw new NoPendingDecisionError(key, 'the key is unknown (or its record expired)');
    if (record.status !== 'DELIVERY_FAILED') {
      throw new NoPendingDecisionError(
        key,
        `its status is ${record.status}; only DELIVERY_FAILED can be redelivered or marked handled`,
      );
    }
    const orderId = orderWorkflowIdFor(key);
    const order = await describeIfExists(deps.temporal, orderId);
    if (order?.status.name === 'RUNNING') {
      const handle = deps.temporal.workflow.getHandle<typeof orderWorkflow>(orderId);
      try {
        return await deps.temporal.withDeadline(Date.now() + DECISION_CONFIRMATION_MS, () =>
          handle.executeUpdate(decideUpdate, { args: [args] }),
        );
      } catch (error) {
        if (!(error instanceof WorkflowUpdateFailedError)) throw error;
        // Refused: its window closed just now (the run ends at once), or another decision is
        // being carried out (the run goes on). Decide once the run has ended; else say why not.
        if (!(await closesSoon(deps, orderId, order.runId))) {
          throw new NoPendingDecisionError(
            key,
            `${orderId} refused it (${error.cause?.message ?? error.message}); another decision may be under way — check the key's status`,
          );
        }
        return await decideDelivery(deps, request);
      }
    }
    const written = await findOrderByKey(deps.prisma, key);
    const fromRecord = workflowInputFromRecord(record, deps.writePolicy);
    if (!written || isFormOrder(fromRecord)) {
      throw new NoPendingDecisionError(key, 'no order is written under the key');
    }
    const input: DeliveryDecisionInput = {
      order: fromRecord,
      written: {
        orderId: written.orderId,
        orderNo: written.orderNo,
        totalAmount: written.totalAmount,
        writtenAttempt: written.writtenAttempt,
        attempt: written.writtenAttempt,
        alreadyWritten: true,
        createdAt: written.createdAt.toISOString(),
        deliveryConfigured: true,
        // The writing worker's targets, as its transaction recorded them with the order: the
        // delivery then refuses to run on a worker that lacks one, instead of sending to the
        // targets this operator's worker happens to have and recording DELIVERED.
        deliveryTargets: written.deliveryTargets,
      },
      ...args,
    };
    // One decision per key at a time: a second one while it runs waits for the same answer.
    const handle = await deps.temporal.workflow.start<typeof deliveryWorkflow>('deliveryWorkflow', {
      taskQueue: deps.taskQueue,
      workflowId: deliveryWorkflowIdFor(key),
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        { key: ApprovalNo, value: record.approvalNo },
        { key: IdempotencyKey, value: key },
        { key: CustomerId, value: fromRecord.order.customerId },
        { key: OrderStatusAttribute, value: 'DELIVERY_FAILED' },
      ],
      staticSummary: `Delivery decision for ${key}: ${request.decision} by ${request.decidedBy}`,
    });
    return await deps.temporal.withDeadline(Date.now() + DECISION_CONFIRMATION_MS, () => handle.result());
  } catch (error) {
    if (isTemporalUnreachable(error) && !(error instanceof NoPendingDecisionError)) throw notConfirmed(key, error);
    throw error;
  }
}
