// What each store (PostgreSQL, MySQL/MariaDB) answers in its own SQL: the statements whose text
// differs between them, and the rows they take and give. The repositories around them
// (idempotency-records.ts, order-repository.ts, order-status-writer.ts, …) keep the rules and the
// mapping, and hand their callers these rows as their own; a store's module holds only how its
// database says the same thing (docs/decisions/43-two-stores-one-write-path.md).
import type { CanonicalOrder } from '../../../domain/canonical-order.js';
import type { KeySource, Operation } from '../../../domain/idempotency-key.js';
import type { OaInstanceStatus, OaVendor } from '../../../domain/oa-approval.js';
import type { OrderStatus, TransitionFacts } from '../../../domain/order-status.js';
import type { DeliveryTarget, OrderWorkflowInput } from '../../../workflows/definitions.js';
import type { IdempotencyRecord as RecordRow, Prisma } from '../generated/prisma/client.js';
import type { PrismaClient, Tx } from './tx.js';

export type { RecordRow };

/** The order a key's first request named, as its record keeps it. */
export interface StoredRequest {
  approvedAt: string;
  order: CanonicalOrder;
  totalAmount: string;
}

/** A key's record as a claim inserts it. */
export interface NewRecord {
  idempotencyKey: string;
  approvalNo: string;
  operation: Operation;
  /** Null for an OA connector's claim: the order is known once the workflow has read the form. */
  fingerprint: string | null;
  request: StoredRequest | null;
  /** The door the delivery came through: the key belongs to it (docs/architecture.md, decision 38). */
  source: KeySource;
  workflowId: string;
}

/** What travels with a status change, and the facts some rows of the table need stated. */
export interface StatusDetails extends TransitionFacts {
  /** The attempts the step took; the column only ever grows. */
  attempts?: number;
  /**
   * The write ran once more and found its order already written: the column counts that run too,
   * even when its attempt number started again from 1 (a local write rerun after a worker died).
   */
  ranAgain?: boolean;
  /** The new last error (null clears it); left as it is when undefined. */
  lastError?: string | null;
}

/** A status change asked of the writer, alone or inside the order write's own statement. */
export interface StatusChange extends StatusDetails {
  status: OrderStatus;
}

/**
 * An order as the write takes it: the fields of the workflow's order that its row keeps, the
 * attempt that writes it, and where the writing worker delivers its event.
 */
export interface NewOrder
  extends Pick<
    OrderWorkflowInput,
    'idempotencyKey' | 'approvalNo' | 'operation' | 'approvedAt' | 'fingerprint' | 'order' | 'totalAmount'
  > {
  writtenAttempt: number;
  /** Where the writing worker delivers the order's event; none when omitted. */
  deliveryTargets?: readonly DeliveryTarget[];
}

/** A failed run of the order workflow, as compensation records it. */
export interface NewCompensation {
  idempotencyKey: string;
  orderRunId: string;
  reasonType: string;
  reason: string;
  attempts: number;
  orderLanded: boolean;
  releasedLines: number;
}

/** A delivery refused because another door holds its key. */
export interface RefusedDelivery {
  idempotencyKey: string;
  /** The door whose delivery was refused. */
  door: KeySource;
  /** The door that holds the key. */
  claimedBy: KeySource;
  /** The refused delivery's order, when it named one. */
  fingerprint: string | null;
}

/** An OA vendor's event, as it is recorded once per vendor event id. */
export interface ReceivedOaEvent {
  vendor: OaVendor;
  eventId: string;
  eventType: string;
  instanceId: string;
  status: OaInstanceStatus;
  idempotencyKey: string;
}

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
  recordKeySourceConflict(db: Tx, conflict: RefusedDelivery): Promise<void>;
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
