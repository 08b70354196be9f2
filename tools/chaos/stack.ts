// The chaos run's stack: the harness's PostgreSQL and Temporal with state on disk, so both can be
// restarted as faults; the reference broker consumer; the real API; and the worker reaching
// PostgreSQL only through the fault proxy, RabbitMQ only through the broker's proxy, and a
// downstream that answers as the fault script says.
import type { Client } from '@temporalio/client';
import pg from 'pg';
import { connectClient } from '../../services/temporal/connection.js';
import type { ManagedProcess } from '../harness/child-process.js';
import { type Reply, startScriptedDownstream } from '../harness/scripted-downstream.js';
import { apiProcess, workerProcess } from '../harness/service-processes.js';
import { type Restartable, startStack } from '../harness/stack.js';
import { CHAOS_TIMINGS } from '../harness/timings.js';
import type { ChaosBroker } from './broker.js';
import { type PgProxy, startPgProxy } from './pg-proxy.js';
import { seededRandom } from './prng.js';

export const WEBHOOK_SECRET = 'chaos-webhook-secret-0123456789';
const DOWNSTREAM_SECRET = 'chaos-downstream-secret-0123456789';
export const TASK_QUEUE = 'chaos';
export const SKUS = ['CHAOS-A', 'CHAOS-B', 'CHAOS-C', 'CHAOS-D', 'CHAOS-E'];

export interface ChaosStack {
  apiUrl: string;
  /** A pool straight to PostgreSQL, for the run's own reads and its lock holds. */
  admin: pg.Pool;
  client: Client;
  postgres: Restartable;
  temporal: Restartable;
  worker: ManagedProcess;
  /** The PostgreSQL fault proxy between the worker and the database. */
  dbProxy: PgProxy;
  stop: () => Promise<void>;
}

export async function startChaosStack(options: {
  dataDir: string;
  seed: number;
  broker: ChaosBroker;
  /** The deliberately broken worker variant (tools/chaos/worker-main.ts). */
  broken: string | undefined;
  /** How the downstream answers each request: the downstream's faults. */
  downstreamReply: () => Reply;
}): Promise<ChaosStack> {
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    // Never DATABASE_URL or TEMPORAL_ADDRESS: the run restarts both servers, so they are its own.
    const stack = await startStack({ dataDir: options.dataDir, headless: true, persistTemporal: true });
    cleanups.push(() => stack.stop());
    const { postgres, temporal, databaseUrl, temporalAddress } = stack;
    if (!postgres || !temporal) throw new Error('the chaos run needs a PostgreSQL and a Temporal of its own');

    const admin = new pg.Pool({ connectionString: databaseUrl, max: 4 });
    admin.on('error', () => undefined); // restarts end idle connections; the pool replaces them
    cleanups.push(() => admin.end());
    await admin.query(
      `INSERT INTO inventory (sku, on_hand) SELECT unnest($1::text[]), 1000000 ON CONFLICT DO NOTHING`,
      [SKUS],
    );

    const dbPort = new URL(databaseUrl).port;
    const dbProxy = await startPgProxy({
      targetPort: Number(dbPort),
      random: seededRandom(options.seed + 1),
      faults: { lostCommitReply: 0.1, reset: 0.04, latency: 0.03, latencyMs: 5_000 },
    });
    cleanups.push(() => dbProxy.close());
    const downstream = await startScriptedDownstream(
      admin,
      DOWNSTREAM_SECRET,
      'chaos_consumer',
      options.downstreamReply,
    );
    cleanups.push(() => downstream.close());

    const env = {
      ...CHAOS_TIMINGS,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      WEBHOOK_SECRET,
    };
    // The consumer binds its queue before the worker publishes: no event of the run is unroutable.
    await options.broker.startConsumer(databaseUrl, {
      ...process.env,
      ...env,
      TEMPORAL_ADDRESS: temporalAddress,
      DOWNSTREAM_SECRET,
    });
    const api = await apiProcess({ stack, env });
    const worker = workerProcess({
      stack,
      entry: 'tools/chaos/worker-main.ts',
      env: {
        ...env,
        // The worker reaches PostgreSQL only through the fault proxy.
        DATABASE_URL: databaseUrl.replace(`:${dbPort}/`, `:${dbProxy.port}/`),
        DOWNSTREAM_URL: downstream.url,
        DOWNSTREAM_SECRET,
        // … and RabbitMQ only through the broker proxy, on an exchange of this run's own.
        AMQP_URL: options.broker.workerUrl,
        ORDER_EVENTS_EXCHANGE: options.broker.exchange,
        ...(options.broken ? { CHAOS_BROKEN: options.broken } : {}),
      },
    });
    cleanups.push(
      () => api.kill('SIGTERM'),
      () => worker.kill('SIGKILL'),
    );
    await Promise.all([api.start(), worker.start()]);
    const client = await connectClient({ address: temporalAddress, namespace: stack.namespace });
    cleanups.push(() => client.connection.close());
    return { apiUrl: api.url, admin, client, postgres, temporal, worker, dbProxy, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
