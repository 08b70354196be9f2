// An approval revoked (or canceled, or deleted) in its OA after its order was written: the order
// stands — nothing undoes it on its own — and an operator is told through the duplicate alerts'
// channel (the duplicate_alert table, `orders-cli alerts`, the alert log line and metric). One
// alert per key, however many revocation events arrive.
import type { AlertChange } from './duplicate-scan.js';
import type { Tx } from './prisma-client.js';

export const REVOKED_AFTER_ORDER = 'REVOKED_AFTER_ORDER';

const REVOCATIONS = ['REVOKED', 'CANCELED', 'DELETED'];

/**
 * Records the alert when the key has an order and its approval a recorded revocation (oa_event),
 * in one statement — whichever came first: a revocation that arrives after the write, or one that
 * arrived while the form was being read and the order written. Undefined when either is missing
 * or the key already has its alert.
 */
export async function recordRevocationAlert(db: Tx, idempotencyKey: string): Promise<AlertChange | undefined> {
  const alertKey = `${REVOKED_AFTER_ORDER}:${idempotencyKey}`;
  const [row] = await db.$queryRaw<{ id: bigint; detail: string }[]>`
    INSERT INTO duplicate_alert (alert_key, kind, cluster_key, approval_no, operation, customer_id, order_nos,
                                 idempotent_keys, order_count, detail, last_order_at)
    SELECT ${alertKey}::text, ${REVOKED_AFTER_ORDER}::text, o.idempotent_key, o.approval_no, o.operation, o.customer_id,
           ARRAY[o.order_no], ARRAY[o.idempotent_key], 1,
           'approval ' || o.approval_no || ' was ' || e.status || ' in ' || e.vendor || ' and its order ' ||
             o.order_no || ' is written; the order stands until an operator decides',
           o.created_at
    FROM order_main o
    JOIN LATERAL (
      SELECT vendor, status FROM oa_event
      WHERE idempotent_key = o.idempotent_key AND status = ANY(${REVOCATIONS}::text[])
      ORDER BY received_at LIMIT 1
    ) e ON true
    WHERE o.idempotent_key = ${idempotencyKey}
    ON CONFLICT (alert_key) DO NOTHING
    RETURNING id, detail`;
  if (!row) return undefined;
  return { change: 'new', alertId: row.id.toString(), kind: REVOKED_AFTER_ORDER, orderCount: 1, detail: row.detail };
}
