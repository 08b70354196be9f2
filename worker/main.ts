// The worker process: polls the task queue and runs workflows and activities. Starts no embedded
// service; reads DATABASE_URL and TEMPORAL_ADDRESS from the environment.
import { loadConfig } from '../config/env.js';
import { migrate } from '../db/migrate.js';
import { createPrismaClientFromConfig } from '../db/prisma-client.js';
import { ensureSearchAttributes } from '../temporal/search-attributes.js';
import { connectClient } from '../temporal/connection.js';
import { connectWorker, createWorker } from './create-worker.js';
import { requireSetting, runMain } from '../config/process.js';

await runMain('worker', async (log) => {
  const config = loadConfig();
  const databaseUrl = requireSetting('DATABASE_URL', config.databaseUrl);
  const address = requireSetting('TEMPORAL_ADDRESS', config.temporal.address);
  const target = { address, namespace: config.temporal.namespace };
  const applied = await migrate(databaseUrl);
  if (applied.length > 0) log.info({ applied }, 'migrations applied');
  const prisma = createPrismaClientFromConfig(config, databaseUrl);
  const [connection, temporal] = await Promise.all([connectWorker(target), connectClient(target)]);
  try {
    const added = await ensureSearchAttributes(temporal, config.temporal.namespace);
    if (added.length > 0) log.info({ added }, 'search attributes registered');
  } catch (error) {
    // Temporal Cloud namespaces are configured in its console, not through the operator API.
    log.warn({ err: error }, 'could not check the custom search attributes; register them if workflows fail to start');
  }
  const worker = await createWorker({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    prisma,
    temporal,
    downstream: config.downstream,
  });
  log.info(
    {
      taskQueue: config.temporal.taskQueue,
      address,
      downstream: config.downstream?.url ?? 'none (delivery step skipped)',
    },
    'worker polling',
  );
  // The SDK shuts the worker down on SIGINT/SIGTERM: it stops polling and lets running
  // activities finish within the grace period, then run() resolves.
  await worker.run();
  await Promise.all([prisma.$disconnect(), connection.close(), temporal.connection.close()]);
  log.info('worker stopped');
});
