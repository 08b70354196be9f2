// The worker's workflow bundle entry: every workflow type the task queue serves.
export { orderWorkflow } from './order-workflow.js';
export { compensationWorkflow } from './compensation-workflow.js';
export { duplicateScanWorkflow, retentionPurgeWorkflow } from './safety-net-workflows.js';
export { deliveryWorkflow } from './delivery-workflow.js';
