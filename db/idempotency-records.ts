// The edge's memory of each key: the first request's fingerprint and canonical order, the
// workflow it started, and the status callers read. The record is the fast pre-filter; the unique
// index on order_main stays the final judge.
import type { CanonicalOrder } from '../domain/fingerprint.js';
import type { Operation } from '../domain/idempotency-key.js';
import { ORDER_STATUSES, type OrderStatus } from '../domain/order-status.js';
import { Prisma, type IdempotencyRecord as RecordRow } from '../generated/prisma/client.js';
import type { Tx } from './prisma-client.js';

export interface StoredRequest {
  approvedAt: string;
  order: CanonicalOrder;
  totalAmount: string;
}

export interface IdempotencyRecord {
  idempotencyKey: string;
  approvalNo: string;
  operation: Operation;
  fingerprint: string;
  request: StoredRequest;
  workflowId: string;
  status: OrderStatus;
  attempts: number;
  lastError: string | null;
  workflowStartedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface NewRecord {
  idempotencyKey: string;
  approvalNo: string;
  operation: Operation;
  fingerprint: string;
  request: StoredRequest;
  workflowId: string;
}

/** A claimed key: the record that holds it, and whether this call inserted it. */
export type Claim =
  | {
      record: IdempotencyRecord;
      inserted: true;
      /**
       * The fingerprint of an order already written under the key (records expire, orders do
       * not), read in the claim's own statement; undefined when there is none.
       */
      orderFingerprint: string | undefined;
    }
  | { record: IdempotencyRecord; inserted: false };

/**
 * Inserts the record unless one exists, then returns whichever record holds the key. Concurrent
 * deliveries all get the same record back: INSERT … ON CONFLICT DO NOTHING, never check-then-insert.
 */
export async function claimRecord(db: Tx, record: NewRecord): Promise<Claim> {
  // INSERT … ON CONFLICT DO NOTHING RETURNING: the first delivery gets its row back, and the key's
  // order if one exists, in one round trip; every other delivery reads the row that won. Written
  // as SQL: it runs on every delivery, and a raw statement costs a fraction of a model query.
  const [created] = await db.$queryRaw<(RecordRow & { orderFingerprint: string | null })[]>`
    WITH claimed AS (
      INSERT INTO idempotency_record (idempotent_key, approval_no, operation, fingerprint, request, workflow_id, status)
      VALUES (${record.idempotencyKey}, ${record.approvalNo}, ${record.operation}, ${record.fingerprint},
              ${JSON.stringify(record.request)}::jsonb, ${record.workflowId}, 'RECEIVED')
      ON CONFLICT (idempotent_key) DO NOTHING
      RETURNING ${RECORD_COLUMNS}
    )
    SELECT claimed.*,
           (SELECT fingerprint FROM order_main WHERE idempotent_key = ${record.idempotencyKey}) AS "orderFingerprint"
    FROM claimed`;
  if (created) {
    const { orderFingerprint, ...row } = created;
    return { record: toRecord(row), inserted: true, orderFingerprint: orderFingerprint ?? undefined };
  }
  const stored = await findRecord(db, record.idempotencyKey);
  if (!stored) throw new Error(`idempotency record ${record.idempotencyKey} vanished after insert`);
  return { record: stored, inserted: false };
}

/**
 * Forgets a claim whose workflow never started (Temporal was unreachable), so a refused delivery
 * leaves nothing behind; the OA side's redelivery claims the key afresh.
 */
export async function releaseUnstartedClaim(db: Tx, idempotencyKey: string): Promise<void> {
  await db.$executeRaw`
    DELETE FROM idempotency_record WHERE idempotent_key = ${idempotencyKey} AND workflow_started_at IS NULL`;
}

/**
 * Marks the workflow as started. Exactly one caller wins (returns true): that delivery is the
 * first one, every other delivery of the key is a duplicate.
 */
export async function markWorkflowStarted(db: Tx, idempotencyKey: string, status?: OrderStatus): Promise<boolean> {
  const updated = await db.$executeRaw`
    UPDATE idempotency_record
    SET workflow_started_at = now(), updated_at = now(),
        status = CASE WHEN status = 'RECEIVED' THEN COALESCE(${status ?? null}, status) ELSE status END
    WHERE idempotent_key = ${idempotencyKey} AND workflow_started_at IS NULL`;
  return updated === 1;
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

/** The record's columns under the model's field names, so a raw statement's row maps like a model row. */
const RECORD_COLUMNS = Prisma.raw(
  [
    'idempotent_key AS "idempotentKey"',
    'approval_no AS "approvalNo"',
    'operation',
    'fingerprint',
    'request',
    'workflow_id AS "workflowId"',
    'status',
    'attempts',
    'last_error AS "lastError"',
    'workflow_started_at AS "workflowStartedAt"',
    'created_at AS "createdAt"',
    'updated_at AS "updatedAt"',
  ].join(', '),
);

function toRecord(row: RecordRow): IdempotencyRecord {
  return {
    idempotencyKey: row.idempotentKey,
    approvalNo: row.approvalNo,
    operation: row.operation as Operation,
    fingerprint: row.fingerprint,
    request: row.request as unknown as StoredRequest,
    workflowId: row.workflowId,
    status: row.status as OrderStatus,
    attempts: row.attempts,
    lastError: row.lastError,
    workflowStartedAt: row.workflowStartedAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

export interface StatusChange {
  status: OrderStatus;
  /**
   * Apply only from these statuses. Compensation steps are retried; a retry that runs after the
   * order moved on (a resubmitted run already wrote SUBMITTED) must not drag the status back.
   */
  onlyFrom?: readonly OrderStatus[];
  attempts?: number;
  lastError?: string | null;
}

/**
 * A status change as one statement (UPDATE … RETURNING created_at): run alone by setRecordStatus,
 * or inside the order write's own statement. The status, last error and updated_at change only
 * from the `onlyFrom` statuses; attempts only ever grow.
 */
export function recordStatusUpdate(idempotencyKey: string, change: StatusChange): Prisma.Sql {
  const from: string[] = change.onlyFrom ? [...change.onlyFrom] : [...ORDER_STATUSES];
  const setLastError = change.lastError !== undefined;
  return Prisma.sql`
    UPDATE idempotency_record SET
      status = CASE WHEN status = ANY(${from}::text[]) THEN ${change.status} ELSE status END,
      last_error = CASE WHEN status = ANY(${from}::text[]) AND ${setLastError} THEN ${change.lastError ?? null}
                        ELSE last_error END,
      updated_at = CASE WHEN status = ANY(${from}::text[]) THEN now() ELSE updated_at END,
      attempts = GREATEST(attempts, ${change.attempts ?? 0})
    WHERE idempotent_key = ${idempotencyKey}
    RETURNING created_at`;
}

/**
 * Records a status change (see recordStatusUpdate). Returns when the key was first accepted
 * (undefined when its record has expired).
 */
export async function setRecordStatus(
  db: Tx,
  idempotencyKey: string,
  change: StatusChange,
): Promise<{ acceptedAt: Date } | undefined> {
  const rows = await db.$queryRaw<{ created_at: Date }[]>(recordStatusUpdate(idempotencyKey, change));
  return rows[0] ? { acceptedAt: rows[0].created_at } : undefined;
}
