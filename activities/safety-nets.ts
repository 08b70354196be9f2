// Activities of the scheduled safety nets: run the duplicate scan and the retention purge against
// PostgreSQL, and log what on-call must see.
import { Context, log } from '@temporalio/activity';
import { scanForDuplicates } from '../db/duplicate-scan.js';
import type { PrismaClient } from '../db/prisma-client.js';
import { purgeExpiredRecords } from '../db/retention.js';
import type { PurgeResult, ScanOptions, ScanResult } from '../domain/safety-nets.js';

export function createSafetyNetActivities(deps: { prisma: PrismaClient }) {
  async function scanForDuplicateOrders(options: ScanOptions): Promise<ScanResult> {
    const result = await scanForDuplicates(deps.prisma, options);
    for (const finding of result.findings.filter((found) => found.newAlert)) {
      // An alert: every new finding is logged once, at warn, with what an operator needs.
      log.warn(`DUPLICATE ALERT ${finding.kind}: ${finding.detail}`, {
        kind: finding.kind,
        orderNos: finding.orderNos,
        idempotencyKeys: finding.idempotencyKeys,
      });
    }
    log.info('duplicate scan done', { findings: result.findings.length, newAlerts: result.newAlerts });
    return result;
  }

  async function purgeExpiredIdempotencyRecords(options: { retentionDays: number }): Promise<PurgeResult> {
    const result = await purgeExpiredRecords(deps.prisma, {
      retentionDays: options.retentionDays,
      dryRun: false,
      onProgress: (purged) => Context.current().heartbeat(purged),
    });
    log.info('idempotency records purged', { ...result });
    return result;
  }

  return { scanForDuplicateOrders, purgeExpiredIdempotencyRecords };
}
