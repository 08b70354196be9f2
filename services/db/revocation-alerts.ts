// An approval revoked (or canceled, or deleted) in its OA after its order was written: the order
// stands — nothing undoes it on its own — and an operator is told through the duplicate alerts'
// channel (the duplicate_alert table, `orders-cli alerts`, the alert log line and metric). One
// alert per key, however many revocation events arrive.
import type { AlertChange } from './duplicate-scan.js';
import type { Tx } from './prisma-client.js';
import { statementsFor } from './stores/store.js';

export const REVOKED_AFTER_ORDER = 'REVOKED_AFTER_ORDER';

const REVOCATIONS = ['REVOKED', 'CANCELED', 'DELETED'];

/**
 * Records the alert when the key has an order and its approval a recorded revocation (oa_event),
 * in one step — whichever came first: a revocation that arrives after the write, or one that
 * arrived while the form was being read and the order written. Undefined when either is missing
 * or the key already has its alert.
 */
export async function recordRevocationAlert(db: Tx, idempotencyKey: string): Promise<AlertChange | undefined> {
  const alertKey = `${REVOKED_AFTER_ORDER}:${idempotencyKey}`;
  const row = await statementsFor(db).recordRevocationAlert(db, {
    alertKey,
    kind: REVOKED_AFTER_ORDER,
    idempotencyKey,
    revocations: REVOCATIONS,
  });
  if (!row) return undefined;
  return { change: 'new', alertId: row.id.toString(), kind: REVOKED_AFTER_ORDER, orderCount: 1, detail: row.detail };
}
