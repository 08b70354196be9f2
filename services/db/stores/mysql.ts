// The statements in MySQL's SQL (MySQL 8 and MariaDB 10.11+ alike: no RETURNING, no data-modifying
// CTE). A change that PostgreSQL makes in one statement is a few here, inside one transaction:
// the row is locked first (`SELECT … FOR UPDATE`) or the change is conditional in its WHERE, and the
// answer is read afterwards on the same connection. Affected-row counts are real changes (the pool
// is opened with foundRows off), so "did this call set it" is the count. Times are UTC: every
// connection sets time_zone +00:00 (prisma-client.ts), and DATETIME(3) keeps milliseconds.
// An insert that yields to an existing row catches the duplicate key (1062), which fails the
// statement alone, not the transaction around it. Not `ON DUPLICATE KEY UPDATE`: the server asks
// UPDATE rights on every column the insert names for it, even when nothing is updated, and the
// application user may not rewrite the keys and audit columns (deploy/database/mysql-roles.sql).
import { Prisma } from '../generated/prisma/client.js';
import type { PrismaClient, Tx } from './tx.js';
import type {
  ClaimRow,
  ClusterRow,
  DuplicateScanStatements,
  KnownAlertRow,
  OrderRow,
  RecordRow,
  StoreStatements,
  TextColumn,
  TransitionRow,
  WantedStock,
} from './statements.js';

const NOW = Prisma.raw('CURRENT_TIMESTAMP(3)');

/** The record's columns under the model's field names, so a raw statement's row maps like a model row. */
const RECORD_COLUMNS = Prisma.raw(
  [
    'r.idempotent_key AS idempotentKey',
    'r.approval_no AS approvalNo',
    'r.operation',
    'r.fingerprint',
    'r.request',
    'r.source',
    'r.workflow_id AS workflowId',
    'r.status',
    'r.attempts',
    'r.last_error AS lastError',
    'r.workflow_started_at AS workflowStartedAt',
    'r.first_delivery_at AS firstDeliveryAt',
    'r.created_at AS createdAt',
    'r.updated_at AS updatedAt',
  ].join(', '),
);

/** The order header's columns, of `order_main` named `o`, its number given by `orderNo`. */
function headerColumns(orderNo: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`o.id, ${orderNo} AS order_no, o.idempotent_key, o.fingerprint,
    CAST(o.total_amount AS CHAR) AS total_amount, o.written_attempt, o.created_at, o.delivery_targets`;
}

const ORDER_COLUMNS = headerColumns(Prisma.raw('o.order_no'));

/**
 * The number the write gives the header of `order_main` named `o`: `SO-<yyyymmdd>-<id>`, the day
 * of its creation in UTC (every connection's time zone), the id eight digits at least. A
 * placeholder (UUID()) holds the unique column from the insert until the write sets it.
 */
const ORDER_NUMBER = Prisma.raw(
  "CONCAT('SO-', DATE_FORMAT(o.created_at, '%Y%m%d'), '-', LPAD(o.id, GREATEST(8, CHAR_LENGTH(o.id)), '0'))",
);

/** Runs `work` in the caller's transaction, or in one of its own when `db` is the plain client. */
function inTransaction<T>(db: Tx, work: (tx: Tx) => Promise<T>): Promise<T> {
  // Prisma's transaction client has no $connect; the plain client has both.
  const client = db as Tx & { $connect?: unknown; $transaction?: PrismaClient['$transaction'] };
  if (typeof client.$connect === 'function' && client.$transaction) return client.$transaction((tx) => work(tx));
  return work(db);
}

/** The record's row as a status change reads it before it moves. */
interface RecordBefore {
  status: string;
  created_at: Date;
  source: string;
}

async function changeStatus(
  tx: Tx,
  idempotencyKey: string,
  change: Parameters<StoreStatements['changeStatus']>[2],
  from: string[],
): Promise<TransitionRow | undefined> {
  const [before] = await tx.$queryRaw<RecordBefore[]>`
    SELECT status, created_at, source FROM idempotency_record WHERE idempotent_key = ${idempotencyKey} FOR UPDATE`;
  return before ? applyStatusChange(tx, idempotencyKey, change, from, before) : undefined;
}

