// Retention of the edge's idempotency records (IDEMPOTENCY_RETENTION_DAYS). A record is purged
// only when nothing is lost with it: it was accepted and last changed before the window, its
// order is settled (SUBMITTED, DELIVERED) with an order row — the row (and its unique index, kept
// for ever) answers any late redelivery as a duplicate, so it can never double — and one delivery
// of the key was answered with success. "Last changed" matters: a key an operator took up again
// after a long wait has a run that may still be working. "Answered" matters too: a key whose every
// delivery heard 503 (the start's answer was lost, and the run wrote the order anyway) has not
// given its one 202 yet; without the record, the sender's late redelivery would hear 200. Such a
// record stays until a delivery is answered (the next run then purges it), or until an operator
// who has told the sender lets it go (`releaseUnanswered`); every run counts them.
// The order row keeps the status the key had reached (status_at_purge), so reading the key after
// the purge still says DELIVERED where it was delivered.
// Every other record is kept: keys without an order (COMPENSATED, FAILED, COMPENSATING) — the
// only memory of an operator's decision — orders still waiting for one (DELIVERY_FAILED, FAILED
// after landing), and claims whose start was never confirmed (a start may have reached Temporal,
// and `orders-cli awaiting` lists them for an operator). They are few.
import { Prisma } from './generated/prisma/client.js';
import type { OrderStatus } from '../../domain/order-status.js';
import type { PurgeResult } from '../../domain/safety-nets.js';
import { type PrismaClient, type Tx, withLongStatements } from './prisma-client.js';
import { statementsFor } from './stores/store.js';

/**
 * Records of alias `r` whose order is settled: accepted and last changed before the window, with
 * an order row that answers for the key (SUBMITTED, DELIVERED — not DELIVERY_FAILED or FAILED,
 * which still need an operator).
 */
function settled(cutoff: Date): Prisma.Sql {
  return Prisma.sql`r.created_at < ${cutoff} AND r.updated_at < ${cutoff}
    AND r.status IN ('SUBMITTED', 'DELIVERED')
    AND EXISTS (SELECT 1 FROM order_main o WHERE o.idempotent_key = r.idempotent_key)`;
}

/** Settled records that may go: one delivery of the key was answered 202, or the operator said so. */
function purgeable(cutoff: Date, releaseUnanswered: boolean): Prisma.Sql {
  return releaseUnanswered ? settled(cutoff) : Prisma.sql`${settled(cutoff)} AND r.first_delivery_at IS NOT NULL`;
}

/** How long one maintenance statement may take (the write path's timeout is seconds). */
const MAINTENANCE_STATEMENT_MS = 5 * 60_000;

export interface PurgeOptions {
  retentionDays: number;
  dryRun: boolean;
  batchSize?: number;
  /** Called after each batch with the running total. */
  onProgress?: (purged: number) => void;
  /**
   * Purge settled records whose key no delivery was ever answered for, too: an operator's choice
   * once the sender knows its order was written (its late redelivery then hears 200, never a
   * second order). Never the scheduled run's.
   */
  releaseUnanswered?: boolean;
}

export async function purgeExpiredRecords(prisma: PrismaClient, options: PurgeOptions): Promise<PurgeResult> {
  const cutoff = new Date(Date.now() - options.retentionDays * 24 * 3600_000);
  const batchSize = options.batchSize ?? 1_000;
  const mayGo = purgeable(cutoff, options.releaseUnanswered === true);
  const inLongStatements = <T>(work: (tx: Tx) => Promise<T>) =>
    withLongStatements(prisma, MAINTENANCE_STATEMENT_MS, work);

  let purged = 0;
  if (options.dryRun) {
    const [row] = await inLongStatements(
      (tx) => tx.$queryRaw<{ count: bigint }[]>`
        SELECT count(*) AS count FROM idempotency_record r WHERE ${mayGo}`,
    );
    purged = Number(row?.count ?? 0);
  } else {
    // Small batches, each its own short transaction: no long lock on a busy table. The outer
    // DELETE checks the rule again, so a record that changed since the batch was chosen stays.
    for (;;) {
      // The order row keeps what the key reached, in the delete's transaction: once the record is
      // gone, the status read answers DELIVERED from there, not a bare SUBMITTED.
      const deleted = await inLongStatements((tx) => statementsFor(tx).purgeBatch(tx, mayGo, batchSize));
      purged += deleted;
      options.onProgress?.(purged);
      if (deleted < batchSize) break;
    }
  }
  const keptRows = await inLongStatements(
    (tx) => tx.$queryRaw<{ status: string; count: bigint }[]>`
      SELECT r.status, count(*) AS count FROM idempotency_record r
      WHERE r.created_at < ${cutoff} AND NOT (${mayGo})
      GROUP BY r.status ORDER BY r.status`,
  );
  const kept = Object.fromEntries(keptRows.map((row) => [row.status, Number(row.count)]));
  // Released, they are not kept: with a dry run too, the count says what the run would leave.
  const [unanswered] = options.releaseUnanswered
    ? []
    : await inLongStatements(
        (tx) => tx.$queryRaw<{ count: bigint }[]>`
          SELECT count(*) AS count FROM idempotency_record r
          WHERE ${settled(cutoff)} AND r.first_delivery_at IS NULL`,
      );
  return {
    cutoff: cutoff.toISOString(),
    dryRun: options.dryRun,
    purged,
    kept,
    unanswered: Number(unanswered?.count ?? 0),
  };
}

/** The status a key had reached when its record was purged; undefined for a key never purged. */
export async function statusAtPurge(db: Tx, idempotencyKey: string): Promise<OrderStatus | undefined> {
  const [row] = await db.$queryRaw<{ status_at_purge: string | null }[]>`
    SELECT status_at_purge FROM order_main WHERE idempotent_key = ${idempotencyKey}`;
  return (row?.status_at_purge ?? undefined) as OrderStatus | undefined;
}
