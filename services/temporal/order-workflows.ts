// The one path that starts order and compensation workflows, used by the webhook edge, the
// compensation's resubmit and (later) every other entry point. Ids are derived from the key, so
// starting twice attaches to the running workflow instead of creating a second one.
import {
  type Client,
  WithStartWorkflowOperation,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
} from '@temporalio/client';
import type { WorkflowIdReusePolicy } from '@temporalio/common';
import { compensationWorkflowIdFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import type { OrderStatus as Status } from '../../domain/order-status.js';
import {
  type CompensationInput,
  isFormOrder,
  type OrderWorkflowStart,
  type WriteOutcome,
  writeOutcomeUpdate,
} from '../../workflows/definitions.js';
import { DEFAULT_LOCAL_RETRY_THRESHOLD_MS } from '../../workflows/activity-presets.js';
import { ApprovalNo, CustomerId, IdempotencyKey, OrderStatus } from '../../workflows/search-attributes.js';

export interface StartedWorkflow {
  workflowId: string;
  /**
   * True when a closed run already holds the id and the reuse policy left it alone; false when a
   * run was started or a running one attached to.
   */
  closedRunExists: boolean;
}

function searchAttributesFor(input: OrderWorkflowStart, status: Status) {
  // An order still in its approval form has no customer yet: the run sets it once it read the form.
  return [
    { key: ApprovalNo, value: input.approvalNo },
    { key: IdempotencyKey, value: input.idempotencyKey },
    ...(isFormOrder(input) ? [] : [{ key: CustomerId, value: input.order.customerId }]),
    { key: OrderStatus, value: status },
  ];
}

function summaryOf(input: OrderWorkflowStart): string {
  if (isFormOrder(input)) {
    return `${input.operation} order for approval ${input.approvalNo}: read from its ${input.formSource.vendor} approval form`;
  }
  return `${input.operation} order for approval ${input.approvalNo}: ${input.order.customerId}, ${input.totalAmount} ${input.order.currency}, ${input.order.lines.length} line(s)`;
}

/** The order as the UI shows it (Markdown): who, when, and a table of the lines. */
function detailsOf(input: OrderWorkflowStart): string {
  if (isFormOrder(input)) {
    return [
      `The order is read from ${input.formSource.vendor} approval instance ${input.formSource.instanceId} and mapped by OA_FORM_MAPPING`,
      `Key \`${input.idempotencyKey}\``,
    ].join('\n\n');
  }
  const lines = input.order.lines.map((line) => `| ${line.sku} | ${line.quantity} | ${line.unitPrice} |`);
  return [
    `Approved ${input.approvedAt} · customer ${input.order.customerId} · total ${input.totalAmount} ${input.order.currency}`,
    `Key \`${input.idempotencyKey}\``,
    ['| SKU | quantity | unit price |', '| --- | ---: | ---: |', ...lines].join('\n'),
  ].join('\n\n');
}

/**
 * The input a new order run starts with. The local retry threshold in it tells the run to write its
 * order as a local activity (workflows/order-workflow.ts): an input from before it was there — an
 * operator's resubmit of a run recorded then — gets the default, so that every new run writes
 * locally, as every new run has since the local write.
 */
export function orderStartInput(input: OrderWorkflowStart): OrderWorkflowStart {
  if (input.policy.localRetryThresholdMs !== undefined) return input;
  return { ...input, policy: { ...input.policy, localRetryThresholdMs: DEFAULT_LOCAL_RETRY_THRESHOLD_MS } };
}

/** What an order's start carries for operators: its search attributes and the UI's summary and details. */
export function orderVisibilityFor(input: OrderWorkflowStart) {
  return {
    typedSearchAttributes: searchAttributesFor(input, 'RECEIVED'),
    staticSummary: summaryOf(input),
    staticDetails: detailsOf(input),
  };
}

/**
 * How every delivery starts `order-<key>`. `reusePolicy` decides what happens when a closed run
 * exists: the edge never starts a second run (REJECT_DUPLICATE: a redelivery never overrides an
 * operator); an operator's resubmit may replace a failed run only. A running run is attached to.
 */
function orderStartOptions(taskQueue: string, input: OrderWorkflowStart, reusePolicy: WorkflowIdReusePolicy) {
  return {
    taskQueue,
    workflowId: orderWorkflowIdFor(input.idempotencyKey),
    args: [orderStartInput(input)],
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    workflowIdReusePolicy: reusePolicy,
    ...orderVisibilityFor(input),
  };
}

/**
 * Starts `order-<key>`, or attaches to it while it runs (see `orderStartOptions`).
 *
 * `eager`: a worker of `taskQueue` runs in this process on the client's native connection, so the
 * server may answer the start with the run's first workflow task for it (eager start: no poll in
 * between). When that worker has no free slot, or the run already exists, the start is an
 * ordinary one.
 */
export async function startOrderWorkflow(
  client: Client,
  taskQueue: string,
  input: OrderWorkflowStart,
  reusePolicy: WorkflowIdReusePolicy = 'REJECT_DUPLICATE',
  { eager = false }: { eager?: boolean | undefined } = {},
): Promise<StartedWorkflow> {
  const workflowId = orderWorkflowIdFor(input.idempotencyKey);
  try {
    const handle = await client.workflow.start('orderWorkflow', {
      ...orderStartOptions(taskQueue, input, reusePolicy),
      ...(eager ? { requestEagerStart: true } : {}),
    });
    // A USE_EXISTING start answers with the running run when there is one; which delivery was
    // the first is decided in the database (services/db/idempotency-records.ts), not here.
    return { workflowId: handle.workflowId, closedRunExists: false };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { workflowId, closedRunExists: true };
    throw error;
  }
}

/** What a start that also waited for the write's outcome knows when it returns. */
export type StartWithOutcome =
  /** A run was started or attached to; `outcome` is absent when the wait ran out first. */
  | { start: 'started'; outcome?: WriteOutcome }
  /** A closed run holds the id and the reuse policy left it alone, as with `startOrderWorkflow`. */
  | { start: 'closed-run' }
  /** The call failed or the wait ran out before Temporal said whether the start happened. */
  | { start: 'unconfirmed'; cause: unknown };

/**
 * Starts `order-<key>` (or attaches to it) with the options of `startOrderWorkflow`, and sends the
 * `writeOutcome` update in the same call (Update-with-Start), waiting for it until `deadline`
 * (epoch ms). Never throws: a start Temporal did not confirm is `unconfirmed`, for the caller to
 * confirm as every start is confirmed.
 */
export async function startOrderWorkflowForOutcome(
  client: Client,
  taskQueue: string,
  input: OrderWorkflowStart,
  deadline: number,
  reusePolicy: WorkflowIdReusePolicy = 'REJECT_DUPLICATE',
): Promise<StartWithOutcome> {
  const startWorkflowOperation = new WithStartWorkflowOperation(
    'orderWorkflow',
    orderStartOptions(taskQueue, input, reusePolicy),
  );
  try {
    const outcome = await client.withDeadline(deadline, () =>
      client.workflow.executeUpdateWithStart(writeOutcomeUpdate, { startWorkflowOperation }),
    );
    return { start: 'started', outcome };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { start: 'closed-run' };
    // The operation's handle settles with the start's own answer: it is there when Temporal
    // answered the start, also when the wait for the update ran out afterwards. A deadline that
    // cut the one call short leaves it rejected: whether the start happened is then unknown.
    const started = await startWorkflowOperation.workflowHandle().then(
      () => true,
      () => false,
    );
    return started ? { start: 'started' } : { start: 'unconfirmed', cause: error };
  }
}

/** Starts `compensation-<key>` at most once while one runs; a new failure after it closed starts a new run. */
export async function startCompensationWorkflow(
  client: Client,
  taskQueue: string,
  input: CompensationInput,
): Promise<StartedWorkflow> {
  const workflowId = compensationWorkflowIdFor(input.order.idempotencyKey);
  // A compensation of an earlier failed run may still be closing (it just resubmitted the run that
  // failed now). Attaching to it would leave this failure uncompensated: wait for it to close.
  await waitForOtherCompensation(client, workflowId, input.orderRunId);
  try {
    await client.workflow.start('compensationWorkflow', {
      memo: { orderRunId: input.orderRunId },
      taskQueue,
      workflowId,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: searchAttributesFor(input.order, 'COMPENSATING'),
      staticSummary: `Compensation: ${summaryOf(input.order)}`,
      staticDetails: `${input.reasonType}: ${input.reason} (after ${input.attempts} attempt(s))`,
    });
    return { workflowId, closedRunExists: false };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { workflowId, closedRunExists: true };
    throw error;
  }
}

/** The latest run of a workflow id, or undefined when there is none (never started, or past retention). */
export async function describeIfExists(client: Client, workflowId: string) {
  try {
    return await client.workflow.getHandle(workflowId).describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}

async function waitForOtherCompensation(client: Client, workflowId: string, orderRunId: string): Promise<void> {
  const description = await describeIfExists(client, workflowId);
  if (description?.status.name !== 'RUNNING') return;
  const memo = description.memo as { orderRunId?: string } | undefined;
  if (memo?.orderRunId === orderRunId) return; // the same failure: attach to it
  await waitForRunToClose(client, workflowId, description.runId);
}

/** Resolves once the given run has closed, however it ended (failed, terminated, timed out). */
export async function waitForRunToClose(client: Client, workflowId: string, runId: string): Promise<void> {
  try {
    await client.workflow.getHandle(workflowId, runId, { followRuns: false }).result();
  } catch (error) {
    // Closed all the same, which is all we wait for. Anything else (Temporal unreachable) is
    // thrown, and the calling step's retry waits again.
    if (!(error instanceof WorkflowFailedError) && !(error instanceof WorkflowNotFoundError)) throw error;
  }
}
