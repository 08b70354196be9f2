// The HTTP API process, for its entry points (app/api-main.ts), with the settings they loaded:
// needs DATABASE_URL and TEMPORAL_ADDRESS, starts no embedded service. With API_HOSTS_WORKER=1 it
// also runs the order worker (docs/architecture.md, decision 20).
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Worker } from '@temporalio/worker';
import { connectorStates } from '../../vendors/settings.js';
import { requireSetting } from '../../services/config/process.js';
import { warnOfDeprecatedSettings } from '../../services/temporal/settings.js';
import { workerSlots } from '../../worker/worker-slots.js';
import { prepareDatabase } from '../../services/db/database-at-start.js';
import { createPrismaClientFromConfig } from '../../services/db/prisma-client.js';
import {
  checkTlsHandshake,
  clientOn,
  createLazyClient,
  temporalTargetFrom,
} from '../../services/temporal/connection.js';
import { installTracing, shutdownTracing, tracingForLog } from '../../services/telemetry/tracing.js';
import { installTemporalRuntime } from '../../services/temporal/runtime.js';
import { startMetricsSampler } from '../../services/metrics/metrics-sampler.js';
import { connectWorker } from '../../worker/create-worker.js';
import { createOrderWorker, type WorkerProcessConfig } from '../../worker/run-worker.js';
import { anyOaVendorOn, connectorsFromConfig, oaVendorIds } from '../../vendors/registry.js';
import { ORDER_NAMING_DOORS } from '../../domain/door.js';
import { type OaConnectionDeps, type OaConnections, openOaConnections } from '../../vendors/connections.js';
import { approvalEventsInFlight } from '../../submission/accept-oa-event.js';
import { intakeLoad } from '../../submission/intake-load.js';
import { submissionDepsFrom } from '../../submission/submit-approval.js';
import { startUnstartedClaims } from '../../submission/unstarted-claims.js';
import { eventConnections } from '../../services/health/event-connections.js';
import {
  acceptSocketCount,
  type AcceptSockets,
  openAcceptSockets,
  portIsFree,
  reusePortOptions,
} from './accept-sockets.js';
import { type AppConfig, type AppDeps, buildApp } from './app.js';
import { capConnections, type ConnectionCaps } from './connection-caps.js';

/**
 * What the API process reads of the settings: its routes', the held OA connections', and the
 * worker process's, for the worker it may host.
 */
export type ApiConfig = AppConfig & OaConnectionDeps['config'] & WorkerProcessConfig;

/**
 * Runs the API until SIGTERM or SIGINT. `guard`: which deliveries may start their key's workflow,
 * the product's own unless a test's entry point passes another.
 */
