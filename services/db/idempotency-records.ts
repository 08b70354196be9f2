// The edge's memory of each key: the first request's fingerprint and canonical order, the
// workflow it started, and the status callers read. The record is the fast pre-filter; the unique
// index on order_main stays the final judge. The status is claimed here as RECEIVED and changed
// only by order-status-writer.ts.
import { ORDER_NAMING_DOORS } from '../../domain/door.js';
import type { KeySource, Operation } from '../../domain/idempotency-key.js';
import type { OrderStatus } from '../../domain/order-status.js';
import type { IdempotencyRecord as RecordRow } from './generated/prisma/client.js';
import type { Tx } from './prisma-client.js';
import type { NewRecord, StoredRequest } from './stores/statements.js';
import { statementsFor } from './stores/store.js';

export type { NewRecord, StoredRequest };

/** A key's record as it stands: what its claim inserted, and where the key has got to since. */
export interface IdempotencyRecord extends NewRecord {
  status: OrderStatus;
  attempts: number;
  lastError: string | null;
  workflowStartedAt: Date | null;
  /** When the one delivery answered 202 was decided; null until then. */
  firstDeliveryAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a delivery finds under its key: the record that holds it, and the key's order if one exists. */
export interface Claim {
  /** Undefined only when an order row answers for the key and its record has expired. */
  record: IdempotencyRecord | undefined;
  /**
   * The fingerprint of an order already written under the key (records expire, orders do not),
   * read in the claim's own statement; undefined when there is none.
   */
  orderFingerprint: string | undefined;
  /** What the key had reached when the retention purge removed its record (with the order row). */
  orderStatusAtPurge: OrderStatus | undefined;
  /**
   * The door that claimed the key, kept on the order row when the retention purge removed its
   * record: the key still belongs to it. Undefined while the record exists (its source says it),
   * and for orders purged before the door was kept.
   */
  orderSourceAtPurge: KeySource | undefined;
}

/**
 * Claims the key for this delivery: inserts its record unless one exists or an order row already
 * answers for the key, then returns whichever record holds it. Concurrent deliveries all get the
 * same record back: an insert that yields to the existing row (ON CONFLICT DO NOTHING; on MySQL the
 * duplicate key caught), never check-then-insert. A key whose order
 * exists gets no new record: the order row judges every later delivery, so a conflicting payload
 * can never leave a claim behind that refuses the right one.
 */
export async function claimRecord(db: Tx, record: NewRecord): Promise<Claim> {
  const claimed = await statementsFor(db).claimRecord(db, record);
  const orderFingerprint = claimed.orderFingerprint ?? undefined;
  const orderStatusAtPurge = (claimed.orderStatusAtPurge ?? undefined) as OrderStatus | undefined;
  const orderSourceAtPurge = claimed.orderSourceAtPurge ?? undefined;
  if (!claimed.record && orderFingerprint === undefined) {
    throw new Error(`idempotency record ${record.idempotencyKey} vanished after insert`);
  }
  return {
    record: claimed.record && toRecord(claimed.record),
    orderFingerprint,
    orderStatusAtPurge,
    orderSourceAtPurge,
  };
}

/**
 * Decides, in the database alone, whether this delivery is the key's first: the one delivery
 * whose conditional update sets `first_delivery_at` is answered 202, every other one 200 — however
 * the deliveries interleave with the workflow, and whichever of them started it. Only deliveries
 * about to be answered with success ask, once they know the key's workflow exists. It also marks
 * the workflow started. `updated_at` is left alone: it says when the status last changed, which
 * operators read as "waiting since". A record the retention purge removed meanwhile is not
 * written again: the order row answers, with the status the key had reached.
 */
export async function decideFirstDelivery(
  db: Tx,
  idempotencyKey: string,
): Promise<{ first: boolean; status: OrderStatus | undefined }> {
  const row = await statementsFor(db).decideFirstDelivery(db, idempotencyKey);
  return { first: row?.first === true, status: row?.status as OrderStatus | undefined };
}

/**
 * Records the order an OA connector's key turned out to be, once its workflow has read and mapped
 * the form: from then on the record names the order like any other. A record that already names
 * an order keeps it (the order row stays the final judge of what was written).
 */
export async function recordMappedOrder(
  db: Tx,
  idempotencyKey: string,
  order: { fingerprint: string; request: StoredRequest },
): Promise<{ fingerprint: string; request: StoredRequest }> {
  // The first mapping recorded stays the key's order: a later attempt (its predecessor recorded
  // and then lost its completion) or a run after a mapping change gets the recorded one back.
  const row = await statementsFor(db).recordMappedOrder(db, idempotencyKey, order);
  if (!row?.fingerprint || !row.request) return order;
  return { fingerprint: row.fingerprint, request: row.request };
}

/**
 * Marks the key's workflow as started, for a start that did not come from a delivery (an
 * operator's). A started key is never started again by a redelivery.
 */
export async function markWorkflowStarted(db: Tx, idempotencyKey: string): Promise<void> {
  await statementsFor(db).markWorkflowStarted(db, idempotencyKey);
}

export async function findRecord(db: Tx, idempotencyKey: string): Promise<IdempotencyRecord | undefined> {
  const row = await db.idempotencyRecord.findUnique({ where: { idempotentKey: idempotencyKey } });
  return row ? toRecord(row) : undefined;
}

/** The records in one status, the longest unchanged first (the index on status serves it). */
export async function findRecordsByStatus(db: Tx, status: OrderStatus, limit: number): Promise<IdempotencyRecord[]> {
  const rows = await db.idempotencyRecord.findMany({
    where: { status },
    orderBy: [{ updatedAt: 'asc' }, { idempotentKey: 'asc' }],
    take: limit,
  });
  return rows.map(toRecord);
}

/**
 * Claims of the OA vendors (every door but the order-naming ones) whose workflow start nobody confirmed (RECEIVED, no workflow_started_at) and
 * that have not changed since `claimedBefore`, the oldest first (the index on status serves it).
 */
export async function findUnstartedClaims(
  db: Tx,
  options: { claimedBefore: Date; limit: number },
): Promise<IdempotencyRecord[]> {
  const rows = await db.idempotencyRecord.findMany({
    where: {
      status: 'RECEIVED',
      workflowStartedAt: null,
      source: { notIn: [...ORDER_NAMING_DOORS] },
      updatedAt: { lte: options.claimedBefore },
    },
    orderBy: [{ updatedAt: 'asc' }, { idempotentKey: 'asc' }],
    take: options.limit,
  });
  return rows.map(toRecord);
}

/** The most recently changed records, optionally of one status: what the operator CLI lists. */
export async function listRecentRecords(
  db: Tx,
  options: { status?: OrderStatus | undefined; limit: number },
): Promise<IdempotencyRecord[]> {
  const rows = await db.idempotencyRecord.findMany({
    where: options.status ? { status: options.status } : {},
    orderBy: [{ updatedAt: 'desc' }, { idempotentKey: 'asc' }],
    take: options.limit,
  });
  return rows.map(toRecord);
}

function toRecord(row: RecordRow): IdempotencyRecord {
  return {
    idempotencyKey: row.idempotentKey,
    approvalNo: row.approvalNo,
    operation: row.operation as Operation,
    fingerprint: row.fingerprint,
    request: row.request as unknown as StoredRequest | null,
    source: row.source,
    workflowId: row.workflowId,
    status: row.status as OrderStatus,
    attempts: row.attempts,
    lastError: row.lastError,
    workflowStartedAt: row.workflowStartedAt,
    firstDeliveryAt: row.firstDeliveryAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
