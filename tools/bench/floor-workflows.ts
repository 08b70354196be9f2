// The engine floor's workflow bundle: one workflow with one no-op activity — the same shape as an
// order (start, one workflow task, one activity, one workflow task to complete) with no database.
// With `visible`, it also does what an order does for operators: an activity summary and the
// OrderStatus search attribute moved on once the activity is done.
import { proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { OrderStatus } from '../../workflows/search-attributes.js';

export async function floorWorkflow(options: { visible?: boolean } = {}): Promise<void> {
  const { noop } = proxyActivities<{ noop: () => Promise<void> }>({
    startToCloseTimeout: '10 seconds',
    ...(options.visible ? { summary: 'no-op standing in for the order write' } : {}),
  });
  await noop();
  if (options.visible) upsertSearchAttributes([{ key: OrderStatus, value: 'SUBMITTED' }]);
}
