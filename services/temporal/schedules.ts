// The safety nets' Temporal Schedules, created (or brought up to date) by every worker at start:
// idempotent, so any number of workers may start at once. Schedule ids carry the task queue, so
// deployments that share a namespace keep their own.
import { type Client, ScheduleAlreadyRunning, type ScheduleOptions } from '@temporalio/client';
import type { DatabaseConfig } from '../db/settings.js';

export const duplicateScanScheduleId = (taskQueue: string) => `duplicate-scan-${taskQueue}`;
export const retentionScheduleId = (taskQueue: string) => `idempotency-retention-${taskQueue}`;
export const decisionCardsScheduleId = (taskQueue: string) => `decision-cards-${taskQueue}`;
export const approvalReceiptsScheduleId = (taskQueue: string) => `approval-receipts-${taskQueue}`;

/** Scan a day back on every run: a run missed while the cluster was down is covered by the next. */
const SCAN_LOOKBACK_MINUTES = 24 * 60;

/**
 * The schedules: the duplicate scan and the retention purge always; with `withDecisionCards` (some
 * vendor's chat gets cards), the scan that starts a card for every key waiting for a person; with
 * `withApprovalReceipts` (some vendor takes receipts), the scan that starts each order's receipt.
 */
export function safetyNetSchedules(
  config: Pick<DatabaseConfig, 'retentionDays' | 'safetyNets'> & {
    temporal: { taskQueue: string };
    withDecisionCards?: boolean;
    withApprovalReceipts?: boolean;
  },
): ScheduleOptions[] {
  const { taskQueue } = config.temporal;
  const cards: ScheduleOptions[] = config.withDecisionCards
    ? [
        {
          scheduleId: decisionCardsScheduleId(taskQueue),
          spec: { intervals: [{ every: '1 minute' }] },
          action: { type: 'startWorkflow', workflowType: 'decisionCardScanWorkflow', taskQueue, args: [] },
          policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
          memo: { purpose: 'a decision card in the configured chats for every key that waits for a person' },
        },
      ]
    : [];
  const receipts: ScheduleOptions[] = config.withApprovalReceipts
    ? [
        {
          scheduleId: approvalReceiptsScheduleId(taskQueue),
          spec: { intervals: [{ every: '1 minute' }] },
          action: { type: 'startWorkflow', workflowType: 'approvalReceiptScanWorkflow', taskQueue, args: [] },
          policies: { overlap: 'SKIP', catchupWindow: '1 minute' },
          memo: { purpose: "each approval's order number written back into the approval, once" },
        },
      ]
    : [];
  return [
    ...cards,
    ...receipts,
    {
      scheduleId: duplicateScanScheduleId(taskQueue),
      spec: { intervals: [{ every: `${config.safetyNets.scanIntervalMinutes} minutes` }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'duplicateScanWorkflow',
        taskQueue,
        args: [
          {
            lookbackMinutes: SCAN_LOOKBACK_MINUTES,
            nearWindowMinutes: config.safetyNets.nearDuplicateWindowMinutes,
          },
        ],
      },
      policies: { overlap: 'SKIP', catchupWindow: '10 minutes' },
      memo: { purpose: 'orders sharing an approval and operation under different keys; near-identical orders' },
    },
    {
      scheduleId: retentionScheduleId(taskQueue),
      spec: { intervals: [{ every: '1 day' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'retentionPurgeWorkflow',
        taskQueue,
        args: [{ retentionDays: config.retentionDays }],
      },
      policies: { overlap: 'SKIP', catchupWindow: '1 hour' },
      memo: { purpose: `purge idempotency records older than ${config.retentionDays} days` },
    },
  ];
}

/** Creates the schedules, or updates them to the current configuration. Returns their ids. */
export async function ensureSafetyNetSchedules(client: Client, schedules: ScheduleOptions[]): Promise<string[]> {
  for (const options of schedules) {
    try {
      await client.schedule.create(options);
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
      await client.schedule.getHandle(options.scheduleId).update((previous) => ({
        ...previous,
        spec: options.spec,
        action: options.action,
        policies: { ...previous.policies, ...options.policies },
      }));
    }
  }
  return schedules.map((options) => options.scheduleId);
}