/** Moves the record, locked and read as `before`, when its status is one of `from`. */
async function applyStatusChange(
  tx: Tx,
  idempotencyKey: string,
  change: Parameters<StoreStatements['changeStatus']>[2],
  from: string[],
  before: RecordBefore,
): Promise<TransitionRow> {
  const allowed = from.includes(before.status);
  await tx.$executeRaw`
    UPDATE idempotency_record r SET ${recordChangeAssignments(change, allowed)}
    WHERE r.idempotent_key = ${idempotencyKey}`;
  return transition(before, allowed);
}

/**
 * The assignments of a status change to the record named `r`: the attempts and the start always,
 * the status (with its time and last error) when `allowed`. None reads a column another sets.
 */
function recordChangeAssignments(change: Parameters<StoreStatements['changeStatus']>[2], allowed: boolean) {
  const moved = allowed
    ? Prisma.sql`, r.status = ${change.status}, r.updated_at = ${NOW}${
        change.lastError !== undefined ? Prisma.sql`, r.last_error = ${change.lastError}` : Prisma.empty
      }`
    : Prisma.empty;
  return Prisma.sql`r.attempts = GREATEST(r.attempts + ${change.ranAgain ? 1 : 0}, ${change.attempts ?? 0}),
    r.workflow_started_at = COALESCE(r.workflow_started_at, ${NOW})${moved}`;
}

function transition(before: RecordBefore, applied: boolean): TransitionRow {
  return { from_status: before.status, applied, created_at: before.created_at, source: before.source };
}

async function findOrderByKey(db: Tx, idempotencyKey: string): Promise<OrderRow | undefined> {
  const [row] = await db.$queryRaw<OrderRow[]>`
    SELECT ${ORDER_COLUMNS} FROM order_main o WHERE o.idempotent_key = ${idempotencyKey}`;
  return row;
}

/** A GROUP_CONCAT of order numbers or keys back into its items (neither ever holds a comma). */
function items(joined: string | null): string[] {
  return joined ? joined.split(',') : [];
}

/** The cluster query's row, its lists still joined. */
type JoinedClusterRow = Omit<ClusterRow, 'order_nos' | 'keys'> & { order_nos: string | null; keys: string | null };

function clusters(rows: JoinedClusterRow[]): ClusterRow[] {
  return rows.map((row) => ({ ...row, order_nos: items(row.order_nos), keys: items(row.keys) }));
}

const SCAN_LOCK = 'orders-duplicate-scan';

/** True when `error` is a raw statement's duplicate key (1062) on the index named `index`. */
function isDuplicateOf(error: unknown, index: string): boolean {
  const known = error as { code?: unknown; meta?: { driverAdapterError?: unknown } } | null;
  const cause = (known?.meta?.driverAdapterError as { cause?: { kind?: string; constraint?: { index?: string } } })
    ?.cause;
  return known?.code === 'P2010' && cause?.kind === 'UniqueConstraintViolation' && cause.constraint?.index === index;
}

/** The rows `insert` inserted, or 0 when a row with its key on `index` exists already. */
async function insertUnlessPresent(index: string, insert: () => Promise<number>): Promise<number> {
  try {
    return await insert();
  } catch (error) {
    if (isDuplicateOf(error, index)) return 0;
    throw error;
  }
}

