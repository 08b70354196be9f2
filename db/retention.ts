// Retention of the edge's idempotency records (IDEMPOTENCY_RETENTION_DAYS). A record older than
// the window is purged only when nothing is lost with it:
// - its key has an order row: the row (and its unique index, kept for ever) answers any late
//   redelivery as a duplicate, so the order can never double;
// - or it is a claim whose workflow never started and nothing was written: a late redelivery
//   starts afresh, which is what the first delivery would have done.
// Records of keys without an order that reached a decision or a failure (COMPENSATED, FAILED,
// COMPENSATING, …) are kept: they are the only memory of an operator's decision, and few.
import { Prisma } from '../generated/prisma/client.js';
import type { PurgeResult } from '../domain/safety-nets.js';
import type { Tx } from './prisma-client.js';

/** Records of alias `r` that may go: expired, and their key answered by an order row or never started. */
function purgeable(cutoff: Date): Prisma.Sql {
  return Prisma.sql`r.created_at < ${cutoff}
    AND (EXISTS (SELECT 1 FROM order_main o WHERE o.idempotent_key = r.idempotent_key)
         OR (r.status = 'RECEIVED' AND r.workflow_started_at IS NULL))`;
}

export interface PurgeOptions {
  retentionDays: number;
  dryRun: boolean;
  batchSize?: number;
  /** Called after each batch with the running total. */
  onProgress?: (purged: number) => void;
}

export async function purgeExpiredRecords(db: Tx, options: PurgeOptions): Promise<PurgeResult> {
  const cutoff = new Date(Date.now() - options.retentionDays * 24 * 3600_000);
  const batchSize = options.batchSize ?? 1_000;
  const keptRows = await db.$queryRaw<{ status: string; count: bigint }[]>`
    SELECT r.status, count(*) AS count FROM idempotency_record r
    WHERE r.created_at < ${cutoff} AND NOT (${purgeable(cutoff)})
    GROUP BY r.status ORDER BY r.status`;
  const kept = Object.fromEntries(keptRows.map((row) => [row.status, Number(row.count)]));

  if (options.dryRun) {
    const [row] = await db.$queryRaw<{ count: bigint }[]>`
      SELECT count(*) AS count FROM idempotency_record r WHERE ${purgeable(cutoff)}`;
    return { cutoff: cutoff.toISOString(), dryRun: true, purged: Number(row?.count ?? 0), kept };
  }

  let purged = 0;
  // Small batches: short transactions, no long lock on a busy table.
  for (;;) {
    const deleted = await db.$executeRaw`
      DELETE FROM idempotency_record WHERE idempotent_key IN (
        SELECT r.idempotent_key FROM idempotency_record r WHERE ${purgeable(cutoff)} LIMIT ${batchSize})`;
    purged += deleted;
    options.onProgress?.(purged);
    if (deleted < batchSize) break;
  }
  return { cutoff: cutoff.toISOString(), dryRun: false, purged, kept };
}
