// The awaiting list: every key that waits for a person — writes that failed for good
// (compensation), deliveries the downstream refused, keys whose compensation ended, claims whose
// workflow start was never confirmed, and deliveries refused because another door holds their key —
// with what moves each on. The one list every operator surface shows (the MCP operator tools and
// the operator CLI).
import { compensationWorkflowIdFor, orderWorkflowIdFor, parseIdempotencyKey } from '../../domain/idempotency-key.js';
import type { Operation } from '../../domain/idempotency-key.js';
import { isOaVendor } from '../../domain/oa-approval.js';
import type { OrderStatus } from '../../domain/order-status.js';
import type { StoredRequest } from '../../services/db/idempotency-records.js';
import { listOpenKeySourceConflicts } from '../../services/db/key-source-conflicts.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';

/**
 * The statuses in which a key waits for a person (RECEIVED: only a claim whose start was never
 * confirmed), and KEY_SOURCE_CONFLICT: a delivery through another door than the one that holds the
 * key was refused (docs/architecture.md, decision 38) — not an order status, the key's own is unchanged.
 */
export type AwaitingStatus =
  | Extract<OrderStatus, 'COMPENSATING' | 'DELIVERY_FAILED' | 'FAILED' | 'RECEIVED'>
  | 'KEY_SOURCE_CONFLICT';

/** What an operator can do next, by the status a key waits in, the usual first. */
export const NEXT_ACTIONS: Record<AwaitingStatus, string[]> = {
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
 * Every key waiting for a person (with `idempotencyKey`, that key's entries only), the longest waiting first: compensations waiting for a
 * decision (COMPENSATING), refused deliveries (DELIVERY_FAILED), compensations that ended without
 * one (FAILED), claims whose workflow start was never confirmed (RECEIVED with no
 * workflow_started_at — the sender was answered 503), and deliveries refused because another door
 * holds their key (KEY_SOURCE_CONFLICT, until cleared). The idempotency record answers for the
 * first four: every way into and out of these states moves it.
 */
export async function listOrdersAwaitingDecision(
  prisma: PrismaClient,
  limit: number,
  options: { unconfirmedAfterMs?: number; idempotencyKey?: string } = {},
): Promise<AwaitingDecision[]> {
  const [keys, conflicts] = await Promise.all([
    listKeysAwaitingDecision(prisma, limit, options),
    listKeySourceConflictsAwaiting(prisma, limit, options.idempotencyKey),
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
async function listKeySourceConflictsAwaiting(
  prisma: PrismaClient,
  limit: number,
  idempotencyKey: string | undefined,
): Promise<AwaitingDecision[]> {
  const conflicts = await listOpenKeySourceConflicts(prisma, limit, idempotencyKey);
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
  options: { unconfirmedAfterMs?: number; idempotencyKey?: string },
): Promise<AwaitingDecision[]> {
  const rows = await prisma.idempotencyRecord.findMany({
    where: {
      ...(options.idempotencyKey === undefined ? {} : { idempotentKey: options.idempotencyKey }),
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
