// The worker's workflow bundle entry: every workflow type the task queue serves, each with its
// versioning behaviour declared (versioning-behaviours.ts).
export { orderWorkflow } from './order-workflow.js';
export { compensationWorkflow } from './compensation-workflow.js';
export { duplicateScanWorkflow, retentionPurgeWorkflow } from './safety-net-workflows.js';
export { deliveryWorkflow } from './delivery-workflow.js';
export { decisionCardScanWorkflow, decisionCardWorkflow } from './decision-card-workflows.js';
export { approvalReceiptScanWorkflow, approvalReceiptWorkflow } from './approval-receipt-workflows.js';
import './versioning-behaviours.js';
