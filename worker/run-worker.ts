// The worker process's body, shared by `app/worker-main.ts` and harnesses that wrap activities: with
// the settings its entry point loaded, migrates, connects and polls until SIGINT/SIGTERM.
// `createOrderWorker` is the wiring itself, also used by the API process when it hosts the worker
// (API_HOSTS_WORKER).
import type { Client } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { DecisionCardsConfig, DownstreamConfig } from '../activities/settings.js';
import { brokerAddress, type BrokerConfig } from '../services/broker/settings.js';
import type { DatabaseConfig } from '../services/db/settings.js';
import type { MetricsConfig } from '../services/metrics/settings.js';
import type { TracingConfig } from '../services/telemetry/settings.js';
import type { WritePolicy } from '../submission/settings.js';
import { requireSetting } from '../services/config/process.js';
import { type TemporalConfig, warnOfDeprecatedSettings } from '../services/temporal/settings.js';
import { type WorkerSlots, workerSlots } from './worker-slots.js';
import { prepareDatabase } from '../services/db/database-at-start.js';
import { createPrismaClientFromConfig, type PrismaClient } from '../services/db/prisma-client.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import { connectClient, temporalTargetFrom } from '../services/temporal/connection.js';
import { installTemporalRuntime } from '../services/temporal/runtime.js';
import { startMetricsSampler } from '../services/metrics/metrics-sampler.js';
import { installTracing, shutdownTracing, tracingForLog, tracingOn } from '../services/telemetry/tracing.js';
import { redactUrl } from '../domain-node/redact-url.js';
import { ensureSafetyNetSchedules, safetyNetSchedules } from '../services/temporal/schedules.js';
import { ensureSearchAttributes } from '../services/temporal/search-attributes.js';
import { connectWorker, createWorker, type WorkerDeps } from './create-worker.js';
import { describeWorkflowCode, workflowCode } from './workflow-bundle.js';
import { decisionCardSendersFromConfig, readersFromConfig, receiptPostersFromConfig } from '../vendors/registry.js';
import { type ConnectorsConfig, connectorStates } from '../vendors/settings.js';
import { serveWorkerProbes } from './probes.js';
import type { WorkerConfig } from './settings.js';

/**
 * How long after the shutdown grace a stopping worker gives up on activities that ignore their
 * cancellation and exits 1: an orchestrator's termination grace must outlast both.
 */
export const FORCED_STOP_AFTER_GRACE_MS = 5_000;

/** What the order worker reads of the settings, each part's own (app/env.ts composes them). */
export type OrderWorkerConfig = Pick<DatabaseConfig, 'retentionDays' | 'safetyNets'> & {
  temporal: TemporalConfig;
  worker: WorkerConfig;
  writePolicy: WritePolicy;
  metrics: MetricsConfig | undefined;
  downstream: DownstreamConfig | undefined;
  broker: BrokerConfig | undefined;
  connectors: ConnectorsConfig;
  decisionCards: DecisionCardsConfig;
};

/** What the worker process reads: the order worker's, the database's and the traces'. */
export type WorkerProcessConfig = OrderWorkerConfig & DatabaseConfig & { tracing: TracingConfig | undefined };

export interface OrderWorkerHost {
  config: OrderWorkerConfig;
  log: Logger;
  metrics: ProductMetrics;
  /** The worker polls on this connection; a client built on it can start workflows eagerly for it. */
  connection: NativeConnection;
  /** The activities' client (a compensation starts workflows, a delivery decision signals). */
  temporal: Client;
  prisma: PrismaClient;
  activities?: WorkerDeps['activities'];
  /** What the worker runs at once, checked against the pool when the process started. */
  slots: WorkerSlots;
}

/**
 * The order worker with the process's settings, after the namespace's search attributes and the
 * safety-net schedules are in place. Runs nothing yet: the caller runs it and shuts it down.
 */