export async function runApiProcess(
  config: ApiConfig,
  log: Logger,
  guard: Pick<AppDeps, 'startGuard'> = {},
): Promise<void> {
  warnOfDeprecatedSettings(config.temporal, (line) => log.warn(line));
  // A connector is on when its settings are present (the mapping file was read and checked above).
  log.info({ connectors: connectorStates(config) }, 'OA connectors: a callback that is off answers 404');
  const hostsWorker = config.http.hostsWorker;
  // Sockets on the port that the runtime cannot share stop the process now, with the setting to fix.
  const acceptSockets = acceptSocketCount(config.http.acceptSockets);
  // A hosted worker's slots that cannot fit the pool beside the API stop the process now.
  const slots = hostsWorker ? workerSlots(config, true) : undefined;
  // The API has its own probes: they report the worker it hosts. Said once, so that a probe aimed
  // at WORKER_HEALTH_PORT on this process is not a mystery.
  if (config.worker.health) {
    log.warn(
      { workerHealthPort: config.worker.health.port },
      hostsWorker
        ? 'WORKER_HEALTH_PORT is ignored by the API: /livez and /readyz on PORT report the worker it hosts'
        : 'WORKER_HEALTH_PORT is ignored by the API: it is for the worker process',
    );
  }
  // The API stops on its own terms (drain, then close), also the worker it hosts.
  const metrics = installTemporalRuntime(config, log, { handleSignals: false, onlyForMetrics: !hostsWorker });
  // Before any client or worker exists: they take their interceptors from it.
  if (installTracing(config.tracing, 'api'))
    log.info({ tracing: tracingForLog(config.tracing) }, 'OpenTelemetry traces exported');
  const databaseUrl = requireSetting('DATABASE_URL', config.databaseUrl);
  const target = temporalTargetFrom(config.temporal);
  // Only the API verifies webhook signatures, so only the API needs the secret.
  requireSetting('WEBHOOK_SECRET', config.webhook.secret, 'every webhook request is verified with it');
  // A TLS setting that cannot work stops the process now, before it touches the database, with
  // the variable to fix; an unreachable Temporal does not, unless the API hosts the worker: the
  // API starts and answers 503.
  await checkTlsHandshake(target);
  const prisma = createPrismaClientFromConfig(config, databaseUrl);
  await prepareDatabase({
    prisma,
    migrateWith: config.migrateOnStart ? config.migrationUrl : undefined,
    migrationLockTimeoutMs: config.migrationLockTimeoutMs,
    log,
  });
  metrics.webhookRefusalsAtZero([...ORDER_NAMING_DOORS, ...oaVendorIds()]);
  // The waiting keys only where this process runs the worker: an API alone reports its memory.
  const sampler = config.metrics
    ? startMetricsSampler({
        metrics,
        intervalMs: config.metrics.sampleIntervalMs,
        log,
        ...(hostsWorker ? { keysFrom: prisma } : {}),
      })
    : undefined;

  // Hosting the worker: one native connection for the worker and the client, which is what lets a
  // start hand the run's first workflow task straight to the worker. It connects now, like the
  // worker process does: without Temporal the process does not start.
  let hosted: { worker: Worker; running: Promise<void> } | undefined;
  let temporal: Client;
  if (slots) {
    const connection = await connectWorker(target);
    temporal = clientOn(connection, config.temporal.namespace);
    const worker = await createOrderWorker({ config, log, metrics, connection, temporal, prisma, slots });
    const running = worker.run();
    hosted = { worker, running };
    // A worker that fails for good takes the process with it: the supervisor restarts both,
    // rather than an API that accepts orders its own worker no longer runs.
    running.catch((error: unknown) => {
      log.fatal({ err: error }, 'the hosted worker failed');
      process.exit(1);
    });
  } else {
    temporal = createLazyClient(target);
  }

  let draining = false;
  // One intake for every door of the process, the connections it opens included (decision 34).
  const intake = intakeLoad({ maxInFlight: config.http.maxInFlight });
  // The approval events answered before their work ended, whichever door took them: settled at the stop.
  const approvalsInFlight = approvalEventsInFlight();
  const connections = eventConnections(metrics);
  const app = buildApp({
    config,
    prisma,
    temporal,
    logger: log,
    draining: () => draining,
    metrics,
    intake,
    approvalsInFlight,
    eventConnections: connections,
    connectors: connectorsFromConfig(config),
    ...(hosted ? { hostedWorker: hosted.worker } : {}),
    ...guard,
  });
  // Every connection the port takes counts, whichever of its sockets accepted it.
  const caps: ConnectionCaps = capConnections(app.server, config.http, log);

  // SIGTERM: answer 503 + Retry-After (and /healthz, /readyz 503) for the drain period, so the load balancer
  // takes this instance out while nothing is refused at the socket; then stop listening, let the
  // requests in flight finish, and exit. A hosted worker stops last: the workflows those requests
  // started may still be running on it, and its grace period lets their activities finish.
  // The OA connections close first, before the drain ends: the vendor then pushes to the
  // instances still connected, and an event not yet acknowledged here is pushed again there.
  let oaConnections: OaConnections | undefined;
  let extraSockets: AcceptSockets | undefined;
  // An OA connector's reply needs the claim only, so a claim may be answered before its start: one
  // that this process or another did not live to start is started here once it is old enough.
  const unstartedClaims = anyOaVendorOn(config.connectors)
    ? startUnstartedClaims({
        deps: submissionDepsFrom(config, prisma, temporal),
        afterMs: config.connectors.unstartedClaimAfterMs,
        log,
      })
    : undefined;
  const stop = async (signal: string) => {
    if (draining) return;
    draining = true;
    // No new sweep of unstarted claims while draining; the one under way ends within the start's deadline.
    const sweepStopped = unstartedClaims?.stop(config.http.startTimeoutMs);
    log.info({ signal, drainMs: config.http.drainMs }, 'draining: new requests get 503, in-flight ones finish');
    await Promise.all([
      oaConnections?.close(Math.min(config.http.drainMs, config.http.startTimeoutMs)),
      new Promise((resolve) => setTimeout(resolve, config.http.drainMs)),
    ]);
    // The port's other sockets stop with the server's own; the requests they brought in finish first.
    extraSockets?.stop();
    // What is not being answered by now — a body still arriving, headers never finished, a kept-alive
    // connection — would hold the stop until its own time ran out, past the grace period when a
    // stranger keeps many: closed, answered by nothing. A sender that was still sending sends again.
    const unanswered = caps.closeUnanswered();
    if (unanswered > 0) log.info({ connections: unanswered }, 'closed the connections not being answered');
    await app.close();
    await extraSockets?.closed();
    // Approval events answered before their start finished: let those starts end first. What is
    // left unstarted, an instance still running (or this one, restarted) starts.
    await Promise.all([sweepStopped, approvalsInFlight.settle(config.http.startTimeoutMs)]);
    if (hosted) {
      hosted.worker.shutdown();
      await hosted.running;
      log.info('worker stopped');
    }
    sampler?.stop();
    await Promise.all([prisma.$disconnect(), temporal.connection.close(), shutdownTracing()]);
    log.info('api stopped');
    process.exit(0);
  };
  // A stop that fails part way still ends the process, and says why: a silent rejection would leave
  // it running half stopped.
  const stopOrExit = (signal: string) =>
    stop(signal).catch((error: unknown) => {
      log.fatal({ err: error }, 'the API did not stop cleanly');
      process.exit(1);
    });
  process.on('SIGINT', () => void stopOrExit('SIGINT'));
  process.on('SIGTERM', () => void stopOrExit('SIGTERM'));

  const { port, host } = config.http;
  if (acceptSockets > 1) await portIsFree(host, port);
  await app.listen(acceptSockets > 1 ? reusePortOptions(host, port) : { port, host });
  // A stop begun while the port opened has passed the point where it stops these: stop them here.
  const sockets = await openAcceptSockets(app.server, acceptSockets, (error) =>
    log.error({ err: error }, 'a listening socket of the port failed; the others go on accepting'),
  );
  if (draining) sockets.stop();
  else extraSockets = sockets;
  if (acceptSockets > 1) log.info({ acceptSockets }, 'new connections are accepted on several sockets of the port');
  if (!draining) {
    oaConnections = openOaConnections({
      config,
      prisma,
      temporal,
      metrics,
      intake,
      approvalsInFlight,
      log,
      connections,
    });
  }
  if (config.metrics) log.info(`metrics at http://${config.metrics.host}:${config.metrics.port}/metrics`);
}
