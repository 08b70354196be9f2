// Reads and writes of orders, their lines and their stock reservations. Every function takes a
// client that may be a transaction (`tx`), so the same code runs inside the write activity's one
// transaction and on its own in tests.
import type { CanonicalOrder } from '../domain/fingerprint.js';
import { InsufficientStockError, UnknownSkuError } from '../domain/errors.js';
import type { Operation } from '../domain/idempotency-key.js';
import type { Tx } from './prisma-client.js';

export interface NewOrder {
  idempotencyKey: string;
  approvalNo: string;
  operation: Operation;
  approvedAt: string;
  fingerprint: string;
  order: CanonicalOrder;
  totalAmount: string;
  writtenAttempt: number;
}

export interface StoredOrder {
  orderId: string;
  orderNo: string;
  idempotencyKey: string;
  fingerprint: string;
  totalAmount: string;
  writtenAttempt: number;
  createdAt: Date;
}

/** Inserts the header and its lines. A second insert for the key fails on `uk_order_idempotent`. */
export async function insertOrder(tx: Tx, order: NewOrder): Promise<StoredOrder> {
  const row = await tx.orderMain.create({
    data: {
      idempotentKey: order.idempotencyKey,
      approvalNo: order.approvalNo,
      operation: order.operation,
      customerId: order.order.customerId,
      currency: order.order.currency,
      totalAmount: order.totalAmount,
      fingerprint: order.fingerprint,
      writtenAttempt: order.writtenAttempt,
      lines: {
        create: order.order.lines.map((line, index) => ({
          lineNo: index + 1,
          sku: line.sku,
          quantity: line.quantity,
          unitPrice: line.unitPrice,
        })),
      },
    },
  });
  return toStoredOrder(row);
}

/**
 * Reserves stock for every SKU of the order, in SKU order so concurrent orders lock rows in the
 * same order (no deadlock between two orders sharing SKUs). The conditional UPDATE is the check:
 * there is no read-then-write window.
 */
export async function reserveStock(tx: Tx, idempotencyKey: string, order: CanonicalOrder): Promise<void> {
  const quantities = new Map<string, number>();
  for (const line of order.lines) quantities.set(line.sku, (quantities.get(line.sku) ?? 0) + line.quantity);
  const skus = [...quantities.keys()].sort();
  for (const sku of skus) {
    const quantity = quantities.get(sku) ?? 0;
    const updated = await tx.$executeRaw`
      UPDATE inventory SET reserved = reserved + ${quantity}, updated_at = now()
      WHERE sku = ${sku} AND on_hand - reserved >= ${quantity}`;
    if (updated === 0) {
      const stock = await tx.inventory.findUnique({ where: { sku } });
      if (!stock) throw new UnknownSkuError(sku);
      throw new InsufficientStockError(sku, quantity, stock.onHand - stock.reserved);
    }
    await tx.stockReservation.create({ data: { idempotentKey: idempotencyKey, sku, quantity } });
  }
}

/**
 * Releases reservations that a key holds without an order (a safety net: the write is one
 * transaction, so normally there are none). Idempotent: released rows are marked, never twice.
 */
export async function releaseOrphanReservations(tx: Tx, idempotencyKey: string): Promise<number> {
  const orphans = await tx.stockReservation.findMany({
    where: { idempotentKey: idempotencyKey, releasedAt: null },
    orderBy: { sku: 'asc' },
  });
  for (const reservation of orphans) {
    await tx.$executeRaw`
      UPDATE inventory SET reserved = reserved - ${reservation.quantity}, updated_at = now()
      WHERE sku = ${reservation.sku}`;
    await tx.stockReservation.update({
      where: { idempotentKey_sku: { idempotentKey: idempotencyKey, sku: reservation.sku } },
      data: { releasedAt: new Date() },
    });
  }
  return orphans.length;
}

export async function findOrderByKey(db: Tx, idempotencyKey: string): Promise<StoredOrder | undefined> {
  const row = await db.orderMain.findUnique({ where: { idempotentKey: idempotencyKey } });
  return row ? toStoredOrder(row) : undefined;
}

function toStoredOrder(row: {
  id: bigint;
  orderNo: string;
  idempotentKey: string;
  fingerprint: string;
  totalAmount: { toFixed: (digits: number) => string };
  writtenAttempt: number;
  createdAt: Date;
}): StoredOrder {
  return {
    orderId: row.id.toString(),
    orderNo: row.orderNo,
    idempotencyKey: row.idempotentKey,
    fingerprint: row.fingerprint,
    totalAmount: row.totalAmount.toFixed(4),
    writtenAttempt: row.writtenAttempt,
    createdAt: row.createdAt,
  };
}

/** True when `error` is the unique violation of `uk_order_idempotent` (the key already written). */
export function isIdempotencyKeyViolation(error: unknown): boolean {
  const known = error as { code?: unknown; meta?: { target?: unknown; driverAdapterError?: unknown } } | null;
  if (!known || known.code !== 'P2002') return false;
  const adapterError = known.meta?.driverAdapterError as
    | { cause?: { constraint?: { index?: string; fields?: string[] } } }
    | undefined;
  const constraint = adapterError?.cause?.constraint;
  if (constraint?.index) return constraint.index === 'uk_order_idempotent';
  if (constraint?.fields) return constraint.fields.some((field) => field.replace(/"/g, '') === 'idempotent_key');
  const target = known.meta?.target;
  return Array.isArray(target) ? target.includes('idempotent_key') : target === 'uk_order_idempotent';
}
