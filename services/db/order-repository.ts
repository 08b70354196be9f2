// Reads and writes of orders, their lines and their stock reservations. Every function takes a
// client that may be a transaction (`tx`), so the same code runs inside the write activity's one
// transaction and on its own in tests.
import type { CanonicalOrder } from '../../domain/canonical-order.js';
import { InsufficientStockError, UnknownSkuError } from '../../domain/errors.js';
import type { Operation } from '../../domain/idempotency-key.js';
import { Prisma } from './generated/prisma/client.js';
import { statusChangeStatement, type StatusChange, type TransitionRow } from './order-status-writer.js';
import type { Tx } from './prisma-client.js';
import type { DeliveryTarget } from '../../workflows/definitions.js';

export interface NewOrder {
  idempotencyKey: string;
  approvalNo: string;
  operation: Operation;
  approvedAt: string;
  fingerprint: string;
  order: CanonicalOrder;
  totalAmount: string;
  writtenAttempt: number;
  /** Where the writing worker delivers the order's event; none when omitted. */
  deliveryTargets?: readonly DeliveryTarget[];
}

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
 * key's record status, in one statement: one round trip however many lines the order has.
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
  const { lines } = order.order;
  const wanted = new Map<string, number>();
  for (const line of lines) wanted.set(line.sku, (wanted.get(line.sku) ?? 0) + line.quantity);
  const skus = [...wanted.keys()].sort();
  const quantities = skus.map((sku) => wanted.get(sku) ?? 0);
  const record = recordChange
    ? Prisma.sql`, record AS (${statusChangeStatement(order.idempotencyKey, recordChange)})`
    : Prisma.sql`, record AS (SELECT NULL::text AS from_status, NULL::boolean AS applied, NULL::timestamptz AS created_at,
                                     NULL::text AS source)`;
  const [written] = await tx.$queryRaw<(OrderRow & { reserved_skus: string[] | null } & RecordAnswer)[]>`
    WITH header AS (
      INSERT INTO order_main
        (idempotent_key, approval_no, operation, customer_id, currency, total_amount, fingerprint, written_attempt,
         delivery_targets)
      VALUES (${order.idempotencyKey}, ${order.approvalNo}, ${order.operation}, ${order.order.customerId},
              ${order.order.currency}, ${order.totalAmount}::numeric, ${order.fingerprint}, ${order.writtenAttempt},
              ${[...(order.deliveryTargets ?? [])]}::text[])
      RETURNING id, order_no, idempotent_key, fingerprint, total_amount::text AS total_amount, written_attempt,
                created_at, delivery_targets
    ), order_lines AS (
      INSERT INTO order_line (order_id, line_no, sku, quantity, unit_price)
      SELECT header.id, line.line_no, line.sku, line.quantity, line.unit_price
      FROM header, unnest(${lines.map((line) => line.sku)}::text[], ${lines.map((line) => line.quantity)}::int[],
                          ${lines.map((line) => line.unitPrice)}::numeric[])
                   WITH ORDINALITY AS line (sku, quantity, unit_price, line_no)
    ), wanted AS (
      SELECT sku, quantity FROM unnest(${skus}::text[], ${quantities}::int[]) AS wanted (sku, quantity)
    ), locked AS MATERIALIZED (
      SELECT sku FROM inventory WHERE sku = ANY(${skus}::text[]) ORDER BY sku COLLATE "C" FOR UPDATE
    ), reserved AS (
      UPDATE inventory SET reserved = inventory.reserved + wanted.quantity, updated_at = now()
      FROM wanted JOIN locked USING (sku)
      WHERE inventory.sku = wanted.sku AND inventory.on_hand - inventory.reserved >= wanted.quantity
      RETURNING inventory.sku, wanted.quantity
    ), reservations AS (
      INSERT INTO stock_reservation (idempotent_key, sku, quantity)
      SELECT header.idempotent_key, reserved.sku, reserved.quantity FROM header, reserved
    )${record}
    SELECT header.*, (SELECT array_agg(sku) FROM reserved) AS reserved_skus,
           (SELECT created_at FROM record) AS accepted_at, (SELECT from_status FROM record) AS record_from,
           (SELECT applied FROM record) AS record_applied, (SELECT source FROM record) AS record_source
    FROM header`;
  if (!written) throw new Error(`order ${order.idempotencyKey} was not written: the insert returned no row`);
  const reserved = new Set(written.reserved_skus ?? []);
  const short = skus.find((sku) => !reserved.has(sku));
  if (short !== undefined) throw await stockShortfall(tx, short, wanted.get(short) ?? 0);
  const changed =
    written.accepted_at && written.record_from !== null
      ? {
          from_status: written.record_from,
          applied: written.record_applied === true,
          created_at: written.accepted_at,
          source: written.record_source ?? 'webhook',
        }
      : undefined;
  return { order: toStoredOrder(written), acceptedAt: written.accepted_at ?? undefined, recordChange: changed };
}

/** The record change's answer, as the write's statement returns it (all null without one). */
interface RecordAnswer {
  accepted_at: Date | null;
  record_from: string | null;
  record_applied: boolean | null;
  record_source: string | null;
}

/** Why a SKU could not be reserved: it does not exist, or it has less free stock than requested. */
async function stockShortfall(tx: Tx, sku: string, requested: number): Promise<Error> {
  const stock = await tx.inventory.findUnique({ where: { sku } });
  if (!stock) return new UnknownSkuError(sku);
  return new InsufficientStockError(sku, requested, stock.onHand - stock.reserved);
}

export async function findOrderByKey(db: Tx, idempotencyKey: string): Promise<StoredOrder | undefined> {
  const [row] = await db.$queryRaw<OrderRow[]>`
    SELECT id, order_no, idempotent_key, fingerprint, total_amount::text AS total_amount, written_attempt, created_at,
           delivery_targets
    FROM order_main WHERE idempotent_key = ${idempotencyKey}`;
  return row ? toStoredOrder(row) : undefined;
}

/** An order_main row as the statements above return it (the amount as numeric text, 4 decimals). */
interface OrderRow {
  id: bigint;
  order_no: string;
  idempotent_key: string;
  fingerprint: string;
  total_amount: string;
  written_attempt: number;
  created_at: Date;
  delivery_targets: string[];
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
