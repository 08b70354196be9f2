// The duplicate scan: finds what slipped past the key, from the order table itself — orders that
// share a business document (approval number + operation) under different keys (the symptom of a
// key made in the wrong place; MAIN and SUPPLEMENT of one approval are two documents), and
// near-identical orders (same fingerprint: customer, currency, lines) of different approvals
// within a short window. Each finding is recorded once as a duplicate_alert.
import { createHash } from 'node:crypto';
import type { DuplicateFinding, DuplicateKind, ScanOptions, ScanResult } from '../domain/safety-nets.js';
import { type PrismaClient, type Tx, withLongStatements } from './prisma-client.js';

interface FindingRow {
  approval_no: string | null;
  operation: string | null;
  customer_id: string;
  order_nos: string[];
  keys: string[];
  minutes_apart?: number;
}

/** One scan may read a day of orders: it runs with a long statement timeout, not the write path's. */
export async function scanForDuplicates(prisma: PrismaClient, options: ScanOptions): Promise<ScanResult> {
  return withLongStatements(prisma, 5 * 60_000, (tx) => scan(tx, options));
}

async function scan(db: Tx, options: ScanOptions): Promise<ScanResult> {
  const since = new Date(Date.now() - options.lookbackMinutes * 60_000);
  const sameDocument = await db.$queryRaw<FindingRow[]>`
    SELECT approval_no, operation, min(customer_id) AS customer_id,
           array_agg(order_no ORDER BY order_no) AS order_nos,
           array_agg(idempotent_key ORDER BY order_no) AS keys
    FROM order_main
    WHERE (approval_no, operation) IN (SELECT approval_no, operation FROM order_main WHERE created_at >= ${since})
    GROUP BY approval_no, operation
    HAVING count(*) > 1`;
  const nearIdentical = await db.$queryRaw<FindingRow[]>`
    SELECT NULL AS approval_no, NULL AS operation, later.customer_id,
           ARRAY[earlier.order_no, later.order_no] AS order_nos,
           ARRAY[earlier.idempotent_key, later.idempotent_key] AS keys,
           round(extract(epoch FROM later.created_at - earlier.created_at) / 60)::int AS minutes_apart
    FROM order_main later
    JOIN order_main earlier
      ON earlier.fingerprint = later.fingerprint
     AND earlier.id < later.id
     AND earlier.approval_no <> later.approval_no
     AND earlier.created_at >= later.created_at - make_interval(mins => ${options.nearWindowMinutes})
    WHERE later.created_at >= ${since}
    ORDER BY later.id, earlier.id`;

  const findings: DuplicateFinding[] = [];
  for (const row of sameDocument) {
    findings.push(
      await record(
        db,
        'SAME_DOCUMENT',
        row,
        `approval ${row.approval_no} ${row.operation} has ${row.order_nos.length} orders under different keys: ${row.keys.join(', ')}`,
      ),
    );
  }
  for (const row of nearIdentical) {
    findings.push(
      await record(
        db,
        'NEAR_IDENTICAL',
        row,
        `orders ${row.order_nos.join(' and ')} of different approvals have the same customer, currency and lines, ${row.minutes_apart ?? 0} minute(s) apart`,
      ),
    );
  }
  return {
    scannedSince: since.toISOString(),
    findings,
    newAlerts: findings.filter((finding) => finding.newAlert).length,
  };
}

async function record(db: Tx, kind: DuplicateKind, row: FindingRow, detail: string): Promise<DuplicateFinding> {
  // The same finding is recorded once, however many orders it names: a digest of kind and orders.
  const alertKey = `${kind}:${createHash('sha256')
    .update([...row.order_nos].sort().join(','))
    .digest('hex')}`;
  const inserted = await db.$executeRaw`
    INSERT INTO duplicate_alert (alert_key, kind, approval_no, operation, customer_id, order_nos, idempotent_keys, detail)
    VALUES (${alertKey}, ${kind}, ${row.approval_no}, ${row.operation}, ${row.customer_id},
            ${row.order_nos}::text[], ${row.keys}::text[], ${detail})
    ON CONFLICT (alert_key) DO NOTHING`;
  return {
    kind,
    approvalNo: row.approval_no,
    operation: row.operation,
    customerId: row.customer_id,
    orderNos: row.order_nos,
    idempotencyKeys: row.keys,
    detail,
    newAlert: inserted === 1,
  };
}

/** Recorded alerts, newest first. */
export async function listDuplicateAlerts(db: Tx, limit = 100) {
  return db.duplicateAlert.findMany({ orderBy: { id: 'desc' }, take: limit });
}
