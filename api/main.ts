// The HTTP API process. Starts no embedded service; reads DATABASE_URL and TEMPORAL_ADDRESS.
import { loadConfig } from '../config/env.js';
import { requireSetting, runMain } from '../config/process.js';
import { migrate } from '../db/migrate.js';
import { createPrismaClientFromConfig } from '../db/prisma-client.js';
import { checkTlsHandshake, createLazyClient, temporalTargetFrom } from '../temporal/connection.js';
import { buildApp } from './app.js';

await runMain('api', async (log) => {
  const config = loadConfig();
  const databaseUrl = requireSetting('DATABASE_URL', config.databaseUrl);
  const target = temporalTargetFrom(config.temporal);
  requireSetting('WEBHOOK_SECRET', config.webhook.secret);
  // Several API and worker processes may start together: the runner serialises them with a lock.
  const applied = await migrate(databaseUrl);
  if (applied.length > 0) log.info({ applied }, 'migrations applied');
  const prisma = createPrismaClientFromConfig(config, databaseUrl);
  // A TLS setting that cannot work stops the process now, with the variable to fix; an unreachable
  // Temporal does not: the API starts and answers 503 + Retry-After until it is back.
  await checkTlsHandshake(target);
  const temporal = createLazyClient(target);
  const app = buildApp({ config, prisma, temporal, logger: log });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: no new requests, finishing in-flight ones');
    await app.close();
    await Promise.all([prisma.$disconnect(), temporal.connection.close()]);
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  await app.listen({ port: config.http.port, host: config.http.host });
});
