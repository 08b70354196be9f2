// What each store (PostgreSQL, MySQL/MariaDB) answers in its own SQL: the statements whose text
// differs between them. The repositories around them (idempotency-records.ts, order-repository.ts,
// order-status-writer.ts, …) keep the rules, the mapping and the documentation; a store's module
// holds only how its database says the same thing (docs/decisions/43-two-stores-one-write-path.md).
import type { IdempotencyRecord as RecordRow, Prisma } from '../generated/prisma/client.js';
import type { NewCompensation } from '../compensation-records.js';
import type { NewRecord, StoredRequest } from '../idempotency-records.js';
import type { KeySourceConflict } from '../key-source-conflicts.js';
import type { ReceivedOaEvent } from '../oa-events.js';
import type { NewOrder } from '../order-repository.js';
import type { StatusChange } from '../order-status-writer.js';
import type { PrismaClient, Tx } from '../prisma-client.js';

export type { RecordRow };

/** What a claim finds: the record that holds the key (undefined when none), and the key's order. */
export interface ClaimRow {
  record: RecordRow | undefined;
  orderFingerprint: string | null;
  orderStatusAtPurge: string | null;
  orderSourceAtPurge: string | null;
}

/** The status writer's answer for one key (none when the key has no record). */
export interface TransitionRow {
  from_status: string;
  applied: boolean;
  created_at: Date;
  /** Where the key came from: `webhook`, `mcp`, or the OA vendor whose approval it is. */
  source: string;
}

/** An order_main row as the statements return it (the amount as numeric text, 4 decimals). */
export interface OrderRow {
  id: bigint;
  order_no: string;
  idempotent_key: string;
  fingerprint: string;
  total_amount: string;
  written_attempt: number;
  created_at: Date;
  delivery_targets: string[];
}

/** The order write's answer: the header, the SKUs it could reserve, and the record change's row. */
export interface WrittenRow {
  order: OrderRow;
  reservedSkus: ReadonlySet<string>;
  recordChange: TransitionRow | undefined;
}

/** The stock an order asks for, one entry per SKU, in byte order (the order rows are locked in). */
export interface WantedStock {
  skus: string[];
  quantities: number[];
}

/** A text column as the database's catalogue describes it (charset null where the store has none per column). */
export interface TextColumn {
  table: string;
  column: string;
  charset: string | null;
  collation: string | null;
}

/** A cluster of orders the duplicate scan found (order numbers in order, their keys alike). */
export interface ClusterRow {
  cluster_key: string;
  approval_no: string | null;
  operation: string | null;
  customer_id: string;
  order_nos: string[];
  keys: string[];
  last_order_at: Date;
}

/** An alert a cluster continues. */
export interface KnownAlertRow {
  id: bigint;
  order_nos: string[];
  idempotent_keys: string[];
  last_order_at: Date;
}

/** What an alert says of its cluster once the scan has merged what it knew. */
export interface AlertContent {
  orderNos: string[];
  keys: string[];
  detail: string;
  lastOrderAt: Date;
}

/** The duplicate scan's statements (services/db/duplicate-scan.ts holds what they mean). */
export interface DuplicateScanStatements {
  /** Makes scans take turns; held until `unlock` or the transaction's end. */
  lock(tx: Tx): Promise<void>;
  unlock(tx: Tx): Promise<void>;
  /** Orders sharing approval number and operation under different keys, one touched since `since`. */
  sameDocumentClusters(tx: Tx, since: Date): Promise<ClusterRow[]>;
  /** Runs of one fingerprint, each order at most the window after the one before, of several approvals. */
  nearIdenticalClusters(tx: Tx, since: Date, windowMinutes: number): Promise<ClusterRow[]>;
  /** The live alerts of the kind and cluster key that name one of `orderNos`, oldest first, locked. */
  knownAlerts(tx: Tx, kind: string, clusterKey: string, orderNos: string[]): Promise<KnownAlertRow[]>;
  /** Inserts the alert unless its key exists; its id, or undefined. */
  insertAlert(
    tx: Tx,
    alert: AlertContent & { alertKey: string; kind: string; cluster: ClusterRow },
  ): Promise<bigint | undefined>;
  growAlert(tx: Tx, id: bigint, content: AlertContent): Promise<void>;
  supersede(tx: Tx, keeperId: bigint, mergedIds: bigint[]): Promise<void>;
}

export interface StoreStatements {
  duplicateScan: DuplicateScanStatements;
  /**
   * Deletes up to `batchSize` records of alias `r` that `mayGo` holds for, checking it again, and
   * keeps each one's status (SUBMITTED, DELIVERED) on its order row; the number deleted.
   */
  purgeBatch(tx: Tx, mayGo: Prisma.Sql, batchSize: number): Promise<number>;
  /** The named columns of the current schema (database), as its catalogue describes them. */
  textColumns(db: Tx, columns: readonly string[]): Promise<TextColumn[]>;
  /**
   * Inserts the key's record unless one exists or an order row answers for the key, then reads
   * whichever record holds it and the order's fingerprint and status at purge. Concurrent claims
   * of one key all find the same record.
   */
  claimRecord(db: Tx, record: NewRecord): Promise<ClaimRow>;
  /** Sets first_delivery_at unless set; `first` says whether this call set it. */
  decideFirstDelivery(db: Tx, idempotencyKey: string): Promise<{ status: string; first: boolean } | undefined>;
  /** Records the mapped order unless the record names one; answers the one it names afterwards. */
  recordMappedOrder(
    db: Tx,
    idempotencyKey: string,
    order: { fingerprint: string; request: StoredRequest },
  ): Promise<{ fingerprint: string | null; request: StoredRequest | null } | undefined>;
  markWorkflowStarted(db: Tx, idempotencyKey: string): Promise<void>;
  /** The status change, applied only from `from` (the allowed predecessors); see order-status-writer.ts. */
  changeStatus(
    db: Tx,
    idempotencyKey: string,
    change: StatusChange,
    from: string[],
  ): Promise<TransitionRow | undefined>;
  /**
   * Inside the caller's transaction: header, lines, the reservation of every SKU it can, and the
   * record change when asked (with its allowed predecessors). A second write of the key fails on
   * `uk_order_idempotent`.
   */
  insertOrder(
    tx: Tx,
    order: NewOrder,
    wanted: WantedStock,
    recordChange: { change: StatusChange; from: string[] } | undefined,
  ): Promise<WrittenRow>;
  findOrderByKey(db: Tx, idempotencyKey: string): Promise<OrderRow | undefined>;
  /** Inserts the compensation unless its run has one. */
  recordCompensation(db: Tx, record: NewCompensation): Promise<void>;
  /** Opens the key's conflict for `door`, or counts one more refusal on the open one. */
  recordKeySourceConflict(
    db: Tx,
    conflict: Pick<KeySourceConflict, 'idempotencyKey' | 'door' | 'claimedBy' | 'fingerprint'>,
  ): Promise<void>;
  /** True when the event was recorded now, false when the vendor's event id was recorded before. */
  recordOaEvent(db: Tx, event: ReceivedOaEvent): Promise<boolean>;
  /** Records the revocation alert of a written order revoked in its OA, once; undefined when not new. */
  recordRevocationAlert(
    db: Tx,
    alert: { alertKey: string; kind: string; idempotencyKey: string; revocations: string[] },
  ): Promise<{ id: bigint; detail: string } | undefined>;
  /** Runs `work` in one transaction whose statements may take up to `timeoutMs`. */
  withLongStatements<T>(prisma: PrismaClient, timeoutMs: number, work: (tx: Tx) => Promise<T>): Promise<T>;
}
