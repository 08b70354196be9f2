// Turns any error thrown inside an activity into the ApplicationFailure Temporal acts on, using
// the one classification table. Retryable failures carry a jittered `nextRetryDelay`; everything
// else is non-retryable, so the retry policy never retries what the table does not allow.
import { ApplicationFailure } from '@temporalio/common';
import { jitteredBackoffMs } from '../domain/backoff.js';
import { classifyError, requestedRetryDelayMs } from '../domain/error-classification.js';
import { messageOf } from '../domain/errors.js';

export interface RetryTiming {
  initialIntervalMs: number;
  maxIntervalMs: number;
  backoffCoefficient: number;
}

export function toActivityFailure(error: unknown, attempt: number, timing?: RetryTiming): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  const classification = classifyError(error);
  const message = messageOf(error);
  const cause = error instanceof Error ? error : undefined;
  const details = [{ attempt, errorClass: classification.errorClass, why: classification.why }];
  if (!classification.retryable) {
    return ApplicationFailure.create({ type: classification.errorClass, message, nonRetryable: true, details, cause });
  }
  // A delay the failure asked for (Retry-After) wins over our own backoff, but never beyond the
  // policy's maximum interval: Temporal would take any value we pass.
  const requested = requestedRetryDelayMs(error);
  const nextRetryDelay = !timing
    ? undefined
    : requested !== undefined
      ? Math.min(Math.max(requested, 1), timing.maxIntervalMs)
      : jitteredBackoffMs(attempt, {
          initialIntervalMs: timing.initialIntervalMs,
          maximumIntervalMs: timing.maxIntervalMs,
          backoffCoefficient: timing.backoffCoefficient,
        });
  return ApplicationFailure.create({
    type: classification.errorClass,
    message,
    nonRetryable: false,
    details,
    cause,
    nextRetryDelay,
  });
}
