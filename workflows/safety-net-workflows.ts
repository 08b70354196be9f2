// The scheduled safety nets, as workflows so each run and its result are visible in the Temporal
// UI: the duplicate scan (what slipped past the key) and the retention purge of idempotency
// records. The work is in activities; these only give it a schedule, retries and a history.
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from '../activities/safety-nets.js';
import type { PurgeResult, ScanOptions, ScanResult } from '../domain/safety-nets.js';

type Activities = ReturnType<typeof activities.createSafetyNetActivities>;

const { scanForDuplicateOrders } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 3, initialInterval: '10 seconds' },
  summary: 'scan order_main for orders of one document under different keys, and near-identical orders',
});
const { purgeExpiredIdempotencyRecords } = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumAttempts: 3, initialInterval: '10 seconds' },
  summary: 'purge idempotency records past the retention window whose key an order row answers',
});

export async function duplicateScanWorkflow(options: ScanOptions): Promise<ScanResult> {
  return scanForDuplicateOrders(options);
}

export async function retentionPurgeWorkflow(options: { retentionDays: number }): Promise<PurgeResult> {
  return purgeExpiredIdempotencyRecords(options);
}
