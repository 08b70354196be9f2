// Build B of the rollout test (test/integration/worker-versioning.test.ts): the shipped workflows,
// with one change to the order workflow — a new first step — behind patched(), as a change to an
// auto-upgrading workflow must be (docs/production.md, "Rolling out a release").
import { patched, sleep } from '@temporalio/workflow';
import type { OrderResult, OrderWorkflowStart } from '../../../workflows/definitions.js';
import { orderWorkflow as shippedOrderWorkflow } from '../../../workflows/order-workflow.js';
import { declareVersioningBehaviour } from '../../../workflows/versioning-behaviours.js';
import { NEW_STEP_MS, ROLLOUT_CHANGE } from './change.js';

// Every other workflow type as shipped; the order workflow below takes the place of the shipped one.
export * from '../../../workflows/index.js';

export async function orderWorkflow(start: OrderWorkflowStart): Promise<OrderResult> {
  // A run that started on build A and moves here replays without the marker and skips the step.
  if (patched(ROLLOUT_CHANGE)) await sleep(NEW_STEP_MS);
  return shippedOrderWorkflow(start);
}
declareVersioningBehaviour('orderWorkflow', orderWorkflow);
