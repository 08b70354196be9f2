// The order workflow: one per idempotency key (id `order-<key>`). An order still in its OA approval
// form is read and mapped first (docs/architecture.md, decision 17). It writes the order under the
// classified retry policy, then tells the downstream (when one is configured) with the same key.
// When the write fails for good it hands the key to the compensation workflow and fails fast — it
// never guesses and never writes twice. When the delivery fails for good, the order stands and an
// operator decides: redeliver (same key, same event id) or mark it handled.
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { ACTIVITY_TIMEOUT } from '../domain/error-classification.js';
import { canTransition, type OrderStatus as Status } from '../domain/order-status.js';
import type * as activities from '../activities/index.js';
import {
  approvalFormRead,
  compensationStart,
  compensationStep,
  downstreamDelivery,
  localOrderWrite,
  orderWrite,
} from './activity-presets.js';
import {
  DELIVERY_DECISIONS,
  type DecisionRequest,
  decideUpdate,
  type FormOrderWorkflowInput,
  isFormOrder,
  type OrderResult,
  type OrderState,
  type OrderWorkflow,
  type OrderWorkflowInput,
  type OrderWorkflowStart,
  type OrderWriteResult,
  orderStateQuery,
  writeOutcomeUpdate,
} from './definitions.js';
import { CustomerId, OrderStatus } from './search-attributes.js';

type Activities = ReturnType<typeof activities.createActivities>;

/**
 * The patch that once marked the runs writing their order as a local activity. Runs recorded while
 * it was called carry its marker (and a `TemporalChangeVersion` upsert), and their replay calls it
 * again to match them; a new run no longer records it. The name is in those histories: never change it.
 */
export const LOCAL_ACTIVITY_WRITE = 'order-write-as-local-activity';

/**
 * Whether this run writes its order as a local activity. A new run is told by its input: every
 * start since the write became local carries the local retry threshold, which came with it
 * (services/temporal/order-workflows.ts fills it into an older input it starts again); a run
 * recorded before has none and replays the activity task it scheduled. Deciding records nothing: a
 * patch would cost every order a marker and a search-attribute upsert, and the server a visibility
 * update (docs/architecture.md, decision 45). A replay asks the patch first: a run recorded while it
 * was called has its marker and wrote locally whatever its input says, and the call must meet the
 * marker; in a history without it the call records nothing and answers false.
 */
function writesAsLocalActivity(start: OrderWorkflowStart): boolean {
  if (workflowInfo().unsafe.isReplaying && patched(LOCAL_ACTIVITY_WRITE)) return true;
  return start.policy.localRetryThresholdMs !== undefined;
}

