// Activities of the scheduled safety nets: run the duplicate scan and the retention purge against
// PostgreSQL, and log what on-call must see.
import { Context, log } from '@temporalio/activity';
import { alertLogLine, scanForDuplicates } from '../services/db/duplicate-scan.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import { purgeExpiredRecords } from '../services/db/retention.js';
import type { PurgeResult, ScanOptions, ScanResult } from '../domain/safety-nets.js';

/** The database steps of the safety nets, each run on the client it is handed. */
export const safetyNetDatabase = { scanForDuplicates, purgeExpiredRecords };

export function createSafetyNetActivities(deps: {
  prisma: PrismaClient;
  metrics?: ProductMetrics;
  /** The database steps; a unit test stands them in, everything else runs these. */
  database?: typeof safetyNetDatabase;
}) {
  const database = deps.database ?? safetyNetDatabase;

  async function scanForDuplicateOrders(options: ScanOptions): Promise<ScanResult> {
    const result = await database.scanForDuplicates(deps.prisma, options, (change) => {
      // An alert: a new cluster, or one that gained orders, is logged once, at warn, with what an
      // operator needs to find it (`orders-cli alerts`).
      deps.metrics?.alertRecorded(change.kind, change.change);
      log.warn(alertLogLine(change), {
        alertId: change.alertId,
        kind: change.kind,
        change: change.change,
        orderCount: change.orderCount,
      });
    });
    log.info('duplicate scan done', { ...result, newAlertIds: result.newAlertIds.length });
    return result;
  }

  async function purgeExpiredIdempotencyRecords(options: { retentionDays: number }): Promise<PurgeResult> {
    const result = await database.purgeExpiredRecords(deps.prisma, {
      retentionDays: options.retentionDays,
      dryRun: false,
      onProgress: (purged) => Context.current().heartbeat(purged),
    });
    log.info('idempotency records purged', { ...result });
    return result;
  }

  return { scanForDuplicateOrders, purgeExpiredIdempotencyRecords };
}
