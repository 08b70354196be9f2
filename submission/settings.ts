// The start path's settings: the retry policy and timeout ladder every order write is started with.
import { z } from 'zod';
import { milliseconds } from '../services/config/setting-types.js';

export const writePolicySettings = {
  RETRY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(3),
  RETRY_INITIAL_INTERVAL_MS: milliseconds(500),
  RETRY_MAX_INTERVAL_MS: milliseconds(30_000),
  RETRY_BACKOFF_COEFFICIENT: z.coerce.number().min(1).max(10).default(2),
  RETRY_LOCAL_THRESHOLD_MS: milliseconds(5_000),
  DB_STATEMENT_TIMEOUT_MS: milliseconds(2_000),
  ACTIVITY_START_TO_CLOSE_MS: milliseconds(5_000),
  ACTIVITY_SCHEDULE_TO_CLOSE_MS: milliseconds(60_000),
  COMPENSATION_DECISION_TIMEOUT_MS: milliseconds(7 * 24 * 3600 * 1000),
};
type WritePolicyEnv = z.output<z.ZodObject<typeof writePolicySettings>>;

/** The retry policy and timeout ladder of the order write, in one place. */
export interface WritePolicy {
  maxAttempts: number;
  initialIntervalMs: number;
  maxIntervalMs: number;
  backoffCoefficient: number;
  /** The write runs as a local activity: a backoff longer than this is a timer, not a wait in the worker. */
  localRetryThresholdMs: number;
  statementTimeoutMs: number;
  startToCloseMs: number;
  scheduleToCloseMs: number;
  decisionTimeoutMs: number;
}

/**
 * What the start path reads of the process's settings (app/env.ts composes them out of each part's
 * own): the task queue its workflows start on, the policy they carry, and the start's deadline.
 */
export interface SubmissionConfig {
  temporal: { taskQueue: string };
  writePolicy: WritePolicy;
  http: { startTimeoutMs: number };
}

export function writePolicyFrom(env: WritePolicyEnv): WritePolicy {
  return {
    maxAttempts: env.RETRY_MAX_ATTEMPTS,
    initialIntervalMs: env.RETRY_INITIAL_INTERVAL_MS,
    maxIntervalMs: env.RETRY_MAX_INTERVAL_MS,
    backoffCoefficient: env.RETRY_BACKOFF_COEFFICIENT,
    localRetryThresholdMs: env.RETRY_LOCAL_THRESHOLD_MS,
    statementTimeoutMs: env.DB_STATEMENT_TIMEOUT_MS,
    startToCloseMs: env.ACTIVITY_START_TO_CLOSE_MS,
    scheduleToCloseMs: env.ACTIVITY_SCHEDULE_TO_CLOSE_MS,
    decisionTimeoutMs: env.COMPENSATION_DECISION_TIMEOUT_MS,
  };
}

/**
 * The write's own rungs of the timeout ladder (docs/architecture.md, decision 6), inner < outer,
 * and a backoff that does not start above its cap; the rungs across parts are app/env.ts's.
 */
export function writePolicyProblems(env: WritePolicyEnv): string[] {
  const problems: string[] = [];
  if (env.DB_STATEMENT_TIMEOUT_MS >= env.ACTIVITY_START_TO_CLOSE_MS) {
    problems.push('DB_STATEMENT_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS');
  }
  if (env.ACTIVITY_START_TO_CLOSE_MS >= env.ACTIVITY_SCHEDULE_TO_CLOSE_MS) {
    problems.push('ACTIVITY_START_TO_CLOSE_MS: must be below ACTIVITY_SCHEDULE_TO_CLOSE_MS');
  }
  if (env.ACTIVITY_SCHEDULE_TO_CLOSE_MS >= env.COMPENSATION_DECISION_TIMEOUT_MS) {
    problems.push('ACTIVITY_SCHEDULE_TO_CLOSE_MS: must be below COMPENSATION_DECISION_TIMEOUT_MS');
  }
  if (env.RETRY_INITIAL_INTERVAL_MS > env.RETRY_MAX_INTERVAL_MS) {
    problems.push('RETRY_INITIAL_INTERVAL_MS: must not exceed RETRY_MAX_INTERVAL_MS');
  }
  return problems;
}
