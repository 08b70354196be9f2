// The receipts' records (approval_receipt): which approvals' orders still need their receipt, the
// one record per key written when a receipt settled, and the receipts that failed, for an operator.
// The statements are plain SQL both stores read alike.
import type { ApprovalReceipt, ReceiptSettlement } from '../../domain/approval-receipts.js';
import { Prisma } from './generated/prisma/client.js';
import type { Tx } from './prisma-client.js';

/** A receipt whose posting failed for good, as `orders-cli receipts` lists it. */
export interface FailedReceipt extends ApprovalReceipt {
  failure: string;
  settledAt: string;
}

/**
 * The orders written since `since` for an approval of one of `vendors` (the door that claimed the
 * key) with no receipt recorded yet, the newest first, at most `limit`: receipts still being
 * retried have no record, and the newest orders are not kept waiting behind them. The approval instance is
 * the key's approval number: an OA vendor's key is its instance's (domain/idempotency-key.ts).
 */
export async function receiptsToPost(
  db: Tx,
  options: { vendors: readonly string[]; since: Date; limit: number },
): Promise<ApprovalReceipt[]> {
  if (options.vendors.length === 0) return [];
  const rows = await db.$queryRaw<{ idempotent_key: string; approval_no: string; source: string; order_no: string }[]>`
    SELECT r.idempotent_key, r.approval_no, r.source, o.order_no
    FROM order_main o
    JOIN idempotency_record r ON r.idempotent_key = o.idempotent_key
    LEFT JOIN approval_receipt a ON a.idempotent_key = o.idempotent_key
    WHERE o.created_at >= ${options.since}
      AND r.source IN (${Prisma.join(options.vendors)})
      AND a.idempotent_key IS NULL
    ORDER BY o.created_at DESC
    LIMIT ${options.limit}`;
  return rows.map((row) => ({
    vendor: row.source,
    idempotencyKey: row.idempotent_key,
    instanceId: row.approval_no,
    orderNo: row.order_no,
  }));
}

/**
 * Records how `receipt` settled; true when this call recorded it, false when it was recorded before
 * (the first settlement stands: a receipt is counted once).
 */
export async function recordReceipt(db: Tx, receipt: ApprovalReceipt, settled: ReceiptSettlement): Promise<boolean> {
  const { count } = await db.approvalReceipt.createMany({
    data: [
      {
        idempotentKey: receipt.idempotencyKey,
        vendor: receipt.vendor,
        instanceId: receipt.instanceId,
        orderNo: receipt.orderNo,
        status: settled.status,
        postedId: settled.status === 'POSTED' ? (settled.postedId ?? null) : null,
        failure: settled.status === 'FAILED' ? settled.failure : null,
      },
    ],
    skipDuplicates: true,
  });
  return count === 1;
}

/** The receipt recorded for `idempotencyKey`, if any. */
export async function receiptOf(
  db: Tx,
  idempotencyKey: string,
): Promise<(ReceiptSettlement & { settledAt: string }) | undefined> {
  const row = await db.approvalReceipt.findUnique({ where: { idempotentKey: idempotencyKey } });
  if (!row) return undefined;
  return row.status === 'POSTED'
    ? { status: 'POSTED', postedId: row.postedId ?? undefined, settledAt: row.settledAt.toISOString() }
    : { status: 'FAILED', failure: row.failure ?? '', settledAt: row.settledAt.toISOString() };
}

/** The receipts that failed for good, the latest first, at most `limit`. */
export async function failedReceipts(db: Tx, limit: number): Promise<FailedReceipt[]> {
  const rows = await db.approvalReceipt.findMany({
    where: { status: 'FAILED' },
    orderBy: { settledAt: 'desc' },
    take: limit,
  });
  return rows.map((row) => ({
    vendor: row.vendor,
    idempotencyKey: row.idempotentKey,
    instanceId: row.instanceId,
    orderNo: row.orderNo,
    failure: row.failure ?? '',
    settledAt: row.settledAt.toISOString(),
  }));
}
