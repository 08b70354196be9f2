// Deliveries refused because another door holds their key (docs/architecture.md, decision 38),
// kept for an operator: the door's answer is a conflict like any other, so what tells a person
// is this table — listed by `orders-cli awaiting` until cleared — with the counter and alert of
// services/metrics/product-metrics.ts. One row per key and refused door, however often it comes.
import type { KeySource } from '../../domain/idempotency-key.js';
import type { Tx } from './prisma-client.js';
import type { RefusedDelivery } from './stores/statements.js';
import { statementsFor } from './stores/store.js';

export type { RefusedDelivery };

/** A key's refused deliveries from one door: how many, and when the first and the last came. */
export interface KeySourceConflict extends RefusedDelivery {
  refusals: number;
  firstRefusedAt: Date;
  lastRefusedAt: Date;
}

/**
 * Records one refused delivery: a new row, or one more refusal of an open one; a row an operator
 * cleared is opened again (a second attempt after the clearing is news).
 */
export async function recordKeySourceConflict(db: Tx, conflict: RefusedDelivery): Promise<void> {
  await statementsFor(db).recordKeySourceConflict(db, conflict);
}

/** The conflicts no operator has cleared (with `idempotencyKey`, that key's), the longest waiting first. */
export async function listOpenKeySourceConflicts(
  db: Tx,
  limit: number,
  idempotencyKey?: string,
): Promise<KeySourceConflict[]> {
  const rows = await db.keySourceConflict.findMany({
    where: { clearedAt: null, ...(idempotencyKey === undefined ? {} : { idempotentKey: idempotencyKey }) },
    orderBy: [{ firstRefusedAt: 'asc' }, { idempotentKey: 'asc' }, { door: 'asc' }],
    take: limit,
  });
  return rows.map((row) => ({
    idempotencyKey: row.idempotentKey,
    door: row.door,
    claimedBy: row.claimedBy,
    fingerprint: row.fingerprint,
    refusals: row.refusals,
    firstRefusedAt: row.firstRefusedAt,
    lastRefusedAt: row.lastRefusedAt,
  }));
}

/** Clears the key's open conflicts (of one door, or every door): how many were open. */
export async function clearKeySourceConflicts(
  db: Tx,
  request: { idempotencyKey: string; door?: KeySource | undefined; clearedBy: string },
): Promise<number> {
  const cleared = await db.keySourceConflict.updateMany({
    where: {
      idempotentKey: request.idempotencyKey,
      clearedAt: null,
      ...(request.door ? { door: request.door } : {}),
    },
    data: { clearedAt: new Date(), clearedBy: request.clearedBy },
  });
  return cleared.count;
}
