// An approval revoked (or canceled, or deleted) in its OA after its order was written: the order
// stands — nothing undoes it on its own — and an operator is told through the duplicate alerts'
// channel (the duplicate_alert table, `orders-cli alerts`, the alert log line and metric). One
// alert per key, however many revocation events arrive.
import type { OaInstanceStatus, OaVendor } from '../../domain/oa-approval.js';
import type { AlertChange } from './duplicate-scan.js';
import type { Tx } from './prisma-client.js';

export const REVOKED_AFTER_ORDER = 'REVOKED_AFTER_ORDER';

/**
 * Records the alert when the key's order exists, in one statement. Undefined when there is no
 * order under the key (nothing to alert about) or the key already has its alert.
 */
export async function recordRevocationAlert(
  db: Tx,
  revoked: { idempotencyKey: string; vendor: OaVendor; instanceId: string; status: OaInstanceStatus },
): Promise<AlertChange | undefined> {
  const alertKey = `${REVOKED_AFTER_ORDER}:${revoked.idempotencyKey}`;
  const [row] = await db.$queryRaw<{ id: bigint; detail: string }[]>`
    INSERT INTO duplicate_alert (alert_key, kind, cluster_key, approval_no, operation, customer_id, order_nos,
                                 idempotent_keys, order_count, detail, last_order_at)
    SELECT ${alertKey}::text, ${REVOKED_AFTER_ORDER}::text, o.idempotent_key, o.approval_no, o.operation, o.customer_id,
           ARRAY[o.order_no], ARRAY[o.idempotent_key], 1,
           'approval ' || o.approval_no || ' was ' || ${revoked.status}::text || ' in ' || ${revoked.vendor}::text ||
             ' after its order ' || o.order_no || ' was written; the order stands until an operator decides',
           o.created_at
    FROM order_main o WHERE o.idempotent_key = ${revoked.idempotencyKey}
    ON CONFLICT (alert_key) DO NOTHING
    RETURNING id, detail`;
  if (!row) return undefined;
  return { change: 'new', alertId: row.id.toString(), kind: REVOKED_AFTER_ORDER, orderCount: 1, detail: row.detail };
}
