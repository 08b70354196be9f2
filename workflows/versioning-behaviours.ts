// Which build a running workflow follows once a new build of the workers is made current (Worker
// Deployment Versioning, on when TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_BUILD_ID are set). Decided
// here for every workflow type, and why (docs/architecture.md, decision 29):
//
// - PINNED: the run stays on the build that started it, so a change needs no patched(); the old
//   build's workers must keep polling until its pinned runs have closed. Only for short runs.
// - AUTO_UPGRADE: the run moves to the current build at its next workflow task, so a change to its
//   code needs patched() and a replay fixture; the old build's workers can stop at once.
import type { VersioningBehavior, WorkflowDefinitionOptions } from '@temporalio/common';
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { approvalReceiptScanWorkflow, approvalReceiptWorkflow } from './approval-receipt-workflows.js';
import { compensationWorkflow } from './compensation-workflow.js';
import { decisionCardScanWorkflow, decisionCardWorkflow } from './decision-card-workflows.js';
import { deliveryWorkflow } from './delivery-workflow.js';
import { orderWorkflow } from './order-workflow.js';
import { duplicateScanWorkflow, retentionPurgeWorkflow } from './safety-net-workflows.js';

export const VERSIONING_BEHAVIOURS = {
  // Waits up to the decision window (7 days) in DELIVERY_FAILED: pinned, it would hold its build's
  // workers for a week after every deploy.
  orderWorkflow: 'AUTO_UPGRADE',
  // Waits up to the decision window (7 days) for an operator: the same reason.
  compensationWorkflow: 'AUTO_UPGRADE',
  // One delivery decision: closes within the delivery's schedule-to-close and two record steps.
  deliveryWorkflow: 'PINNED',
  // Each scheduled run is bounded by its activity's timeouts; the next run starts on the current build.
  duplicateScanWorkflow: 'PINNED',
  retentionPurgeWorkflow: 'PINNED',
  // Bounded by its one activity, like the other scheduled runs.
  decisionCardScanWorkflow: 'PINNED',
  // Holds its card for as long as its key waits (days): the same reason as the order workflow's.
  decisionCardWorkflow: 'AUTO_UPGRADE',
  // Bounded by its one activity, like the other scheduled runs.
  approvalReceiptScanWorkflow: 'PINNED',
  // Retries its post for up to 3½ hours through a vendor's outage: pinned, it would hold its
  // build's workers that long after a deploy.
  approvalReceiptWorkflow: 'AUTO_UPGRADE',
} as const satisfies Record<string, VersioningBehavior>;

export type WorkflowType = keyof typeof VERSIONING_BEHAVIOURS;

/**
 * Declares its behaviour on the workflow function the bundle exports as `type`, to a versioned
 * worker only: the server refuses a workflow task completion that names a behaviour from a worker
 * without a deployment version, so an unversioned worker would never complete one. Asked when a run
 * is set up on a worker, which is when the worker's version is known.
 */
export function declareVersioningBehaviour(type: WorkflowType, workflow: (...args: never[]) => Promise<unknown>): void {
  setWorkflowOptions(() => definitionOptionsFor(type, workflowInfo().currentDeploymentVersion), workflow);
}

/**
 * The behaviour of `type` for a worker of `version`; none for a worker outside a deployment (an
 * unversioned worker still reports a build id, its bundle's checksum, but no deployment name).
 */
export function definitionOptionsFor(
  type: WorkflowType,
  version: { deploymentName?: string } | undefined,
): WorkflowDefinitionOptions {
  return version?.deploymentName ? { versioningBehavior: VERSIONING_BEHAVIOURS[type] } : {};
}

declareVersioningBehaviour('orderWorkflow', orderWorkflow);
declareVersioningBehaviour('compensationWorkflow', compensationWorkflow);
declareVersioningBehaviour('deliveryWorkflow', deliveryWorkflow);
declareVersioningBehaviour('duplicateScanWorkflow', duplicateScanWorkflow);
declareVersioningBehaviour('retentionPurgeWorkflow', retentionPurgeWorkflow);
declareVersioningBehaviour('decisionCardScanWorkflow', decisionCardScanWorkflow);
declareVersioningBehaviour('decisionCardWorkflow', decisionCardWorkflow);
declareVersioningBehaviour('approvalReceiptScanWorkflow', approvalReceiptScanWorkflow);
declareVersioningBehaviour('approvalReceiptWorkflow', approvalReceiptWorkflow);
