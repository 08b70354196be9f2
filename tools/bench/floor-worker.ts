// The engine floor's worker process: the floor workflow and a no-op activity, with the same worker
// settings (WORKER_MAX_CONCURRENT_*) and the same runtime (logs at LOG_LEVEL) as the order worker,
// on its own task queue.
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadConfig } from '../../services/config/env.js';
import { requireSetting, runMain } from '../../services/config/process.js';
import { installTemporalRuntime } from '../../services/temporal/runtime.js';
import { FLOOR_TASK_QUEUE } from './floor.js';

await runMain('floor-worker', async (log) => {
  const config = loadConfig();
  installTemporalRuntime(config, log, { handleSignals: true });
  const connection = await NativeConnection.connect({
    address: requireSetting('TEMPORAL_ADDRESS', config.temporal.address),
  });
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: FLOOR_TASK_QUEUE,
    workflowsPath: fileURLToPath(new URL('./floor-workflows.ts', import.meta.url)),
    activities: { noop: () => Promise.resolve() },
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivities,
    maxConcurrentWorkflowTaskExecutions: config.worker.maxConcurrentWorkflowTasks,
  });
  log.info('worker polling');
  await worker.run();
  await connection.close();
});
