// The engine floor's workflow bundle: one workflow with one no-op activity — the same shape as an
// order (start, one workflow task, one activity, one workflow task to complete) with no database.
import { proxyActivities } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop: () => Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export async function floorWorkflow(): Promise<void> {
  await noop();
}
