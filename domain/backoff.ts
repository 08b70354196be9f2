// Exponential backoff with jitter. Temporal's own retry policy adds no jitter, so every retryable
// failure carries a delay computed here as `nextRetryDelay`: a batch of orders that failed
// together does not come back together (the seed's "retry storm").

export interface BackoffPolicy {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
}

/**
 * The delay before the attempt after `failedAttempt` (1-based). "Equal jitter": half the
 * exponential step is kept, the other half is random, so delays still grow attempt by attempt
 * while no two callers line up. Never above the policy's maximum interval.
 */
export function jitteredBackoffMs(
  failedAttempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const exponent = Math.max(0, failedAttempt - 1);
  const step = Math.min(policy.maximumIntervalMs, policy.initialIntervalMs * policy.backoffCoefficient ** exponent);
  const delay = step / 2 + random() * (step / 2);
  return Math.max(1, Math.min(policy.maximumIntervalMs, Math.round(delay)));
}
