// Where one key stands. The database answers — it outlives Temporal's history retention — and,
// while the write is still being retried, the workflow's pending activity adds the live attempt
// count and the last error. The operator reads it whole (`orders-cli status`); a caller outside
// (`GET /orders/<key>`, `get_order_status`) reads `publicStatusView`, whose last error is the
// classification table's code and sentence, never the error's own text (docs/architecture.md,
// decision 40).
import type { Client } from '@temporalio/client';
import { ACTIVITY_TIMEOUT, type PublicError, publicErrorOf } from '../domain/error-classification.js';
import type { OrderStatus } from '../domain/order-status.js';
import { orderWorkflowIdFor } from '../domain/idempotency-key.js';
import { findRecord } from '../services/db/idempotency-records.js';
import { findOrderByKey } from '../services/db/order-repository.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import { statusAtPurge } from '../services/db/retention.js';

export interface OrderStatusView {
  idempotencyKey: string;
  workflowId: string;
  status: OrderStatus;
  orderId?: string;
  orderNo?: string;
  attempts: number;
  /** The last failure as recorded, `<type>: <message>`: for the operator and the log only. */
  lastError?: string;
}

/** What a caller outside is told of a key: the view with its last error told by the table. */
export interface PublicOrderStatusView extends Omit<OrderStatusView, 'lastError'> {
  lastError?: PublicError;
}

export function publicStatusView(view: OrderStatusView): PublicOrderStatusView {
  const { lastError, ...rest } = view;
  return lastError === undefined ? rest : { ...rest, lastError: publicErrorOf(lastError) };
}

export async function readOrderStatus(
  deps: { prisma: PrismaClient; temporal: Client },
  idempotencyKey: string,
): Promise<OrderStatusView | undefined> {
  // The record first, then the order: a record says SUBMITTED only from the order's commit on, so
  // the order read after it sees the row. Read side by side, the order's read could take its
  // snapshot first and miss a row the record's read already counts as written.
  const record = await findRecord(deps.prisma, idempotencyKey);
  const order = await findOrderByKey(deps.prisma, idempotencyKey);
  if (!record && !order) return undefined;

  const view: OrderStatusView = {
    idempotencyKey,
    workflowId: record?.workflowId ?? orderWorkflowIdFor(idempotencyKey),
    // No record: the retention purge removed it once the order settled; the order row kept what
    // the key had reached (orders purged before that was kept read SUBMITTED).
    status: record?.status ?? (await statusAtPurge(deps.prisma, idempotencyKey)) ?? 'SUBMITTED',
    attempts: Math.max(record?.attempts ?? 0, order?.writtenAttempt ?? 0),
  };
  if (order) Object.assign(view, { orderId: order.orderId, orderNo: order.orderNo });
  if (record?.lastError) view.lastError = record.lastError;

  if (view.status === 'RECEIVED' && record?.workflowStartedAt) {
    const live = await pendingWrite(deps.temporal, view.workflowId);
    if (live) {
      view.attempts = Math.max(view.attempts, live.attempt);
      if (live.lastError) view.lastError = live.lastError;
    }
  }
  return view;
}

/** The write activity's current attempt, if the workflow is retrying it; undefined when unknown. */
async function pendingWrite(
  temporal: Client,
  workflowId: string,
): Promise<{ attempt: number; lastError?: string } | undefined> {
  try {
    const description = await temporal.workflow.getHandle(workflowId).describe();
    const pending = description.raw.pendingActivities?.[0];
    if (!pending) return undefined;
    // `<type>: <message>` as the record keeps it: the type is what the public answer is told by.
    const failure = pending.lastFailure;
    const type = failure?.applicationFailureInfo?.type ?? (failure?.timeoutFailureInfo ? ACTIVITY_TIMEOUT : undefined);
    const lastError = failure?.message ? (type ? `${type}: ${failure.message}` : failure.message) : undefined;
    return { attempt: pending.attempt ?? 1, ...(lastError ? { lastError } : {}) };
  } catch {
    // Temporal unreachable or the history gone: the database's answer stands.
    return undefined;
  }
}
