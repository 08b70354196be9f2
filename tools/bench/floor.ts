// The engine floor's task queues and worker, shared by its edge, its worker process and the
// benchmark. The floor worker process polls FLOOR_TASK_QUEUE; the floor edge hosts a worker of
// its own on EAGER_FLOOR_TASK_QUEUE, on the connection its client uses, to start workflows eagerly.
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker } from '@temporalio/worker';
import type { Config } from '../../app/env.js';

export const FLOOR_TASK_QUEUE = 'bench-floor';
export const EAGER_FLOOR_TASK_QUEUE = 'bench-floor-eager';

/** The floor workflows and a no-op activity, with the order worker's slot settings (WORKER_MAX_CONCURRENT_*). */
export function createFloorWorker(connection: NativeConnection, config: Config, taskQueue: string): Promise<Worker> {
  return Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue,
    workflowsPath: fileURLToPath(new URL('./floor-workflows.ts', import.meta.url)),
    activities: { noop: () => Promise.resolve() },
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivities,
    maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTasks,
  });
}
