// The engine floor's worker process: the floor workflows and a no-op activity, with the same worker
// settings (WORKER_MAX_CONCURRENT_*) and the same runtime (logs at LOG_LEVEL) as the order worker,
// on its own task queue.
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../../app/env.js';
import { requireSetting, runMain } from '../../services/config/process.js';
import { installTemporalRuntime } from '../../services/temporal/runtime.js';
import { createFloorWorker, FLOOR_TASK_QUEUE } from './floor.js';

await runMain('floor-worker', async (log) => {
  const config = loadConfig();
  installTemporalRuntime(config, log, { handleSignals: true });
  const connection = await NativeConnection.connect({
    address: requireSetting('TEMPORAL_ADDRESS', config.temporal.address),
  });
  const worker = await createFloorWorker(connection, config, FLOOR_TASK_QUEUE);
  log.info('worker polling');
  await worker.run();
  await connection.close();
});
