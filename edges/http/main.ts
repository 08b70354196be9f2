// The HTTP API process. Starts no embedded service; reads DATABASE_URL and TEMPORAL_ADDRESS.
import { connectorStates, loadConfig } from '../../services/config/env.js';
import { requireSetting, runMain } from '../../services/config/process.js';
import { migrate } from '../../services/db/migrate.js';
import { createPrismaClientFromConfig } from '../../services/db/prisma-client.js';
import { checkTlsHandshake, createLazyClient, temporalTargetFrom } from '../../services/temporal/connection.js';
import { installTemporalRuntime } from '../../services/temporal/runtime.js';
import { connectorsFromConfig } from '../connectors/from-config.js';
import { settleApprovalEventsInFlight } from '../../services/submission/accept-oa-event.js';
import { buildApp } from './app.js';

await runMain('api', async (log) => {
  const config = loadConfig();
  // A connector is on when its settings are present (the mapping file was read and checked above).
  log.info({ connectors: connectorStates(config) }, 'OA connectors: those off answer 404');
  const metrics = installTemporalRuntime(config, log, { handleSignals: false, onlyForMetrics: true });
  const databaseUrl = requireSetting('DATABASE_URL', config.databaseUrl);
  const target = temporalTargetFrom(config.temporal);
  // Only the API verifies webhook signatures, so only the API needs the secret.
  requireSetting('WEBHOOK_SECRET', config.webhook.secret, 'every webhook request is verified with it');
  // A TLS setting that cannot work stops the process now, before it touches the database, with
  // the variable to fix; an unreachable Temporal does not: the API starts and answers 503.
  await checkTlsHandshake(target);
  // Several API and worker processes may start together: the runner serialises them with a lock.
  const applied = await migrate(databaseUrl);
  if (applied.length > 0) log.info({ applied }, 'migrations applied');
  const prisma = createPrismaClientFromConfig(config, databaseUrl);
  const temporal = createLazyClient(target);
  let draining = false;
  const app = buildApp({
    config,
    prisma,
    temporal,
    logger: log,
    draining: () => draining,
    metrics,
    connectors: connectorsFromConfig(config.connectors),
  });

  // SIGTERM: answer 503 + Retry-After (and /healthz 503) for the drain period, so the load balancer
  // takes this instance out while nothing is refused at the socket; then stop listening, let the
  // requests in flight finish, and exit.
  const stop = async (signal: string) => {
    if (draining) return;
    draining = true;
    log.info({ signal, drainMs: config.http.drainMs }, 'draining: new requests get 503, in-flight ones finish');
    await new Promise((resolve) => setTimeout(resolve, config.http.drainMs));
    await app.close();
    // Approval events answered before their start finished: let those starts end first.
    await settleApprovalEventsInFlight(config.http.startTimeoutMs);
    await Promise.all([prisma.$disconnect(), temporal.connection.close()]);
    log.info('api stopped');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  await app.listen({ port: config.http.port, host: config.http.host });
  if (config.metrics) log.info(`metrics at http://${config.metrics.host}:${config.metrics.port}/metrics`);
});