// GROUP_CONCAT is the aggregate both servers order (MySQL's JSON_ARRAYAGG takes no ORDER BY); its
// length limit is raised for the scan's connection, as MySQL's default (1024 bytes) would cut a
// large cluster short.
const duplicateScan: DuplicateScanStatements = {
  async lock(tx) {
    const [row] = await tx.$queryRaw<{ got: bigint | number | null }[]>`SELECT GET_LOCK(${SCAN_LOCK}, 240) AS got`;
    if (Number(row?.got) !== 1) throw new Error('another duplicate scan held the scan lock for 4 minutes');
    await tx.$executeRawUnsafe('SET SESSION group_concat_max_len = 16777216');
  },
  // A named lock belongs to the connection, not the transaction: it is let go here.
  async unlock(tx) {
    await tx.$queryRaw`SELECT RELEASE_LOCK(${SCAN_LOCK})`;
  },

  async sameDocumentClusters(tx, since) {
    return clusters(
      await tx.$queryRaw<JoinedClusterRow[]>`
        SELECT CONCAT(operation, ':', approval_no) AS cluster_key, approval_no, operation,
               MIN(customer_id) AS customer_id,
               GROUP_CONCAT(order_no ORDER BY order_no SEPARATOR ',') AS order_nos,
               GROUP_CONCAT(idempotent_key ORDER BY order_no SEPARATOR ',') AS \`keys\`,
               MAX(created_at) AS last_order_at
        FROM order_main
        WHERE (approval_no, operation) IN (SELECT approval_no, operation FROM order_main WHERE created_at >= ${since})
        GROUP BY approval_no, operation
        HAVING COUNT(*) > 1`,
    );
  },

  async nearIdenticalClusters(tx, since, windowMinutes) {
    return clusters(
      await tx.$queryRaw<JoinedClusterRow[]>`
        WITH recent AS (
          SELECT DISTINCT fingerprint FROM order_main WHERE created_at >= ${since}
        ), ordered AS (
          SELECT o.id, o.order_no, o.idempotent_key, o.approval_no, o.customer_id, o.fingerprint, o.created_at,
                 CASE WHEN o.created_at <= LAG(o.created_at) OVER (PARTITION BY o.fingerprint ORDER BY o.created_at, o.id)
                                           + INTERVAL ${windowMinutes} MINUTE THEN 0 ELSE 1 END AS starts_run
          FROM order_main o JOIN recent ON recent.fingerprint = o.fingerprint
          WHERE o.created_at >= ${since} - INTERVAL ${windowMinutes} MINUTE
        ), runs AS (
          SELECT ordered.*, SUM(starts_run) OVER (PARTITION BY fingerprint ORDER BY created_at, id) AS run
          FROM ordered
        )
        SELECT fingerprint AS cluster_key, NULL AS approval_no, NULL AS operation,
               MIN(customer_id) AS customer_id,
               GROUP_CONCAT(order_no ORDER BY order_no SEPARATOR ',') AS order_nos,
               GROUP_CONCAT(idempotent_key ORDER BY order_no SEPARATOR ',') AS \`keys\`,
               MAX(created_at) AS last_order_at
        FROM runs
        GROUP BY fingerprint, run
        HAVING COUNT(DISTINCT approval_no) > 1 AND MAX(created_at) >= ${since}`,
    );
  },

  knownAlerts(tx, kind, clusterKey, orderNos) {
    return tx.$queryRaw<KnownAlertRow[]>`
      SELECT id, order_nos, idempotent_keys, last_order_at FROM duplicate_alert
      WHERE kind = ${kind} AND cluster_key = ${clusterKey} AND superseded_by IS NULL
        AND JSON_OVERLAPS(order_nos, ${JSON.stringify(orderNos)})
      ORDER BY id
      FOR UPDATE`;
  },

  async insertAlert(tx, alert) {
    const { cluster } = alert;
    const inserted = await insertUnlessPresent(
      'uk_duplicate_alert',
      () => tx.$executeRaw`
        INSERT INTO duplicate_alert (alert_key, kind, cluster_key, approval_no, operation, customer_id, order_nos,
                                     idempotent_keys, order_count, detail, last_order_at)
        VALUES (${alert.alertKey}, ${alert.kind}, ${cluster.cluster_key}, ${cluster.approval_no}, ${cluster.operation},
                ${cluster.customer_id}, ${JSON.stringify(alert.orderNos)}, ${JSON.stringify(alert.keys)},
                ${alert.orderNos.length}, ${alert.detail}, ${alert.lastOrderAt})`,
    );
    if (inserted === 0) return undefined;
    const [row] = await tx.$queryRaw<{ id: bigint }[]>`SELECT LAST_INSERT_ID() AS id`;
    return row?.id;
  },

  async growAlert(tx, id, content) {
    await tx.$executeRaw`
      UPDATE duplicate_alert
      SET order_nos = ${JSON.stringify(content.orderNos)}, idempotent_keys = ${JSON.stringify(content.keys)},
          order_count = ${content.orderNos.length}, detail = ${content.detail}, last_order_at = ${content.lastOrderAt},
          updated_at = ${NOW}
      WHERE id = ${id}`;
  },

  async supersede(tx, keeperId, mergedIds) {
    await tx.$executeRaw`
      UPDATE duplicate_alert SET superseded_by = ${keeperId}, updated_at = ${NOW}
      WHERE id IN (${Prisma.join(mergedIds)})`;
  },
};

