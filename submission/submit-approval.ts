// The path from an approved document to its one workflow, shared by every entry point (the OA
// webhook today, MCP tools later). The key is computed here from business identifiers — the only
// place besides domain/idempotency-key.ts that touches it — and travels as workflow input.
import type { Client } from '@temporalio/client';
import type { BrokenRule, Config, WritePolicy } from '../config/env.js';
import { IdempotencyConflictError } from '../domain/errors.js';
import { canonicalOrder, describeDifferences, fingerprintOf, totalAmountOf } from '../domain/fingerprint.js';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../domain/idempotency-key.js';
import type { Approval } from '../domain/order-input.js';
import type { OrderStatus } from '../domain/order-status.js';
import {
  claimRecord,
  findRecord,
  type IdempotencyRecord,
  markWorkflowStarted,
  releaseUnstartedClaim,
} from '../db/idempotency-records.js';
import { findOrderByKey } from '../db/order-repository.js';
import type { PrismaClient } from '../db/prisma-client.js';
import { certainlyNotSent, isTemporalUnreachable } from '../temporal/connection.js';
import { startOrderWorkflow } from '../temporal/order-workflows.js';
import type { OrderWorkflowInput } from '../workflows/definitions.js';

export interface SubmissionDeps {
  prisma: PrismaClient;
  temporal: Client;
  taskQueue: string;
  writePolicy: WritePolicy;
  /** The deadline for the Temporal start call: the caller's answer must come well inside its own timeout. */
  startTimeoutMs: number;
  /** Tests only: a rule broken on purpose (config `BROKEN_RULE_FOR_TESTS`). */
  brokenRuleForTests?: BrokenRule | undefined;
}

/** Every entry point submits with the same settings: the configured task queue, policy and deadline. */
export function submissionDepsFrom(config: Config, prisma: PrismaClient, temporal: Client): SubmissionDeps {
  return {
    prisma,
    temporal,
    taskQueue: config.temporal.taskQueue,
    writePolicy: config.writePolicy,
    startTimeoutMs: config.http.startTimeoutMs,
    brokenRuleForTests: config.brokenRuleForTests,
  };
}

export interface Submission {
  idempotencyKey: string;
  workflowId: string;
  /** False for exactly one delivery of a key: the one that started its workflow. */
  duplicate: boolean;
  status: OrderStatus;
}

