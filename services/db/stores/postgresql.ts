// The statements in PostgreSQL's SQL. Each change is one statement: data-modifying CTEs and
// RETURNING let a claim, a first-delivery decision or the whole order write (header, lines, stock
// and the record's status) be one round trip.
import { Prisma } from '../generated/prisma/client.js';
import type { PrismaClient, Tx } from './tx.js';
import type {
  ClaimRow,
  ClusterRow,
  DuplicateScanStatements,
  KnownAlertRow,
  OrderRow,
  RecordRow,
  StatusChange,
  StoreStatements,
  TextColumn,
  TransitionRow,
} from './statements.js';

/** The record's columns under the model's field names, so a raw statement's row maps like a model row. */
const RECORD_COLUMNS = Prisma.raw(
  [
    'idempotent_key AS "idempotentKey"',
    'approval_no AS "approvalNo"',
    'operation',
    'fingerprint',
    'request',
    'source',
    'workflow_id AS "workflowId"',
    'status',
    'attempts',
    'last_error AS "lastError"',
    'workflow_started_at AS "workflowStartedAt"',
    'first_delivery_at AS "firstDeliveryAt"',
    'created_at AS "createdAt"',
    'updated_at AS "updatedAt"',
  ].join(', '),
);

const ORDER_COLUMNS = Prisma.raw(
  'id, order_no, idempotent_key, fingerprint, total_amount::text AS total_amount, written_attempt, created_at, ' +
    'delivery_targets',
);

/**
 * The status change as one statement, `UPDATE … RETURNING`: run alone, or as a CTE inside the
 * order write's statement. The row is read and locked first (`FOR UPDATE`), so the status the
 * change was judged against is the one it replaces, also when another transaction changed it
 * meanwhile. Only an allowed change moves the status, the last error and updated_at; attempts only
 * ever grow, and every call marks the workflow started.
 */
export function statusChangeStatement(idempotencyKey: string, change: StatusChange, from: string[]): Prisma.Sql {
  const setLastError = change.lastError !== undefined;
  return Prisma.sql`
    UPDATE idempotency_record AS record SET
      status = CASE WHEN before.allowed THEN ${change.status} ELSE record.status END,
      last_error = CASE WHEN before.allowed AND ${setLastError} THEN ${change.lastError ?? null}
                        ELSE record.last_error END,
      updated_at = CASE WHEN before.allowed THEN now() ELSE record.updated_at END,
      attempts = GREATEST(record.attempts + ${change.ranAgain ? 1 : 0}, ${change.attempts ?? 0}),
      workflow_started_at = COALESCE(record.workflow_started_at, now())
    FROM (
      SELECT idempotent_key, status, status = ANY(${from}::text[]) AS allowed
      FROM idempotency_record WHERE idempotent_key = ${idempotencyKey} FOR UPDATE
    ) AS before
    WHERE record.idempotent_key = before.idempotent_key
    RETURNING before.status AS from_status, before.allowed AS applied, record.created_at, record.source`;
}

/** The record change's answer, as the write's statement returns it (all null without one). */
interface RecordAnswer {
  accepted_at: Date | null;
  record_from: string | null;
  record_applied: boolean | null;
  record_source: string | null;
}

