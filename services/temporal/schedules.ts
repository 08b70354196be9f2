// The safety nets' Temporal Schedules, created (or brought up to date) by every worker at start:
// idempotent, so any number of workers may start at once. Schedule ids carry the task queue, so
// deployments that share a namespace keep their own.
import { type Client, ScheduleAlreadyRunning, type ScheduleOptions } from '@temporalio/client';
import type { DatabaseConfig } from '../db/settings.js';

export const duplicateScanScheduleId = (taskQueue: string) => `duplicate-scan-${taskQueue}`;
export const retentionScheduleId = (taskQueue: string) => `idempotency-retention-${taskQueue}`;

/** Scan a day back on every run: a run missed while the cluster was down is covered by the next. */
const SCAN_LOOKBACK_MINUTES = 24 * 60;

export function safetyNetSchedules(
  config: Pick<DatabaseConfig, 'retentionDays' | 'safetyNets'> & { temporal: { taskQueue: string } },
): ScheduleOptions[] {
  const { taskQueue } = config.temporal;
  return [
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