/** Temporal could not be reached: nothing was started, and the caller may safely redeliver. */
export class TemporalUnavailableError extends Error {
  constructor(override readonly cause: unknown) {
    super(`Temporal could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'TemporalUnavailableError';
  }
}

export function workflowInputFor(approval: Approval, policy: WritePolicy): OrderWorkflowInput {
  const order = canonicalOrder(approval.order);
  return orderInput(
    {
      idempotencyKey: idempotencyKeyFor(approval.approvalNo, approval.operation),
      approvalNo: approval.approvalNo,
      operation: approval.operation,
      approvedAt: approval.approvedAt,
      fingerprint: fingerprintOf(order),
      order,
      totalAmount: totalAmountOf(order),
    },
    policy,
  );
}

/** The workflow input for a key the edge already accepted, rebuilt from its record (same key). */
export function workflowInputFromRecord(record: IdempotencyRecord, policy: WritePolicy): OrderWorkflowInput {
  return orderInput(
    {
      idempotencyKey: record.idempotencyKey,
      approvalNo: record.approvalNo,
      operation: record.operation,
      approvedAt: record.request.approvedAt,
      fingerprint: record.fingerprint,
      order: record.request.order,
      totalAmount: record.request.totalAmount,
    },
    policy,
  );
}

function orderInput(order: Omit<OrderWorkflowInput, 'policy'>, policy: WritePolicy): OrderWorkflowInput {
  return {
    ...order,
    policy: {
      maxAttempts: policy.maxAttempts,
      initialIntervalMs: policy.initialIntervalMs,
      maxIntervalMs: policy.maxIntervalMs,
      backoffCoefficient: policy.backoffCoefficient,
      startToCloseMs: policy.startToCloseMs,
      scheduleToCloseMs: policy.scheduleToCloseMs,
      decisionTimeoutMs: policy.decisionTimeoutMs,
    },
  };
}

/**
 * Accepts one delivery of an approval:
 * 1. claim the key's record (INSERT … ON CONFLICT DO NOTHING) — a different fingerprint under a
 *    claimed key is a conflict and starts nothing;
 * 2. a key whose workflow already started answers "duplicate" from the database alone — also
 *    after the workflow closed, was abandoned or left Temporal's retention;
 * 3. otherwise start (or attach to) `order-<key>`; whichever delivery then marks the record
 *    started first is the one first delivery.
 */
export async function submitApproval(deps: SubmissionDeps, approval: Approval): Promise<Submission> {
  const input = workflowInputFor(approval, deps.writePolicy);
  const key = input.idempotencyKey;
  const workflowId = orderWorkflowIdFor(key);

  const claim = await claimRecord(deps.prisma, {
    idempotencyKey: key,
    approvalNo: input.approvalNo,
    operation: input.operation,
    fingerprint: input.fingerprint,
    request: { approvedAt: input.approvedAt, order: input.order, totalAmount: input.totalAmount },
    workflowId,
  });
  const { record, inserted } = claim;
  if (record.fingerprint !== input.fingerprint) {
    throw new IdempotencyConflictError(
      key,
      record.fingerprint,
      input.fingerprint,
      describeDifferences(record.request.order, input.order),
    );
  }
  // BROKEN ON PURPOSE, tests only: a started key is started again, even after an abandon.
  const brokenRestart = deps.brokenRuleForTests === 'redelivery-restarts-after-abandon';
  if (record.workflowStartedAt && !brokenRestart) {
    return { idempotencyKey: key, workflowId, duplicate: true, status: record.status };
  }

  // An order row written without a record (records expire after the retention window; an order
  // never does) answers for the key: no workflow is started for an order that exists. A fresh
  // claim looked for it in its own statement.
  const orderFingerprint = claim.inserted
    ? claim.orderFingerprint
    : (await findOrderByKey(deps.prisma, key))?.fingerprint;
  if (orderFingerprint !== undefined) {
    if (orderFingerprint !== input.fingerprint) {
      // The record this delivery just claimed holds the wrong order: forget it, so the key keeps
      // answering from the order row and its redeliveries are not refused as conflicts.
      if (inserted) await releaseUnstartedClaim(deps.prisma, key);
      throw new IdempotencyConflictError(key, orderFingerprint, input.fingerprint);
    }
    await markWorkflowStarted(deps.prisma, key, 'SUBMITTED');
    return { idempotencyKey: key, workflowId, duplicate: true, status: 'SUBMITTED' };
  }

  let started: Awaited<ReturnType<typeof startOrderWorkflow>>;
  try {
    started = await deps.temporal.withDeadline(Date.now() + deps.startTimeoutMs, () =>
      startOrderWorkflow(deps.temporal, deps.taskQueue, input, brokenRestart ? 'ALLOW_DUPLICATE' : undefined),
    );
  } catch (error) {
    // Forget the claim only when Temporal certainly never saw the start; after a deadline the
    // workflow may be running, and the record must stay to receive its statuses.
    if (inserted && certainlyNotSent(error)) await releaseUnstartedClaim(deps.prisma, key);
    if (isTemporalUnreachable(error)) throw new TemporalUnavailableError(error);
    throw error;
  }
  const first = await markWorkflowStarted(deps.prisma, key);
  // A closed run under the id means an earlier delivery started it and never heard back.
  const duplicate = !first || started.closedRunExists;
  const status = duplicate ? ((await findRecord(deps.prisma, key))?.status ?? record.status) : 'RECEIVED';
  return { idempotencyKey: key, workflowId, duplicate, status };
}