const duplicateScan: DuplicateScanStatements = {
  async lock(tx) {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('duplicate-scan'))`;
  },
  // The advisory lock ends with the transaction.
  async unlock() {},

  sameDocumentClusters(tx, since) {
    return tx.$queryRaw<ClusterRow[]>`
      SELECT operation || ':' || approval_no AS cluster_key, approval_no, operation,
             min(customer_id) AS customer_id,
             array_agg(order_no ORDER BY order_no) AS order_nos,
             array_agg(idempotent_key ORDER BY order_no) AS keys,
             max(created_at) AS last_order_at
      FROM order_main
      WHERE (approval_no, operation) IN (SELECT approval_no, operation FROM order_main WHERE created_at >= ${since})
      GROUP BY approval_no, operation
      HAVING count(*) > 1`;
  },

  nearIdenticalClusters(tx, since, windowMinutes) {
    return tx.$queryRaw<ClusterRow[]>`
      WITH recent AS (
        SELECT DISTINCT fingerprint FROM order_main WHERE created_at >= ${since}
      ), ordered AS (
        SELECT o.id, o.order_no, o.idempotent_key, o.approval_no, o.customer_id, o.fingerprint, o.created_at,
               CASE WHEN o.created_at - lag(o.created_at) OVER byPrint
                         <= make_interval(mins => ${windowMinutes}) THEN 0 ELSE 1 END AS starts_run
        FROM order_main o JOIN recent USING (fingerprint)
        WHERE o.created_at >= ${since}::timestamptz - make_interval(mins => ${windowMinutes})
        WINDOW byPrint AS (PARTITION BY o.fingerprint ORDER BY o.created_at, o.id)
      ), runs AS (
        SELECT *, sum(starts_run) OVER (PARTITION BY fingerprint ORDER BY created_at, id) AS run FROM ordered
      )
      SELECT fingerprint AS cluster_key, NULL AS approval_no, NULL AS operation,
             min(customer_id) AS customer_id,
             array_agg(order_no ORDER BY order_no) AS order_nos,
             array_agg(idempotent_key ORDER BY order_no) AS keys,
             max(created_at) AS last_order_at
      FROM runs
      GROUP BY fingerprint, run
      HAVING count(DISTINCT approval_no) > 1 AND max(created_at) >= ${since}`;
  },

  knownAlerts(tx, kind, clusterKey, orderNos) {
    return tx.$queryRaw<KnownAlertRow[]>`
      SELECT id, order_nos, idempotent_keys, last_order_at FROM duplicate_alert
      WHERE kind = ${kind} AND cluster_key = ${clusterKey} AND superseded_by IS NULL
        AND order_nos && ${orderNos}::text[]
      ORDER BY id
      FOR UPDATE`;
  },

  async insertAlert(tx, alert) {
    const { cluster } = alert;
    const [inserted] = await tx.$queryRaw<{ id: bigint }[]>`
      INSERT INTO duplicate_alert (alert_key, kind, cluster_key, approval_no, operation, customer_id, order_nos,
                                   idempotent_keys, order_count, detail, last_order_at)
      VALUES (${alert.alertKey}, ${alert.kind}, ${cluster.cluster_key}, ${cluster.approval_no}, ${cluster.operation},
              ${cluster.customer_id}, ${alert.orderNos}::text[], ${alert.keys}::text[], ${alert.orderNos.length},
              ${alert.detail}, ${alert.lastOrderAt})
      ON CONFLICT (alert_key) DO NOTHING
      RETURNING id`;
    return inserted?.id;
  },

  async growAlert(tx, id, content) {
    await tx.$executeRaw`
      UPDATE duplicate_alert
      SET order_nos = ${content.orderNos}::text[], idempotent_keys = ${content.keys}::text[],
          order_count = ${content.orderNos.length}, detail = ${content.detail}, last_order_at = ${content.lastOrderAt},
          updated_at = now()
      WHERE id = ${id}`;
  },

  async supersede(tx, keeperId, mergedIds) {
    await tx.$executeRaw`
      UPDATE duplicate_alert SET superseded_by = ${keeperId}, updated_at = now()
      WHERE id = ANY(${mergedIds}::bigint[])`;
  },
};

export const postgresqlStatements: StoreStatements = {
  duplicateScan,

  // One statement: the order row keeps what the key reached, and the door that claimed it, as the
  // record goes.
  async purgeBatch(tx, mayGo, batchSize) {
    const [batch] = await tx.$queryRaw<{ deleted: bigint }[]>`
      WITH purged AS (
        DELETE FROM idempotency_record r
        WHERE r.idempotent_key IN (
          SELECT r.idempotent_key FROM idempotency_record r WHERE ${mayGo} LIMIT ${batchSize})
          AND ${mayGo}
        RETURNING r.idempotent_key, r.status, r.source
      ), kept AS (
        UPDATE order_main o SET status_at_purge = purged.status, source_at_purge = purged.source
        FROM purged
        WHERE o.idempotent_key = purged.idempotent_key AND purged.status IN ('SUBMITTED', 'DELIVERED')
      )
      SELECT count(*) AS deleted FROM purged`;
    return Number(batch?.deleted ?? 0);
  },

  async textColumns(db, columns) {
    return db.$queryRaw<TextColumn[]>`
      SELECT table_name AS "table", column_name AS "column", character_set_name AS charset,
             collation_name AS collation
      FROM information_schema.columns
      WHERE table_schema = current_schema() AND column_name = ANY(${[...columns]}::text[])
      ORDER BY table_name, column_name`;
  },

  async claimRecord(db, record) {
    // One round trip for a new key: its record, and the key's order if there is one.
    const [row] = await db.$queryRaw<(Partial<RecordRow> & Omit<ClaimRow, 'record'>)[]>`
      WITH existing_order AS (
        SELECT fingerprint, status_at_purge, source_at_purge FROM order_main WHERE idempotent_key = ${record.idempotencyKey}
      ), claimed AS (
        INSERT INTO idempotency_record (idempotent_key, approval_no, operation, fingerprint, request, source,
                                        workflow_id, status)
        SELECT ${record.idempotencyKey}, ${record.approvalNo}, ${record.operation}, ${record.fingerprint},
               ${record.request === null ? null : JSON.stringify(record.request)}::jsonb, ${record.source},
               ${record.workflowId}, 'RECEIVED'
        WHERE NOT EXISTS (SELECT 1 FROM existing_order)
        ON CONFLICT (idempotent_key) DO NOTHING
        RETURNING ${RECORD_COLUMNS}
      )
      SELECT (SELECT fingerprint FROM existing_order) AS "orderFingerprint",
             (SELECT status_at_purge FROM existing_order) AS "orderStatusAtPurge",
             (SELECT source_at_purge FROM existing_order) AS "orderSourceAtPurge", claimed.*
      FROM (VALUES (1)) AS one LEFT JOIN claimed ON true`;
    const order = {
      orderFingerprint: row?.orderFingerprint ?? null,
      orderStatusAtPurge: row?.orderStatusAtPurge ?? null,
      orderSourceAtPurge: row?.orderSourceAtPurge ?? null,
    };
    if (row?.idempotentKey) {
      const {
        orderFingerprint: _fingerprint,
        orderStatusAtPurge: _status,
        orderSourceAtPurge: _source,
        ...inserted
      } = row;
      return { record: inserted as RecordRow, ...order };
    }
    const stored = await db.idempotencyRecord.findUnique({ where: { idempotentKey: record.idempotencyKey } });
    return { record: stored ?? undefined, ...order };
  },

  async decideFirstDelivery(db, idempotencyKey) {
    const [row] = await db.$queryRaw<{ status: string; first: boolean }[]>`
      WITH won AS (
        UPDATE idempotency_record SET
          first_delivery_at = now(),
          workflow_started_at = COALESCE(workflow_started_at, now())
        WHERE idempotent_key = ${idempotencyKey} AND first_delivery_at IS NULL
        RETURNING status
      )
      SELECT status, true AS first FROM won
      UNION ALL
      SELECT status, false AS first FROM idempotency_record
      WHERE idempotent_key = ${idempotencyKey} AND NOT EXISTS (SELECT 1 FROM won)
      UNION ALL
      SELECT COALESCE(status_at_purge, 'SUBMITTED'), false AS first FROM order_main
      WHERE idempotent_key = ${idempotencyKey} AND NOT EXISTS (SELECT 1 FROM won)
        AND NOT EXISTS (SELECT 1 FROM idempotency_record WHERE idempotent_key = ${idempotencyKey})`;
    return row;
  },

  async recordMappedOrder(db, idempotencyKey, order) {
    const [row] = await db.$queryRaw<{ fingerprint: string | null; request: never }[]>`
      WITH mapped AS (
        UPDATE idempotency_record SET fingerprint = ${order.fingerprint},
                                      request = ${JSON.stringify(order.request)}::jsonb
        WHERE idempotent_key = ${idempotencyKey} AND fingerprint IS NULL
        RETURNING fingerprint, request
      )
      SELECT fingerprint, request FROM mapped
      UNION ALL
      SELECT fingerprint, request FROM idempotency_record
      WHERE idempotent_key = ${idempotencyKey} AND NOT EXISTS (SELECT 1 FROM mapped)`;
    return row;
  },

  async markWorkflowStarted(db, idempotencyKey) {
    await db.$executeRaw`
      UPDATE idempotency_record SET workflow_started_at = COALESCE(workflow_started_at, now()), updated_at = now()
      WHERE idempotent_key = ${idempotencyKey}`;
  },

  async changeStatus(db, idempotencyKey, change, from) {
    const [row] = await db.$queryRaw<TransitionRow[]>(statusChangeStatement(idempotencyKey, change, from));
    return row;
  },

  // One statement, one round trip however many lines the order has. Inventory rows are locked in
  // byte order (COLLATE "C", as JavaScript sorts the SKUs), and the conditional UPDATE is the stock
  // check: a SKU it did not reserve is missing from reserved_skus.
  async insertOrder(tx, order, { skus, quantities }, recordChange) {
    const { lines } = order.order;
    const record = recordChange
      ? Prisma.sql`, record AS (${statusChangeStatement(order.idempotencyKey, recordChange.change, recordChange.from)})`
      : Prisma.sql`, record AS (SELECT NULL::text AS from_status, NULL::boolean AS applied,
                                       NULL::timestamptz AS created_at, NULL::text AS source)`;
    const [written] = await tx.$queryRaw<(OrderRow & { reserved_skus: string[] | null } & RecordAnswer)[]>`
      WITH header AS (
        INSERT INTO order_main
          (idempotent_key, approval_no, operation, customer_id, currency, total_amount, fingerprint, written_attempt,
           delivery_targets)
        VALUES (${order.idempotencyKey}, ${order.approvalNo}, ${order.operation}, ${order.order.customerId},
                ${order.order.currency}, ${order.totalAmount}::numeric, ${order.fingerprint}, ${order.writtenAttempt},
                ${[...(order.deliveryTargets ?? [])]}::text[])
        RETURNING ${ORDER_COLUMNS}
      ), order_lines AS (
        INSERT INTO order_line (order_id, line_no, sku, quantity, unit_price)
        SELECT header.id, line.line_no, line.sku, line.quantity, line.unit_price
        FROM header, unnest(${lines.map((line) => line.sku)}::text[], ${lines.map((line) => line.quantity)}::int[],
                            ${lines.map((line) => line.unitPrice)}::numeric[])
                     WITH ORDINALITY AS line (sku, quantity, unit_price, line_no)
      ), wanted AS (
        SELECT sku, quantity FROM unnest(${skus}::text[], ${quantities}::int[]) AS wanted (sku, quantity)
      ), locked AS MATERIALIZED (
        SELECT sku FROM inventory WHERE sku = ANY(${skus}::text[]) ORDER BY sku COLLATE "C" FOR UPDATE
      ), reserved AS (
        UPDATE inventory SET reserved = inventory.reserved + wanted.quantity, updated_at = now()
        FROM wanted JOIN locked USING (sku)
        WHERE inventory.sku = wanted.sku AND inventory.on_hand - inventory.reserved >= wanted.quantity
        RETURNING inventory.sku, wanted.quantity
      ), reservations AS (
        INSERT INTO stock_reservation (idempotent_key, sku, quantity)
        SELECT header.idempotent_key, reserved.sku, reserved.quantity FROM header, reserved
      )${record}
      SELECT header.*, (SELECT array_agg(sku) FROM reserved) AS reserved_skus,
             (SELECT created_at FROM record) AS accepted_at, (SELECT from_status FROM record) AS record_from,
             (SELECT applied FROM record) AS record_applied, (SELECT source FROM record) AS record_source
      FROM header`;
    if (!written) throw new Error(`order ${order.idempotencyKey} was not written: the insert returned no row`);
    const { reserved_skus, accepted_at, record_from, record_applied, record_source, ...header } = written;
    return {
      order: header,
      reservedSkus: new Set(reserved_skus ?? []),
      recordChange:
        accepted_at && record_from !== null
          ? {
              from_status: record_from,
              applied: record_applied === true,
              created_at: accepted_at,
              source: record_source ?? 'webhook',
            }
          : undefined,
    };
  },

  async findOrderByKey(db, idempotencyKey) {
    const [row] = await db.$queryRaw<OrderRow[]>`
      SELECT ${ORDER_COLUMNS} FROM order_main WHERE idempotent_key = ${idempotencyKey}`;
    return row;
  },

  async recordCompensation(db, record) {
    await db.$executeRaw`
      INSERT INTO compensation_record
        (idempotent_key, order_run_id, reason_type, reason, attempts, order_landed, released_lines)
      VALUES (${record.idempotencyKey}, ${record.orderRunId}, ${record.reasonType}, ${record.reason},
              ${record.attempts}, ${record.orderLanded}, ${record.releasedLines})
      ON CONFLICT (idempotent_key, order_run_id) DO NOTHING`;
  },

  async recordKeySourceConflict(db, conflict) {
    await db.$executeRaw`
      INSERT INTO key_source_conflict (idempotent_key, door, claimed_by, fingerprint)
      VALUES (${conflict.idempotencyKey}, ${conflict.door}, ${conflict.claimedBy}, ${conflict.fingerprint})
      ON CONFLICT (idempotent_key, door) DO UPDATE SET
        claimed_by = EXCLUDED.claimed_by,
        fingerprint = EXCLUDED.fingerprint,
        refusals = CASE WHEN key_source_conflict.cleared_at IS NULL THEN key_source_conflict.refusals + 1 ELSE 1 END,
        first_refused_at = CASE WHEN key_source_conflict.cleared_at IS NULL
          THEN key_source_conflict.first_refused_at ELSE now() END,
        last_refused_at = now(),
        cleared_at = NULL,
        cleared_by = NULL`;
  },

  async recordOaEvent(db, event) {
    const inserted = await db.$executeRaw`
      INSERT INTO oa_event (vendor, event_id, event_type, instance_id, status, idempotent_key)
      VALUES (${event.vendor}, ${event.eventId}, ${event.eventType}, ${event.instanceId}, ${event.status},
              ${event.idempotencyKey})
      ON CONFLICT (vendor, event_id) DO NOTHING`;
    return inserted > 0;
  },

  async recordRevocationAlert(db, alert) {
    const [row] = await db.$queryRaw<{ id: bigint; detail: string }[]>`
      INSERT INTO duplicate_alert (alert_key, kind, cluster_key, approval_no, operation, customer_id, order_nos,
                                   idempotent_keys, order_count, detail, last_order_at)
      SELECT ${alert.alertKey}::text, ${alert.kind}::text, o.idempotent_key, o.approval_no, o.operation,
             o.customer_id, ARRAY[o.order_no], ARRAY[o.idempotent_key], 1,
             'approval ' || o.approval_no || ' was ' || e.status || ' in ' || e.vendor || ' and its order ' ||
               o.order_no || ' is written; the order stands until an operator decides',
             o.created_at
      FROM order_main o
      JOIN LATERAL (
        SELECT vendor, status FROM oa_event
        WHERE idempotent_key = o.idempotent_key AND status = ANY(${alert.revocations}::text[])
        ORDER BY received_at LIMIT 1
      ) e ON true
      WHERE o.idempotent_key = ${alert.idempotencyKey}
      ON CONFLICT (alert_key) DO NOTHING
      RETURNING id, detail`;
    return row;
  },

  withLongStatements<T>(prisma: PrismaClient, timeoutMs: number, work: (tx: Tx) => Promise<T>): Promise<T> {
    return prisma.$transaction(
      async (tx) => {
        await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${Math.floor(timeoutMs)}`);
        return work(tx);
      },
      { timeout: timeoutMs + 5_000, maxWait: 10_000 },
    );
  },
};
