// What crosses the workflow boundary: inputs, results, queries and updates. Shared by workflows,
// activities and clients; deterministic-safe (no Node built-ins).
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { CanonicalOrder } from '../domain/canonical-order.js';
import type { CardOutcome, DecisionCard } from '../domain/decision-cards.js';
import type { Operation } from '../domain/idempotency-key.js';
import type { OaVendor } from '../domain/oa-approval.js';
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
  /**
   * The local write's retry threshold: a backoff up to this long is waited out inside the workflow
   * task, a longer one becomes a timer in the history. Absent in inputs recorded before the write
   * ran as a local activity.
   */
  localRetryThresholdMs?: number;
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

/** An OA approval instance whose form holds the order (docs/architecture.md, decision 17). */
export interface FormSource {
  vendor: OaVendor;
  instanceId: string;
}

/**
 * An order whose content is still in an OA's approval form: the workflow's first step reads and
 * maps the form (`readApprovalForm`) into an `OrderWorkflowInput`, then goes on as for any order.
 */
export interface FormOrderWorkflowInput {
  idempotencyKey: string;
  approvalNo: string;
  operation: Operation;
  formSource: FormSource;
  policy: WritePolicyInput;
}

/** What starts an order workflow: the order itself, or the approval form it is read from. */
export type OrderWorkflowStart = OrderWorkflowInput | FormOrderWorkflowInput;

export function isFormOrder(input: OrderWorkflowStart): input is FormOrderWorkflowInput {
  return 'formSource' in input && input.formSource !== undefined;
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
  /** When the row committed (ISO 8601): the event's `occurredAt`, the same on every attempt. */
  createdAt: string;
  /** Whether the worker that wrote it has a downstream to tell (DOWNSTREAM_URL or AMQP_URL). */
  deliveryConfigured: boolean;
  /**
   * The targets the writing worker delivers to; the delivery requires each of them of the worker
   * that runs it. Absent in results recorded before targets were recorded: whatever that worker has.
   */
  deliveryTargets?: DeliveryTarget[];
}

/** Where `order.created` goes: the HTTP downstream (DOWNSTREAM_URL), the broker (AMQP_URL). */
export type DeliveryTarget = 'http' | 'broker';

export interface OrderResult extends OrderWriteResult {
  /** DELIVERED, DELIVERY_FAILED, or SUBMITTED when no downstream is configured. */
  finalStatus: OrderStatus;
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

/** How the write ended, as the `writeOutcome` update answers it once the key has left RECEIVED. */
export interface WriteOutcome {
  idempotencyKey: string;
  /** SUBMITTED (or later) when the order is written; COMPENSATING when it failed for good. */
  status: OrderStatus;
  orderId?: string;
  orderNo?: string;
  attempts: number;
  lastError?: string;
}

/**
 * Waits for the write's outcome. A caller that asked to wait sends it with the start
 * (Update-with-Start), so the order number comes back in the start's own answer.
 */
export const writeOutcomeUpdate = defineUpdate<WriteOutcome>('writeOutcome');

/** What an operator may decide for a failed delivery, through the same `decide` update. */
export const DELIVERY_DECISIONS = ['redeliver', 'mark-handled'] as const;
export type DeliveryDecision = (typeof DELIVERY_DECISIONS)[number];

/** A delivery decision taken after the order workflow that waited for it has closed. */
export interface DeliveryDecisionInput {
  order: OrderWorkflowInput;
  /** The order as it was written: the event is built from it, so it is the same event as before. */
  written: OrderWriteResult;
  decision: DeliveryDecision;
  decidedBy: string;
}

/** `delivery-<key>`: at most one delivery decision runs per key at a time. */
export function deliveryWorkflowIdFor(idempotencyKey: string): string {
  return `delivery-${idempotencyKey}`;
}

export interface CompensationInput {
  /** The order that failed; its form when the form itself could not be read or mapped. */
  order: OrderWorkflowStart;
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
  decision?: CompensationDecision | DeliveryDecision;
  outcome?: CompensationOutcome;
}

export interface DecisionRequest {
  decision: CompensationDecision | DeliveryDecision;
  /** Who decided: an operator name or tool, recorded with the decision. */
  decidedBy: string;
}

export const compensationStateQuery = defineQuery<CompensationState>('compensationState');
/** The answer to a decision: the key's status after it was carried out. */
export interface DecisionResult {
  idempotencyKey: string;
  status: OrderStatus;
  outcome?: string;
}

/** One update for every operator decision: compensation (`resubmit` / `abandon`) on
 * `compensation-<key>`, delivery (`redeliver` / `mark-handled`) on `order-<key>`. */
export const decideUpdate = defineUpdate<DecisionResult, [DecisionRequest]>('decide');

/**
 * One decision card: the vendor whose chat shows it, what it shows, and the key the vendor
 * deduplicates its post by (domain-node/decision-card-keys.ts).
 */
export interface DecisionCardInput {
  vendor: OaVendor;
  card: DecisionCard;
  sendKey: string;
  /** How often the workflow looks whether the key still waits; default a minute. */
  lookEveryMs?: number;
}

/** What became of a card: the message it was posted as, and the outcome it was redrawn with. */
export interface DecisionCardResult {
  messageId: string;
  outcome: CardOutcome;
}

/** What became of an approval's receipt: posted (or found posted), or failed with its recorded cause. */
export type ApprovalReceiptResult = { posted: true; found: boolean } | { posted: false; failure: string };

/**
 * The signatures of the workflows clients start and hold handles to, by name. A client types its
 * calls with these rather than with `typeof` a workflow: a workflow module imports the activities'
 * types, and a client that imported it would stand, through them, in a circle with its own callers.
 * Each workflow module checks its function against its signature here.
 */
export type OrderWorkflow = (start: OrderWorkflowStart) => Promise<OrderResult>;
export type DeliveryWorkflow = (input: DeliveryDecisionInput) => Promise<DecisionResult>;
export type CompensationWorkflow = (input: CompensationInput) => Promise<CompensationState>;