export async function createOrderWorker(host: OrderWorkerHost): Promise<Worker> {
  const { config, log } = host;
  try {
    const added = await ensureSearchAttributes(host.temporal, config.temporal.namespace);
    if (added.length > 0) log.info({ added }, 'search attributes registered');
  } catch (error) {
    // Temporal Cloud namespaces are configured in its console, not through the operator API.
    log.warn({ err: error }, 'could not check the custom search attributes; register them if workflows fail to start');
  }
  const decisionCardSenders = decisionCardSendersFromConfig(config.connectors);
  const receiptPosters = receiptPostersFromConfig(config.connectors);
  try {
    const schedules = await ensureSafetyNetSchedules(
      host.temporal,
      safetyNetSchedules({
        ...config,
        withDecisionCards: decisionCardSenders.size > 0,
        withApprovalReceipts: receiptPosters.size > 0,
      }),
    );
    log.info({ schedules }, 'safety-net schedules in place');
  } catch (error) {
    log.warn({ err: error }, 'could not create the safety-net schedules (duplicate scan, retention purge)');
  }
  const { slots } = host;
  const workflows = await workflowCode({ traced: tracingOn(), dir: config.worker.bundleDir });
  const worker = await createWorker({
    workflows,
    connection: host.connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    prisma: host.prisma,
    temporal: host.temporal,
    downstream: config.downstream,
    broker: config.broker,
    metrics: host.metrics,
    readers: readersFromConfig(config.connectors, config.writePolicy),
    decisionCardSenders,
    receiptPosters,
    decisionCardLookEveryMs: config.decisionCards.lookEveryMs,
    temporalUiUrl: config.decisionCards.temporalUiUrl,
    formMapping: config.connectors.formMapping?.file,
    ...(host.activities ? { activities: host.activities } : {}),
    deployment: config.worker.deployment,
    slots,
    options: {
      // SIGTERM: stop polling, give running activities the grace period, then cancel them (their
      // attempt fails and is retried elsewhere, safe by key); exit for certain a little later.
      shutdownGraceTime: config.worker.shutdownGraceMs,
      shutdownForceTime: config.worker.shutdownGraceMs + FORCED_STOP_AFTER_GRACE_MS,
    },
  });
  log.info(
    {
      taskQueue: config.temporal.taskQueue,
      address: config.temporal.address,
      ...(config.temporal.profile
        ? { temporalProfile: `${config.temporal.profile.name} in ${config.temporal.profile.file}` }
        : {}),
      slots,
      workflows: describeWorkflowCode(workflows),
      deployment: config.worker.deployment
        ? `${config.worker.deployment.deploymentName}, build ${config.worker.deployment.buildId}`
        : 'unversioned (no TEMPORAL_DEPLOYMENT_NAME / TEMPORAL_BUILD_ID)',
      metrics: config.metrics ? `http://${config.metrics.host}:${config.metrics.port}/metrics` : 'off',
      downstream: config.downstream ? redactUrl(config.downstream.url) : 'none',
      broker: config.broker ? `${brokerAddress(config.broker)}, exchange ${config.broker.exchange}` : 'none',
      delivery: config.downstream || config.broker ? 'on' : 'off (no DOWNSTREAM_URL or AMQP_URL: step skipped)',
      connectors: connectorStates(config),
    },
    'worker polling',
  );
  return worker;
}

export async function runWorkerProcess(
  config: WorkerProcessConfig,
  log: Logger,
  activities?: WorkerDeps['activities'],
): Promise<void> {
  // Slots that cannot fit the pool stop the process now, not after it migrated and connected.
  const slots = workerSlots(config, false);
  warnOfDeprecatedSettings(config.temporal, (line) => log.warn(line));
  const metrics = installTemporalRuntime(config, log, { handleSignals: true });
  // Before the client and the worker exist: they take their interceptors from it.
  if (installTracing(config.tracing, 'worker'))
    log.info({ tracing: tracingForLog(config.tracing) }, 'OpenTelemetry traces exported');
  const databaseUrl = requireSetting('DATABASE_URL', config.databaseUrl);
  const target = temporalTargetFrom(config.temporal);
  // Before the slow part of the start, so that liveness answers through it; readiness waits for the worker.
  const probes = config.worker.health ? await serveWorkerProbes({ ...config.worker.health, log }) : undefined;
  // Connecting the client first checks the TLS settings (connectClient's handshake check), so a
  // setting that cannot work stops the worker before it touches the database.
  const temporal = await connectClient(target);
  const prisma = createPrismaClientFromConfig(config, databaseUrl);
  await prepareDatabase({
    prisma,
    migrateWith: config.migrateOnStart ? config.migrationUrl : undefined,
    migrationLockTimeoutMs: config.migrationLockTimeoutMs,
    log,
  });
  // The process that runs the worker reports the waiting keys (docs/operations.md, "Metrics").
  const sampler = config.metrics
    ? startMetricsSampler({ metrics, intervalMs: config.metrics.sampleIntervalMs, log, keysFrom: prisma })
    : undefined;
  const connection = await connectWorker(target);
  const worker = await createOrderWorker({
    config,
    log,
    metrics,
    connection,
    temporal,
    prisma,
    slots,
    ...(activities ? { activities } : {}),
  });
  probes?.watch({ worker, prisma, temporal });
  // The SDK shuts the worker down on SIGINT/SIGTERM: it stops polling (readiness is 503 from that
  // moment) and lets running activities finish within the grace period, then run() resolves.
  await worker.run();
  sampler?.stop();
  await Promise.all([
    probes?.close(),
    prisma.$disconnect(),
    connection.close(),
    temporal.connection.close(),
    shutdownTracing(),
  ]);
  log.info('worker stopped');
}
