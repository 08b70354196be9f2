// Reads and writes of orders, their lines and their stock reservations. Every function takes a
// client that may be a transaction (`tx`), so the same code runs inside the write activity's one
// transaction and on its own in tests.
import { InsufficientStockError, UnknownSkuError } from '../../domain/errors.js';
import { allowedFrom } from './order-status-writer.js';
import type { Tx } from './prisma-client.js';
import type { NewOrder, OrderRow, StatusChange, TransitionRow } from './stores/statements.js';
import { statementsFor } from './stores/store.js';
import type { DeliveryTarget } from '../../workflows/definitions.js';

export type { NewOrder };

export interface StoredOrder {
  orderId: string;
  orderNo: string;
  idempotencyKey: string;
  fingerprint: string;
  totalAmount: string;
  writtenAttempt: number;
  createdAt: Date;
  /**
   * Where the worker that wrote it delivers the order's event: a later delivery requires each of
   * them. Empty for an order written before the targets were recorded.
   */
  deliveryTargets: DeliveryTarget[];
}

/** An order as the write left it, and when its key was first accepted (from the record it updated). */
export interface WrittenOrder {
  order: StoredOrder;
  /** Undefined when no record change was asked for, or the key's record has expired. */
  acceptedAt: Date | undefined;
  /** What the record change answered (read it with transitionFrom); undefined as acceptedAt is. */
  recordChange: TransitionRow | undefined;
}

/**
 * Writes the order — header, lines and the stock reservation of every SKU — and, when asked, the
 * key's record status: one statement on PostgreSQL, a few on MySQL (stores/).
 * - The header insert decides: a second write of the key fails on `uk_order_idempotent`.
 * - Inventory rows are locked in SKU order (byte order, as JavaScript sorts them), so two orders
 *   sharing SKUs cannot deadlock; the conditional UPDATE is the stock check (no read-then-write
 *   window).
 * Run it inside a transaction: a SKU that is unknown or short throws, and the rollback takes the
 * header, the other SKUs' reservations and the record change with it.
 */
export async function insertOrderWithReservation(
  tx: Tx,
  order: NewOrder,
  recordChange?: StatusChange,
): Promise<WrittenOrder> {
  // Prisma's transaction client has no $connect. On a plain client the statement would commit
  // before a shortfall is known.
  if (typeof (tx as { $connect?: unknown }).$connect === 'function') {
    throw new Error('insertOrderWithReservation must run inside a transaction');
  }
  const wanted = new Map<string, number>();
  for (const line of order.order.lines) wanted.set(line.sku, (wanted.get(line.sku) ?? 0) + line.quantity);
  const skus = [...wanted.keys()].sort();
  const quantities = skus.map((sku) => wanted.get(sku) ?? 0);
  const written = await statementsFor(tx).insertOrder(
    tx,
    order,
    { skus, quantities },
    recordChange && { change: recordChange, from: allowedFrom(recordChange) },
  );
  const short = skus.find((sku) => !written.reservedSkus.has(sku));
  if (short !== undefined) throw await stockShortfall(tx, short, wanted.get(short) ?? 0);
  const changed = written.recordChange;
  return { order: toStoredOrder(written.order), acceptedAt: changed?.created_at, recordChange: changed };
}

/** Why a SKU could not be reserved: it does not exist, or it has less free stock than requested. */
async function stockShortfall(tx: Tx, sku: string, requested: number): Promise<Error> {
  const stock = await tx.inventory.findUnique({ where: { sku } });
  if (!stock) return new UnknownSkuError(sku);
  return new InsufficientStockError(sku, requested, stock.onHand - stock.reserved);
}

export async function findOrderByKey(db: Tx, idempotencyKey: string): Promise<StoredOrder | undefined> {
  const row = await statementsFor(db).findOrderByKey(db, idempotencyKey);
  return row ? toStoredOrder(row) : undefined;
}

function toStoredOrder(row: OrderRow): StoredOrder {
  return {
    orderId: row.id.toString(),
    orderNo: row.order_no,
    idempotencyKey: row.idempotent_key,
    fingerprint: row.fingerprint,
    totalAmount: row.total_amount,
    writtenAttempt: row.written_attempt,
    createdAt: row.created_at,
    deliveryTargets: row.delivery_targets as DeliveryTarget[],
  };
}

/**
 * True when `error` is the unique violation of `uk_order_idempotent` (the key already written):
 * P2002 from a model query, P2010 carrying the driver's unique violation from a raw one.
 */
export function isIdempotencyKeyViolation(error: unknown): boolean {
  const known = error as { code?: unknown; meta?: { target?: unknown; driverAdapterError?: unknown } } | null;
  if (!known || (known.code !== 'P2002' && known.code !== 'P2010')) return false;
  const adapterError = known.meta?.driverAdapterError as
    | { cause?: { constraint?: { index?: string; fields?: string[] } } }
    | undefined;
  const constraint = adapterError?.cause?.constraint;
  if (constraint?.index) return constraint.index === 'uk_order_idempotent';
  // Other tables share the column name: a raw statement's violation counts only when it names the index.
  if (known.code === 'P2010') return false;
  if (constraint?.fields) return constraint.fields.some((field) => field.replace(/"/g, '') === 'idempotent_key');
  const target = known.meta?.target;
  return Array.isArray(target) ? target.includes('idempotent_key') : target === 'uk_order_idempotent';
}
