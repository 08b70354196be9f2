// The worker process's settings: how much work it takes at once, how long it lets running work
// finish on SIGTERM, where its prebuilt workflow bundles are, and its probe endpoints.
import { z } from 'zod';
import { bindAddressSetting, milliseconds } from '../services/config/setting-types.js';
import { deploymentFrom, type WorkerDeploymentVersion } from '../services/temporal/settings.js';

export const workerSettings = {
  WORKER_SHUTDOWN_GRACE_MS: milliseconds(10_000),
  WORKER_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(1).max(10_000).default(5),
  // Unset: what DB_POOL_SIZE leaves after the activities (worker/worker-slots.ts).
  WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: z.coerce.number().int().min(1).max(10_000).optional(),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: z.coerce.number().int().min(2).max(10_000).default(40),
  // Prebuilt workflow bundles (`npm run build` writes them to dist/workflow-bundles, where a worker
  // run from dist/ finds them unasked); unset from source: workflows/ is bundled at start.
  WORKFLOW_BUNDLE_DIR: z.string().min(1).optional(),
  // The worker process's /livez and /readyz; unset: no listener. A pod's probes need 0.0.0.0.
  WORKER_HEALTH_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  WORKER_HEALTH_HOST: bindAddressSetting,
};
type WorkerEnv = z.output<z.ZodObject<typeof workerSettings>> & Parameters<typeof deploymentFrom>[0];

export interface WorkerConfig {
  maxConcurrentActivities: number;
  /** The order writes at once; undefined = what the pool leaves (worker/worker-slots.ts). */
  maxConcurrentLocalActivities: number | undefined;
  maxConcurrentWorkflowTasks: number;
  /** After SIGTERM: how long running activities may finish before they are cancelled. */
  shutdownGraceMs: number;
  /** A directory of prebuilt workflow bundles; undefined = the shipped ones, or bundle at start. */
  bundleDir: string | undefined;
  /** The worker process's probe endpoints (`/livez`, `/readyz`); undefined = no listener. */
  health: { host: string; port: number } | undefined;
  /**
   * The Worker Deployment version every worker of the process polls as; undefined = unversioned
   * (docs/production.md, "Rolling out a release").
   */
  deployment: WorkerDeploymentVersion | undefined;
}

/** The worker's part of the configuration; its deployment version is read by services/temporal/settings.ts. */
export function workerFrom(env: WorkerEnv): WorkerConfig {
  return {
    maxConcurrentActivities: env.WORKER_MAX_CONCURRENT_ACTIVITIES,
    maxConcurrentLocalActivities: env.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
    maxConcurrentWorkflowTasks: env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
    shutdownGraceMs: env.WORKER_SHUTDOWN_GRACE_MS,
    bundleDir: env.WORKFLOW_BUNDLE_DIR,
    health: env.WORKER_HEALTH_PORT ? { host: env.WORKER_HEALTH_HOST, port: env.WORKER_HEALTH_PORT } : undefined,
    deployment: deploymentFrom(env),
  };
}