/** The order header with its record's row beside it (null where the key has no record). */
type HeaderAndRecord = OrderRow & {
  record_status: string | null;
  record_created_at: Date | null;
  record_source: string | null;
};

/** What an order wants of each SKU, as a `CASE` over `sku`, the inventory's column. */
function stockWanted(sku: Prisma.Sql, { skus, quantities }: WantedStock): Prisma.Sql {
  return Prisma.sql`CASE ${sku} ${Prisma.join(
    skus.map((name, index) => Prisma.sql`WHEN ${name} THEN ${quantities[index] ?? 0}`),
    ' ',
  )} END`;
}

/**
 * Reserves the stock of every SKU it can, from a locking read of the listed SKUs' inventory rows
 * (each row the primary key's scan meets is locked, in byte order, whether it has the stock or
 * not), and answers which SKUs it reserved. The rows are debited by the write's last statement,
 * and only when every SKU had the stock.
 */
async function reserveStock(tx: Tx, idempotencyKey: string, stock: WantedStock): Promise<ReadonlySet<string>> {
  const wanted = stockWanted(Prisma.raw('sku'), stock);
  const reserved = await tx.$executeRaw`
    INSERT INTO stock_reservation (idempotent_key, sku, quantity)
    SELECT ${idempotencyKey}, sku, ${wanted} FROM inventory
    WHERE sku IN (${Prisma.join(stock.skus)}) AND on_hand - reserved >= ${wanted}
    ORDER BY sku
    FOR UPDATE`;
  if (reserved === stock.skus.length) return new Set(stock.skus);
  const rows = await tx.$queryRaw<{ sku: string }[]>`
    SELECT sku FROM stock_reservation WHERE idempotent_key = ${idempotencyKey}`;
  return new Set(rows.map((row) => row.sku));
}

