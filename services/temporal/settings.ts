// Temporal's settings: where Temporal is and how to reach it (Temporal's own names, read by
// services/config/temporal-settings.ts), the task queue the service's work runs on, and the Worker
// Deployment version its workers poll as.
import { z } from 'zod';
import {
  type TemporalConnectionConfig,
  temporalConnectionFrom,
  temporalSettingsShape,
} from '../config/temporal-settings.js';

export const temporalSettings = {
  // Where Temporal is and how to reach it: Temporal's own names (services/config/temporal-settings.ts).
  ...temporalSettingsShape,
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('order-submission'),
  // Worker Deployment Versioning (docs/production.md, "Rolling out a release"); both or neither.
  TEMPORAL_DEPLOYMENT_NAME: z.string().min(1).max(255).optional(),
  TEMPORAL_BUILD_ID: z.string().min(1).max(255).optional(),
};
type TemporalSettingsEnv = z.output<z.ZodObject<typeof temporalSettings>>;

export interface TemporalConfig extends TemporalConnectionConfig {
  /** The service's own: the task queue the worker polls and every start uses. */
  taskQueue: string;
}

/** A build of the workers within their Worker Deployment (TEMPORAL_DEPLOYMENT_NAME, TEMPORAL_BUILD_ID). */
export interface WorkerDeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/**
 * The connection (`env` parsed, `source` as given, empty values dropped) and the task queue;
 * problems are added to `problems`, each naming the setting.
 */
export function temporalFrom(
  env: TemporalSettingsEnv,
  source: Record<string, string>,
  problems: string[],
): TemporalConfig {
  return { ...temporalConnectionFrom(env, source, problems), taskQueue: env.TEMPORAL_TASK_QUEUE };
}

/** The Worker Deployment version every worker of the process polls as; undefined = unversioned. */
export function deploymentFrom(
  env: Pick<TemporalSettingsEnv, 'TEMPORAL_DEPLOYMENT_NAME' | 'TEMPORAL_BUILD_ID'>,
): WorkerDeploymentVersion | undefined {
  return env.TEMPORAL_DEPLOYMENT_NAME && env.TEMPORAL_BUILD_ID
    ? { deploymentName: env.TEMPORAL_DEPLOYMENT_NAME, buildId: env.TEMPORAL_BUILD_ID }
    : undefined;
}

// One without the other would run unversioned workers beside versioned ones without saying so.
export function deploymentProblems(
  env: Pick<TemporalSettingsEnv, 'TEMPORAL_DEPLOYMENT_NAME' | 'TEMPORAL_BUILD_ID'>,
): string[] {
  if (Boolean(env.TEMPORAL_DEPLOYMENT_NAME) === Boolean(env.TEMPORAL_BUILD_ID)) return [];
  return [
    env.TEMPORAL_DEPLOYMENT_NAME
      ? 'TEMPORAL_BUILD_ID: required with TEMPORAL_DEPLOYMENT_NAME (a versioned worker needs its build id)'
      : 'TEMPORAL_DEPLOYMENT_NAME: required with TEMPORAL_BUILD_ID (a build id belongs to a Worker Deployment)',
  ];
}
