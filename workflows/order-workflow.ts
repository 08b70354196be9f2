// The order workflow: one per idempotency key (id `order-<key>`). It writes the order under the
// classified retry policy and, when the write fails for good, hands the key to the compensation
// workflow and fails fast — it never guesses and never writes twice.
import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  setHandler,
  TimeoutFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { OrderStatus as Status } from '../domain/order-status.js';
import type * as activities from '../activities/index.js';
import { compensationStep, orderWrite } from './activity-presets.js';
import { type OrderState, type OrderWorkflowInput, type OrderWriteResult, orderStateQuery } from './definitions.js';
import { OrderStatus } from './search-attributes.js';

type Activities = ReturnType<typeof activities.createActivities>;

export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWriteResult> {
  // The key comes in as input and is used as is: no layer below the edge derives a key.
  const state: OrderState = { idempotencyKey: input.idempotencyKey, status: 'RECEIVED', attempts: 0 };
  setHandler(orderStateQuery, () => state);
  const setStatus = (status: Status) => {
    state.status = status;
    upsertSearchAttributes([{ key: OrderStatus, value: status }]);
  };

  const { writeOrder } = proxyActivities<Activities>(orderWrite(input.policy));
  const { startCompensation } = proxyActivities<Activities>(compensationStep);

  try {
    const result = await writeOrder(input);
    Object.assign(state, { attempts: result.attempt, orderId: result.orderId, orderNo: result.orderNo });
    setStatus('SUBMITTED');
    return result;
  } catch (error) {
    const failure = describeWriteFailure(error, input.policy.maxAttempts);
    Object.assign(state, { attempts: failure.attempts, lastError: `${failure.type}: ${failure.message}` });
    // Fail fast into compensation: it reconciles (did the order land after all?) and waits for
    // an operator. Started through an activity with a conflict policy, because a child workflow
    // would ignore it — compensation must exist at most once per key.
    await startCompensation({
      order: input,
      orderRunId: workflowInfo().runId,
      reasonType: failure.type,
      reason: failure.message,
      attempts: failure.attempts,
    });
    setStatus('COMPENSATING');
    throw ApplicationFailure.nonRetryable(
      `order ${input.idempotencyKey} was not written (${failure.type}: ${failure.message}); compensation started`,
      'OrderWriteFailed',
      { reasonType: failure.type, attempts: failure.attempts },
    );
  }
}

interface WriteFailure {
  type: string;
  message: string;
  attempts: number;
}

function describeWriteFailure(error: unknown, maxAttempts: number): WriteFailure {
  if (!(error instanceof ActivityFailure)) {
    return { type: 'Unknown', message: error instanceof Error ? error.message : String(error), attempts: 0 };
  }
  const exhausted = error.retryState === 'MAXIMUM_ATTEMPTS_REACHED';
  const cause = error.cause;
  if (cause instanceof ApplicationFailure) {
    const detail = cause.details?.[0] as { attempt?: number } | undefined;
    return {
      type: cause.type ?? 'Error',
      message: cause.message,
      attempts: detail?.attempt ?? (exhausted ? maxAttempts : 1),
    };
  }
  if (cause instanceof TimeoutFailure) {
    return {
      type: 'ActivityTimeout',
      message: `the write timed out (${cause.timeoutType ?? 'timeout'}); retry state ${error.retryState ?? 'unknown'}`,
      attempts: exhausted ? maxAttempts : 0,
    };
  }
  return {
    type: cause?.name ?? 'Error',
    message: cause?.message ?? error.message,
    attempts: exhausted ? maxAttempts : 0,
  };
}