export async function orderWorkflow(start: OrderWorkflowStart): Promise<OrderResult> {
  // The key comes in as input and is used as is: no layer below the edge derives a key.
  const key = start.idempotencyKey;
  const state: OrderState = { idempotencyKey: key, status: 'RECEIVED', attempts: 0 };
  // Delivery decisions: one at a time; an update returns once its decision was carried out.
  let decision: DecisionRequest | undefined;
  let decisionsTaken = 0;
  let decisionsCarriedOut = 0;
  let decisionWindowClosed = false;
  // From the moment a delivery has failed for good until the run holds DELIVERY_FAILED, the record
  // may already say DELIVERY_FAILED: an operator who reads it and decides is heard, not refused.
  let deliveryFailing = false;
  // The order itself: given, or read from its approval form by the first step.
  let input: OrderWorkflowInput | undefined = isFormOrder(start) ? undefined : start;
  // What the Temporal UI shows as the run's current details, kept with the status.
  const showState = () => setCurrentDetails(orderDetails(state, start, input));
  // The run's own copy of the status (query, search attribute) moves along the same transition
  // table as the record (domain/order-status.ts); a move outside it is logged, never acted on.
  const setStatus = (status: Status) => {
    if (!canTransition(state.status, status)) {
      log.warn('status change outside the transition table', { idempotencyKey: key, from: state.status, to: status });
    }
    state.status = status;
    upsertSearchAttributes([{ key: OrderStatus, value: status }]);
    showState();
    log.info('order status', { idempotencyKey: key, status });
  };
  showState();

  setHandler(orderStateQuery, () => state);
  setHandler(writeOutcomeUpdate, async () => {
    await condition(() => state.status !== 'RECEIVED');
    return {
      idempotencyKey: key,
      status: state.status,
      attempts: state.attempts,
      ...(state.orderId ? { orderId: state.orderId } : {}),
      ...(state.orderNo ? { orderNo: state.orderNo } : {}),
      ...(state.lastError ? { lastError: state.lastError } : {}),
    };
  });
  setHandler(
    decideUpdate,
    async (request) => {
      const ticket = ++decisionsTaken;
      decision = request;
      await condition(() => decisionsCarriedOut >= ticket);
      return { idempotencyKey: key, status: state.status };
    },
    {
      validator: (request: DecisionRequest) => {
        if (!(DELIVERY_DECISIONS as readonly string[]).includes(request.decision)) {
          throw new Error(`decision must be one of ${DELIVERY_DECISIONS.join(', ')} for an order workflow`);
        }
        const awaiting = state.status === 'DELIVERY_FAILED' || deliveryFailing;
        if (!awaiting || decisionsTaken > decisionsCarriedOut || decisionWindowClosed) {
          throw new Error(`nothing to decide: status is ${state.status}`);
        }
      },
    },
  );

  log.info('order workflow started', { idempotencyKey: key });
  const { startCompensation } = proxyActivities<Activities>({
    ...compensationStart,
    summary: `hand ${key} to compensation-${key}`,
  });

  const toWrite: OrderWorkflowInput = isFormOrder(start) ? await readForm(start) : start;

  // Each activity carries a one-line summary the UI shows in the event history.
  const lines = `${toWrite.order.lines.length} line(s)`;
  const writeSummary = `write ${key}: header, ${lines}, stock reservation in one transaction`;
  const { writeOrder } = writesAsLocalActivity(start)
    ? proxyLocalActivities<Activities>({ ...localOrderWrite(toWrite.policy), summary: writeSummary })
    : proxyActivities<Activities>({ ...orderWrite(toWrite.policy), summary: writeSummary });
  const { deliverOrderEvent } = proxyActivities<Activities>({
    ...downstreamDelivery(toWrite.policy),
    summary: `send order.created to the downstream, Idempotency-Key ${key}`,
  });
  const { recordDeliveryOutcome } = proxyActivities<Activities>({
    ...compensationStep,
    summary: 'record how the delivery ended',
  });
  let written: OrderWriteResult;
  try {
    written = await writeOrder(toWrite);
  } catch (error) {
    return await failIntoCompensation(error, toWrite);
  }
  Object.assign(state, { attempts: written.attempt, orderId: written.orderId, orderNo: written.orderNo });
  setStatus('SUBMITTED');

  if (written.deliveryConfigured) {
    await deliver(written);
  }
  // A handler still running (a caller waiting on writeOutcome) is waited for; asked only then, which
  // spares every other order a condition and the promises it makes, each with its stack trace.
  if (!allHandlersFinished()) await condition(allHandlersFinished);
  return { ...written, finalStatus: state.status };

  /** The first step of an order still in its approval form: read and map it, or compensate. */
  async function readForm(form: FormOrderWorkflowInput): Promise<OrderWorkflowInput> {
    const { readApprovalForm } = proxyActivities<Activities>({
      ...approvalFormRead(form.policy),
      summary: `read ${form.formSource.vendor} approval ${form.formSource.instanceId} and map its form`,
    });
    let read: OrderWorkflowInput;
    try {
      read = await readApprovalForm(form);
    } catch (error) {
      // A form that does not map (or an instance not approved) fails like a write that failed for
      // good: compensation, with the reason as the last error.
      return await failIntoCompensation(error, form);
    }
    input = read;
    upsertSearchAttributes([{ key: CustomerId, value: read.order.customerId }]);
    showState();
    return read;
  }

  async function failIntoCompensation(error: unknown, failed: OrderWorkflowStart): Promise<never> {
    const failure = describeActivityFailure(error, failed.policy.maxAttempts);
    Object.assign(state, { attempts: failure.attempts, lastError: `${failure.type}: ${failure.message}` });
    showState();
    // Fail fast into compensation: it reconciles (did the order land after all?) and waits for
    // an operator. Started through an activity with a conflict policy, because a child workflow
    // would ignore it — compensation must exist at most once per key.
    await startCompensation({
      order: failed,
      orderRunId: workflowInfo().runId,
      reasonType: failure.type,
      reason: failure.message,
      attempts: failure.attempts,
    });
    setStatus('COMPENSATING');
    // A caller waiting for the outcome (writeOutcome) hears COMPENSATING before the run fails.
    await condition(allHandlersFinished);
    throw ApplicationFailure.nonRetryable(
      `order ${key} was not written (${failure.type}: ${failure.message}); compensation started`,
      'OrderWriteFailed',
      { reasonType: failure.type, attempts: failure.attempts },
    );
  }

  async function deliver(order: OrderWriteResult): Promise<void> {
    for (;;) {
      const carrying = decisionsTaken; // the redelivery this attempt carries out, if any
      try {
        await deliverOrderEvent({ order: toWrite, written: order });
        setStatus('DELIVERED');
      } catch (error) {
        const failure = describeActivityFailure(error, toWrite.policy.maxAttempts);
        state.lastError = `${failure.type}: ${failure.message}`;
        showState();
        deliveryFailing = true;
        const recorded = await recordDeliveryOutcome({
          idempotencyKey: key,
          status: 'DELIVERY_FAILED',
          lastError: state.lastError,
        });
        // An earlier attempt was acknowledged and recorded, only its completion got lost.
        setStatus(recorded === 'DELIVERED' ? 'DELIVERED' : 'DELIVERY_FAILED');
        deliveryFailing = false;
      }
      if (state.status === 'DELIVERED') {
        // Delivered: a decision heard while the failure was being recorded has nothing left to do.
        decisionsCarriedOut = decisionsTaken;
        return;
      }
      decisionsCarriedOut = carrying; // a decision heard meanwhile is the next one to carry out

      // The order stands; only telling the downstream failed. Wait (bounded) for an operator.
      const decided = await condition(() => decision !== undefined, toWrite.policy.decisionTimeoutMs);
      const made = decision;
      decision = undefined;
      // A decision that arrived together with the end of the window is still carried out.
      if (!made) {
        decisionWindowClosed = !decided;
        return;
      }
      log.info('delivery decision', { idempotencyKey: key, decision: made.decision, decidedBy: made.decidedBy });
      if (made.decision === 'mark-handled') {
        await recordDeliveryOutcome({ idempotencyKey: key, status: 'DELIVERED', decidedBy: made.decidedBy });
        setStatus('DELIVERED');
        decisionsCarriedOut = decisionsTaken;
        return;
      }
      // redeliver: the same event — same key, same event id — once more under the same policy.
    }
  }
}

