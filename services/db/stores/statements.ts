// What each store (PostgreSQL, MySQL/MariaDB) answers in its own SQL: the statements whose text
// differs between them. The repositories around them (idempotency-records.ts, order-repository.ts,
// order-status-writer.ts, …) keep the rules, the mapping and the documentation; a store's module
// holds only how its database says the same thing (docs/decisions/43-two-stores-one-write-path.md).
import type { IdempotencyRecord as RecordRow } from '../generated/prisma/client.js';
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

export interface StoreStatements {
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
