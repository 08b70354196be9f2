// Wires a Temporal worker: the workflow bundle, the activities and their dependencies.
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { type ActivityDeps, createActivities } from '../activities/index.js';
import type { DownstreamConfig } from '../activities/settings.js';
import type { BrokerConfig } from '../services/broker/settings.js';
import type { WorkerSlots } from './worker-slots.js';
import { createOrderEventPublisher } from '../services/broker/order-event-publisher.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import { ActivityFailureMetrics } from '../services/metrics/activity-failure-metrics.js';
import { noProductMetrics, type ProductMetrics } from '../services/metrics/product-metrics.js';
import { connectionOptions, type TemporalTarget } from '../services/temporal/connection.js';
import type { WorkerDeploymentVersion } from '../services/temporal/settings.js';
import { workerTracing } from '../services/telemetry/tracing.js';
import type { WorkflowCode } from './workflow-bundle.js';
import { WriteSlots } from './write-slots.js';

/** The worker's native connection; the TLS settings were checked when the process connected its client. */
export async function connectWorker(target: TemporalTarget): Promise<NativeConnection> {
  return NativeConnection.connect(connectionOptions(target));
}

export interface WorkerDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  prisma: PrismaClient;
  temporal: Client;
  downstream?: DownstreamConfig | undefined;
  /** The broker order events are published to; its connection closes when the worker stops. */
  broker?: BrokerConfig | undefined;
  /** The OA approval readers and the form mapping, for orders whose content is an approval form. */
  readers?: ActivityDeps['readers'];
  formMapping?: ActivityDeps['formMapping'];
  /** The vendors whose chat gets decision cards, and how often a card looks at its key; none by default. */
  decisionCardSenders?: ActivityDeps['decisionCardSenders'];
  decisionCardLookEveryMs?: ActivityDeps['decisionCardLookEveryMs'];
  /** TEMPORAL_UI_URL: the cards link their key's workflow there (in this worker's namespace). */
  temporalUiUrl?: string | undefined;
  /** The vendors whose approvals get their order's receipt; none by default. */
  receiptPosters?: ActivityDeps['receiptPosters'];
  /** Where the product's metrics go; none by default. */
  metrics?: ProductMetrics;
  /** Replaces or wraps activities; tests use it to put real faults in front of real ones. */
  activities?: (real: ReturnType<typeof createActivities>, deps: ActivityDeps) => object;
  /** How much runs at once: bounded by the process's pool (worker/worker-slots.ts). */
  slots: WorkerSlots;
  options?: Partial<WorkerOptions>;
  /**
   * The Worker Deployment version this worker polls as (TEMPORAL_DEPLOYMENT_NAME, TEMPORAL_BUILD_ID);
   * undefined = unversioned.
   */
  deployment?: WorkerDeploymentVersion | undefined;
  /** The workflow code (`workflowCode()`: the prebuilt bundle, or workflows/ bundled at start). */
  workflows: WorkflowCode;
}

/**
 * Worker Deployment Versioning: each workflow type declares whether its runs stay on the build that
 * started them or move to the current one (workflows/versioning-behaviours.ts). The default only
 * covers a type that forgot to: pinned never replays a run on code it did not start with.
 */
function versioned(version: WorkerDeploymentVersion): NonNullable<WorkerOptions['workerDeploymentOptions']> {
  return { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' };
}

export async function createWorker(deps: WorkerDeps): Promise<Worker> {
  const metrics = deps.metrics ?? noProductMetrics();
  // Connects at the first publish, not here: a worker starts whether or not the broker is up.
  const publisher = deps.broker ? createOrderEventPublisher(deps.broker) : undefined;
  const activityDeps = {
    prisma: deps.prisma,
    temporal: deps.temporal,
    taskQueue: deps.taskQueue,
    downstream: deps.downstream,
    publisher,
    metrics,
    readers: deps.readers ?? {},
    formMapping: deps.formMapping,
    decisionCardSenders: deps.decisionCardSenders,
    decisionCardLookEveryMs: deps.decisionCardLookEveryMs,
    decisionCardTemporalUi: deps.temporalUiUrl ? { url: deps.temporalUiUrl, namespace: deps.namespace } : undefined,
    receiptPosters: deps.receiptPosters,
  };
  const real = createActivities(activityDeps);
  const tracing = workerTracing();
  const writeSlots = new WriteSlots(deps.slots.localActivities);
  const worker = await Worker.create({
    connection: deps.connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    workflowBundle: deps.workflows,
    activities: deps.activities ? deps.activities(real, activityDeps) : real,
    interceptors: {
      activity: [
        // Outermost: a write counts as running until it has returned, whatever Temporal decided.
        (context) =>
          context.info.isLocal ? { inbound: { execute: (input, next) => writeSlots.track(() => next(input)) } } : {},
        ...(tracing?.interceptors.activity ?? []),
        () => ({ inbound: new ActivityFailureMetrics(metrics) }),
      ],
    },
    ...(tracing ? { sinks: tracing.sinks } : {}),
    ...(deps.deployment ? { workerDeploymentOptions: versioned(deps.deployment) } : {}),
    tuner: {
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: deps.slots.workflowTasks },
      activityTaskSlotSupplier: { type: 'fixed-size', numSlots: deps.slots.activities },
      localActivityTaskSlotSupplier: writeSlots,
      // No Nexus operations run here; the SDK's default.
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
    },
    ...deps.options,
  });
  if (publisher) {
    // Whoever runs the worker also closes the broker connection, by the end of run(): after the
    // shutdown's grace period no activity publishes any more.
    const run = worker.run.bind(worker);
    worker.run = () => run().finally(() => publisher.close());
  }
  return worker;
}
