// The broken build B: the same new first step as build-b-workflows.ts, without patched(). A run
// that started on build A and moves here cannot replay its history.
import { sleep } from '@temporalio/workflow';
import type { OrderResult, OrderWorkflowStart } from '../../../workflows/definitions.js';
import { orderWorkflow as shippedOrderWorkflow } from '../../../workflows/order-workflow.js';
import { declareVersioningBehaviour } from '../../../workflows/versioning-behaviours.js';
import { NEW_STEP_MS } from './change.js';

// Every other workflow type as shipped; the order workflow below takes the place of the shipped one.
export * from '../../../workflows/index.js';

export async function orderWorkflow(start: OrderWorkflowStart): Promise<OrderResult> {
  await sleep(NEW_STEP_MS);
  return shippedOrderWorkflow(start);
}
declareVersioningBehaviour('orderWorkflow', orderWorkflow);
