// What crosses the workflow boundary: inputs, results, queries and updates. Shared by workflows,
// activities and clients; deterministic-safe (no Node built-ins).
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { CanonicalOrder } from '../domain/fingerprint.js';
import type { Operation } from '../domain/idempotency-key.js';
import type { CompensationDecision, OrderStatus } from '../domain/order-status.js';

/** The write policy travels in the workflow input: recorded in history, identical on replay. */
export interface WritePolicyInput {
  maxAttempts: number;
  initialIntervalMs: number;
  maxIntervalMs: number;
  backoffCoefficient: number;
  startToCloseMs: number;
  scheduleToCloseMs: number;
  decisionTimeoutMs: number;
}

/** Everything the order workflow needs. The key is fixed at the edge and never rebuilt here. */
export interface OrderWorkflowInput {
  idempotencyKey: string;
  approvalNo: string;
  operation: Operation;
  approvedAt: string;
  fingerprint: string;
  order: CanonicalOrder;
  totalAmount: string;
  policy: WritePolicyInput;
}

export interface OrderWriteResult {
  orderId: string;
  orderNo: string;
  totalAmount: string;
  /** The attempt that committed the row (for a lost response: an earlier attempt than this one). */
  writtenAttempt: number;
  /** The attempt of the activity that returned. */
  attempt: number;
  /** True when the row was already there: a retry after a lost response, or a resubmit. */
  alreadyWritten: boolean;
}

export interface OrderState {
  idempotencyKey: string;
  status: OrderStatus;
  attempts: number;
  orderId?: string;
  orderNo?: string;
  lastError?: string;
}

export const orderStateQuery = defineQuery<OrderState>('orderState');

export interface CompensationInput {
  order: OrderWorkflowInput;
  /** The run of the order workflow that failed; compensation records it once per run. */
  orderRunId: string;
  reasonType: string;
  reason: string;
  attempts: number;
}

export type CompensationOutcome = 'ORDER_LANDED' | 'RESUBMITTED' | 'ABANDONED' | 'DECISION_TIMED_OUT' | 'FAILED';

export interface CompensationState {
  idempotencyKey: string;
  status: OrderStatus;
  reasonType: string;
  reason: string;
  decision?: CompensationDecision;
  outcome?: CompensationOutcome;
}

export interface DecisionRequest {
  decision: CompensationDecision;
  /** Who decided: an operator name or tool, recorded with the decision. */
  decidedBy: string;
}

export const compensationStateQuery = defineQuery<CompensationState>('compensationState');
export const decideUpdate = defineUpdate<CompensationState, [DecisionRequest]>('decide');
