// The engine floor's workflow bundle, three yardsticks of what the engine itself costs:
// - floorWorkflow: one no-op activity — the same shape as an order (start, one workflow task, one
//   activity, one workflow task to complete) with no database. With `visible`, it also does what an
//   order does for operators: an activity summary and the OrderStatus search attribute moved on
//   once the activity is done;
// - floorLocalActivityWorkflow: the same no-op as a local activity, run inside the first workflow
//   task (no activity task of its own);
// - emptyWorkflow: nothing at all, the engine's ceiling when started eagerly.
import { proxyActivities, proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { OrderStatus } from '../../workflows/search-attributes.js';

interface FloorActivities {
  noop: () => Promise<void>;
}

export async function floorWorkflow(options: { visible?: boolean } = {}): Promise<void> {
  const { noop } = proxyActivities<FloorActivities>({
    startToCloseTimeout: '10 seconds',
    ...(options.visible ? { summary: 'no-op standing in for the order write' } : {}),
  });
  await noop();
  if (options.visible) upsertSearchAttributes([{ key: OrderStatus, value: 'SUBMITTED' }]);
}

export async function floorLocalActivityWorkflow(): Promise<void> {
  const { noop } = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' });
  await noop();
}

export async function emptyWorkflow(): Promise<void> {
  // The engine's ceiling: a run that only starts and completes.
}
