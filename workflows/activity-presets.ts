// Activity options by intent, with the timeout ladder in one screen (docs/architecture.md, decision 6):
//
//   DB statement timeout  <  orderWrite start-to-close  <  orderWrite schedule-to-close (all
//   attempts)  <  compensation decision window
//
// The config module refuses a ladder that is upside down. The retry policy here is the only retry
// layer in the system; which failures it may retry is decided by domain/error-classification.ts
// (an unclassified failure is thrown as non-retryable, so this policy never sees it).
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import type { WritePolicyInput } from './definitions.js';

/** The order write: few, jittered attempts, then compensation. */
export function orderWrite(policy: WritePolicyInput): ActivityOptions {
  return {
    startToCloseTimeout: policy.startToCloseMs,
    scheduleToCloseTimeout: policy.scheduleToCloseMs,
    retry: {
      maximumAttempts: policy.maxAttempts,
      initialInterval: policy.initialIntervalMs,
      backoffCoefficient: policy.backoffCoefficient,
      maximumInterval: policy.maxIntervalMs,
    },
  };
}

/** Where the write's backoff turns from a wait inside the workflow task into a timer, by default. */
export const DEFAULT_LOCAL_RETRY_THRESHOLD_MS = 5_000;

/**
 * The order write as a local activity, run inside the workflow task that decided it: the same
 * timeouts, attempts and jittered backoff (the failure's `nextRetryDelay`) as `orderWrite`. A
 * backoff longer than the local retry threshold is a durable timer instead of a wait in the worker.
 * A worker that dies after the commit and before the task completes runs the write again on
 * another worker; the insert-first write finds its order (docs/architecture.md, decision 18).
 */
export function localOrderWrite(policy: WritePolicyInput): LocalActivityOptions {
  return {
    ...orderWrite(policy),
    localRetryThreshold: policy.localRetryThresholdMs ?? DEFAULT_LOCAL_RETRY_THRESHOLD_MS,
  };
}

/**
 * Reading an approval form from an OA's open API: the same attempts and backoff as the write. A
 * read changes nothing, so what the classification table calls transient (5xx, 429, no answer) is
 * retried; a refusal or a form that does not map goes to compensation at once.
 */
export function approvalFormRead(policy: WritePolicyInput): ActivityOptions {
  return orderWrite(policy);
}

/**
 * Telling the downstream: the same attempts and backoff as the write. Each attempt's HTTP timeout
 * (DOWNSTREAM_TIMEOUT_MS) sits below start-to-close; a 429's Retry-After becomes the next delay,
 * capped at the maximum interval.
 */
export function downstreamDelivery(policy: WritePolicyInput): ActivityOptions {
  return orderWrite(policy);
}

/**
 * Compensation steps and workflow starts. Each step is idempotent (keyed by the idempotency key),
 * so retrying one is always safe; they retry longer than the write because giving up here leaves
 * an order nobody looks after.
 */
export const compensationStep: Readonly<ActivityOptions> = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: { maximumAttempts: 10, initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
};

/**
 * Handing a failed write to compensation: retried until it succeeds. Giving up here would leave a
 * failed order with nobody looking after it, so there is no overall deadline.
 */
export const compensationStart: Readonly<ActivityOptions> = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
};