/** The run's current details in the UI (Markdown): where the order stands and why. */
function orderDetails(state: OrderState, start: OrderWorkflowStart, input: OrderWorkflowInput | undefined): string {
  const rows = [
    input
      ? `**${state.status}** — ${input.operation} of approval ${input.approvalNo}, ${input.totalAmount} ${input.order.currency}`
      : `**${state.status}** — ${start.operation} of approval ${start.approvalNo}, read from its approval form`,
    state.orderNo ? `order ${state.orderNo} (written on attempt ${state.attempts})` : undefined,
    state.lastError ? `last error: ${state.lastError}` : undefined,
    state.status === 'DELIVERY_FAILED' ? 'waiting for an operator: `redeliver` or `mark-handled`' : undefined,
    state.status === 'COMPENSATING' ? `compensation-${state.idempotencyKey} decides what happens next` : undefined,
  ];
  return rows.filter((row) => row !== undefined).join('\n\n');
}

interface ActivityFailureSummary {
  type: string;
  message: string;
  attempts: number;
}

/**
 * What a failed step reports. An activity task's failure is an ActivityFailure around its cause; a
 * local activity's (the write) is the cause itself — the ApplicationFailure the activity threw, or
 * the TimeoutFailure of its attempt.
 */
function describeActivityFailure(error: unknown, maxAttempts: number): ActivityFailureSummary {
  const wrapped = error instanceof ActivityFailure;
  const cause = wrapped ? error.cause : error;
  const exhausted = wrapped && error.retryState === 'MAXIMUM_ATTEMPTS_REACHED';
  if (cause instanceof ApplicationFailure) {
    const detail = cause.details?.[0] as { attempt?: number } | undefined;
    return {
      type: cause.type ?? 'Error',
      message: cause.message,
      attempts: detail?.attempt ?? (exhausted ? maxAttempts : 1),
    };
  }
  if (cause instanceof TimeoutFailure) {
    const retryState = wrapped ? `; retry state ${error.retryState ?? 'unknown'}` : '';
    return {
      type: ACTIVITY_TIMEOUT,
      message: `the attempt timed out (${cause.timeoutType ?? 'timeout'})${retryState}`,
      attempts: exhausted ? maxAttempts : 0,
    };
  }
  if (!wrapped) {
    return { type: 'Unknown', message: error instanceof Error ? error.message : String(error), attempts: 0 };
  }
  return {
    type: error.cause?.name ?? 'Error',
    message: error.cause?.message ?? error.message,
    attempts: exhausted ? maxAttempts : 0,
  };
}

// The signature clients type their calls by (definitions.ts), checked against the function.
const _signature: OrderWorkflow = orderWorkflow;