export const mysqlStatements: StoreStatements = {
  duplicateScan,

  // The batch is chosen and locked first; the order rows keep the records' statuses and doors before
  // the records go (MySQL cannot name the deleted table in an UPDATE's subquery, nor return what it
  // deleted). The delete checks the rule again, as PostgreSQL's does.
  async purgeBatch(tx, mayGo, batchSize) {
    const batch = await tx.$queryRaw<{ idempotent_key: string }[]>`
      SELECT r.idempotent_key FROM idempotency_record r WHERE ${mayGo} LIMIT ${batchSize} FOR UPDATE`;
    if (batch.length === 0) return 0;
    const keys = Prisma.join(batch.map((row) => row.idempotent_key));
    await tx.$executeRaw`
      UPDATE order_main o JOIN idempotency_record r ON r.idempotent_key = o.idempotent_key
      SET o.status_at_purge = r.status, o.source_at_purge = r.source
      WHERE r.idempotent_key IN (${keys}) AND r.status IN ('SUBMITTED', 'DELIVERED')`;
    return tx.$executeRaw`DELETE r FROM idempotency_record r WHERE r.idempotent_key IN (${keys}) AND ${mayGo}`;
  },

  async textColumns(db, columns) {
    return db.$queryRaw<TextColumn[]>`
      SELECT TABLE_NAME AS \`table\`, COLUMN_NAME AS \`column\`, CHARACTER_SET_NAME AS charset,
             COLLATION_NAME AS collation
      FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME IN (${Prisma.join([...columns])})
      ORDER BY TABLE_NAME, COLUMN_NAME`;
  },

  async claimRecord(db, record): Promise<ClaimRow> {
    // The NOT EXISTS read of an INSERT … SELECT is a locking read in InnoDB: an order committing
    // meanwhile is seen, or waits for this claim.
    await insertUnlessPresent(
      'PRIMARY',
      () => db.$executeRaw`
        INSERT INTO idempotency_record (idempotent_key, approval_no, operation, fingerprint, request, source,
                                        workflow_id, status)
        SELECT ${record.idempotencyKey}, ${record.approvalNo}, ${record.operation}, ${record.fingerprint},
               ${record.request === null ? null : JSON.stringify(record.request)}, ${record.source},
               ${record.workflowId}, 'RECEIVED'
        FROM DUAL
        WHERE NOT EXISTS (SELECT 1 FROM order_main WHERE idempotent_key = ${record.idempotencyKey})`,
    );
    const [row] = await db.$queryRaw<(Partial<RecordRow> & Omit<ClaimRow, 'record'>)[]>`
      SELECT o.fingerprint AS orderFingerprint, o.status_at_purge AS orderStatusAtPurge,
             o.source_at_purge AS orderSourceAtPurge, ${RECORD_COLUMNS}
      FROM (SELECT 1 AS one) AS one
      LEFT JOIN idempotency_record r ON r.idempotent_key = ${record.idempotencyKey}
      LEFT JOIN order_main o ON o.idempotent_key = ${record.idempotencyKey}`;
    if (!row) return { record: undefined, orderFingerprint: null, orderStatusAtPurge: null, orderSourceAtPurge: null };
    const { orderFingerprint, orderStatusAtPurge, orderSourceAtPurge, ...stored } = row;
    return {
      record: stored.idempotentKey ? (stored as RecordRow) : undefined,
      orderFingerprint,
      orderStatusAtPurge,
      orderSourceAtPurge,
    };
  },

  async decideFirstDelivery(db, idempotencyKey) {
    const won = await db.$executeRaw`
      UPDATE idempotency_record SET
        first_delivery_at = ${NOW},
        workflow_started_at = COALESCE(workflow_started_at, ${NOW})
      WHERE idempotent_key = ${idempotencyKey} AND first_delivery_at IS NULL`;
    const [row] = await db.$queryRaw<{ status: string | null }[]>`
      SELECT COALESCE(r.status, o.status_at_purge, IF(o.idempotent_key IS NULL, NULL, 'SUBMITTED')) AS status
      FROM (SELECT 1 AS one) AS one
      LEFT JOIN idempotency_record r ON r.idempotent_key = ${idempotencyKey}
      LEFT JOIN order_main o ON o.idempotent_key = ${idempotencyKey}`;
    return row?.status ? { status: row.status, first: won > 0 } : undefined;
  },

  async recordMappedOrder(db, idempotencyKey, order) {
    await db.$executeRaw`
      UPDATE idempotency_record SET fingerprint = ${order.fingerprint}, request = ${JSON.stringify(order.request)}
      WHERE idempotent_key = ${idempotencyKey} AND fingerprint IS NULL`;
    const [row] = await db.$queryRaw<{ fingerprint: string | null; request: never }[]>`
      SELECT fingerprint, request FROM idempotency_record WHERE idempotent_key = ${idempotencyKey}`;
    return row;
  },

  async markWorkflowStarted(db, idempotencyKey) {
    await db.$executeRaw`
      UPDATE idempotency_record SET workflow_started_at = COALESCE(workflow_started_at, ${NOW}), updated_at = ${NOW}
      WHERE idempotent_key = ${idempotencyKey}`;
  },

  changeStatus(db, idempotencyKey, change, from) {
    return inTransaction(db, (tx) => changeStatus(tx, idempotencyKey, change, from));
  },

  // The header insert decides (1062 on uk_order_idempotent for a second write of the key). The stock
  // is reserved in one statement whatever the number of SKUs: the reservations are inserted from
  // a locking read of the listed SKUs' inventory rows (locked as the primary key is scanned, in
  // byte order — the table's collation is utf8mb4_bin — so two orders sharing SKUs lock them in
  // the same order). A SKU without the stock gets no reservation, and the caller rolls back.
  // Otherwise the header is read back with the number it is given, its record locked beside it,
  // and one UPDATE over the three tables sets that number, debits the SKUs and moves the record.
  // Every row it changes is locked by then.
  async insertOrder(tx, order, stock, recordChange) {
    const { lines } = order.order;
    if (lines.length === 0) throw new Error(`order ${order.idempotencyKey} has no lines`);
    await tx.$executeRaw`
      INSERT INTO order_main
        (order_no, idempotent_key, approval_no, operation, customer_id, currency, total_amount, fingerprint,
         written_attempt, delivery_targets)
      VALUES (UUID(), ${order.idempotencyKey}, ${order.approvalNo}, ${order.operation}, ${order.order.customerId},
              ${order.order.currency}, ${order.totalAmount}, ${order.fingerprint}, ${order.writtenAttempt},
              ${JSON.stringify(order.deliveryTargets ?? [])})`;
    await tx.$executeRaw`
      INSERT INTO order_line (order_id, line_no, sku, quantity, unit_price)
      VALUES ${Prisma.join(
        lines.map(
          (line, index) =>
            Prisma.sql`(LAST_INSERT_ID(), ${index + 1}, ${line.sku}, ${line.quantity}, ${line.unitPrice})`,
        ),
      )}`;
    const reservedSkus = await reserveStock(tx, order.idempotencyKey, stock);
    if (reservedSkus.size < stock.skus.length) {
      // Rolled back by the caller: the header is answered as it stands, with its placeholder number.
      const header = await findOrderByKey(tx, order.idempotencyKey);
      if (!header) throw new Error(`order ${order.idempotencyKey} was not written: the insert left no row`);
      return { order: header, reservedSkus, recordChange: undefined };
    }
    const [row] = await tx.$queryRaw<HeaderAndRecord[]>`
      SELECT ${headerColumns(ORDER_NUMBER)}, r.status AS record_status, r.created_at AS record_created_at,
             r.source AS record_source
      FROM order_main o
      LEFT JOIN idempotency_record r ON ${recordChange ? Prisma.sql`r.idempotent_key = o.idempotent_key` : Prisma.raw('FALSE')}
      WHERE o.idempotent_key = ${order.idempotencyKey}
      FOR UPDATE`;
    if (!row) throw new Error(`order ${order.idempotencyKey} was not written: the insert left no row`);
    const { record_status, record_created_at, record_source, ...header } = row;
    const before =
      record_status === null || record_created_at === null || record_source === null
        ? undefined
        : { status: record_status, created_at: record_created_at, source: record_source };
    const moving = recordChange && before && { ...recordChange, allowed: recordChange.from.includes(before.status) };
    await tx.$executeRaw`
      UPDATE order_main o
      JOIN inventory i ON i.sku IN (${Prisma.join(stock.skus)})
      ${moving ? Prisma.sql`JOIN idempotency_record r ON r.idempotent_key = o.idempotent_key` : Prisma.empty}
      SET o.order_no = ${ORDER_NUMBER},
          i.reserved = i.reserved + ${stockWanted(Prisma.raw('i.sku'), stock)}, i.updated_at = ${NOW}
          ${moving ? Prisma.sql`, ${recordChangeAssignments(moving.change, moving.allowed)}` : Prisma.empty}
      WHERE o.idempotent_key = ${order.idempotencyKey}`;
    return { order: header, reservedSkus, recordChange: moving && before && transition(before, moving.allowed) };
  },

  findOrderByKey,

  async recordCompensation(db, record) {
    await insertUnlessPresent(
      'uk_compensation_run',
      () => db.$executeRaw`
        INSERT INTO compensation_record
          (idempotent_key, order_run_id, reason_type, reason, attempts, order_landed, released_lines)
        VALUES (${record.idempotencyKey}, ${record.orderRunId}, ${record.reasonType}, ${record.reason},
                ${record.attempts}, ${record.orderLanded}, ${record.releasedLines})`,
    );
  },

  // A new row, or (its key and door there already) one more refusal. The assignments run left to
  // right: refusals and first_refused_at read cleared_at before it is set back to NULL.
  async recordKeySourceConflict(db, conflict) {
    const inserted = await insertUnlessPresent(
      'PRIMARY',
      () => db.$executeRaw`
        INSERT INTO key_source_conflict (idempotent_key, door, claimed_by, fingerprint)
        VALUES (${conflict.idempotencyKey}, ${conflict.door}, ${conflict.claimedBy}, ${conflict.fingerprint})`,
    );
    if (inserted > 0) return;
    await db.$executeRaw`
      UPDATE key_source_conflict SET
        claimed_by = ${conflict.claimedBy},
        fingerprint = ${conflict.fingerprint},
        refusals = IF(cleared_at IS NULL, refusals + 1, 1),
        first_refused_at = IF(cleared_at IS NULL, first_refused_at, ${NOW}),
        last_refused_at = ${NOW},
        cleared_at = NULL,
        cleared_by = NULL
      WHERE idempotent_key = ${conflict.idempotencyKey} AND door = ${conflict.door}`;
  },

  async recordOaEvent(db, event) {
    const inserted = await insertUnlessPresent(
      'PRIMARY',
      () => db.$executeRaw`
        INSERT INTO oa_event (vendor, event_id, event_type, instance_id, status, idempotent_key)
        VALUES (${event.vendor}, ${event.eventId}, ${event.eventType}, ${event.instanceId}, ${event.status},
                ${event.idempotencyKey})`,
    );
    return inserted > 0;
  },

  async recordRevocationAlert(db, alert) {
    const inserted = await insertUnlessPresent(
      'uk_duplicate_alert',
      () => db.$executeRaw`
        INSERT INTO duplicate_alert (alert_key, kind, cluster_key, approval_no, operation, customer_id, order_nos,
                                     idempotent_keys, order_count, detail, last_order_at)
        SELECT ${alert.alertKey}, ${alert.kind}, o.idempotent_key, o.approval_no, o.operation, o.customer_id,
               JSON_ARRAY(o.order_no), JSON_ARRAY(o.idempotent_key), 1,
               CONCAT('approval ', o.approval_no, ' was ', e.status, ' in ', e.vendor, ' and its order ',
                      o.order_no, ' is written; the order stands until an operator decides'),
               o.created_at
        FROM order_main o
        JOIN oa_event e ON e.idempotent_key = o.idempotent_key AND e.status IN (${Prisma.join(alert.revocations)})
        WHERE o.idempotent_key = ${alert.idempotencyKey}
        ORDER BY e.received_at
        LIMIT 1`,
    );
    if (inserted === 0) return undefined;
    const [row] = await db.$queryRaw<{ id: bigint; detail: string }[]>`
      SELECT id, detail FROM duplicate_alert WHERE alert_key = ${alert.alertKey}`;
    return row;
  },

  // The connection's own limits are put back before the transaction ends: the pool hands the
  // connection on. MariaDB names the statement limit max_statement_time (seconds), MySQL
  // max_execution_time (milliseconds, reads only); each runs only its own executable comment.
  withLongStatements<T>(prisma: PrismaClient, timeoutMs: number, work: (tx: Tx) => Promise<T>): Promise<T> {
    const seconds = Math.ceil(timeoutMs / 1000);
    return prisma.$transaction(
      async (tx) => {
        await tx.$executeRawUnsafe(
          'SET @orders_lock_wait = @@SESSION.innodb_lock_wait_timeout' +
            ' /*M!, @orders_statement_time = @@SESSION.max_statement_time */' +
            ' /*!80000 , @orders_statement_time = @@SESSION.max_execution_time */',
        );
        await tx.$executeRawUnsafe(
          `SET SESSION innodb_lock_wait_timeout = ${seconds}` +
            ` /*M!, SESSION max_statement_time = ${seconds} */` +
            ` /*!80000 , SESSION max_execution_time = ${Math.floor(timeoutMs)} */`,
        );
        try {
          return await work(tx);
        } finally {
          await tx.$executeRawUnsafe(
            'SET SESSION innodb_lock_wait_timeout = @orders_lock_wait' +
              ' /*M!, SESSION max_statement_time = @orders_statement_time */' +
              ' /*!80000 , SESSION max_execution_time = @orders_statement_time */',
          );
        }
      },
      { timeout: timeoutMs + 5_000, maxWait: 10_000 },
    );
  },
};
