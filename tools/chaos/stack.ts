// The chaos run's stack: the harness's PostgreSQL and Temporal with state on disk, so both can be
// restarted as faults; the reference broker consumer; the real API; and the worker reaching the
// order store only through the fault proxy, RabbitMQ only through the broker's proxy, and a
// downstream that answers as the fault script says; and a fake Feishu whose long connection the
// API holds, with decision cards and receipts on (./feishu.ts). The order store is that PostgreSQL, or with
// `--store mysql` a database of the run's own on the MySQL/MariaDB at MYSQL_TEST_URL (the
// consumers' ledgers stay on PostgreSQL).
import type { Client } from '@temporalio/client';
import pg from 'pg';
import { listenForLostConnections } from '../../services/db/pg-connection-errors.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import type { Store } from '../../services/db/stores/store-of-url.js';
import { migratedMysqlStore } from '../harness/mysql.js';
import { connectClient } from '../../services/temporal/connection.js';
import type { ManagedProcess } from '../harness/child-process.js';
import { type Reply, startScriptedDownstream } from '../harness/scripted-downstream.js';
import { apiProcess, workerProcess } from '../harness/service-processes.js';
import { type Restartable, startStack } from '../harness/stack.js';
import { CHAOS_TIMINGS } from '../harness/timings.js';
import type { ChaosBroker } from './broker.js';
import { type ChaosFeishu, startChaosFeishu } from './feishu.js';
import { type MysqlProxy, startMysqlProxy } from './mysql-proxy.js';
import { type PgProxy, type PgProxyFaults, startPgProxy } from './pg-proxy.js';
import { seededRandom } from './prng.js';

export const WEBHOOK_SECRET = 'chaos-webhook-secret-0123456789';
const DOWNSTREAM_SECRET = 'chaos-downstream-secret-0123456789';
export const TASK_QUEUE = 'chaos';
export const SKUS = ['CHAOS-A', 'CHAOS-B', 'CHAOS-C', 'CHAOS-D', 'CHAOS-E'];

export interface ChaosStack {
  apiUrl: string;
  store: Store;
  /** A pool straight to PostgreSQL, for the consumers' ledgers. */
  admin: pg.Pool;
  /** A client straight to the order store, for the run's own reads and its lock holds. */
  orders: PrismaClient;
  client: Client;
  postgres: Restartable;
  temporal: Restartable;
  worker: ManagedProcess;
  /** The fault proxy between the worker and the order store. */
  dbProxy: PgProxy;
  /** The same proxy on MySQL, which also plays the server's restart (the machine's, not the run's). */
  mysqlProxy: MysqlProxy | undefined;
  feishu: ChaosFeishu;
  stop: () => Promise<void>;
}

export async function startChaosStack(options: {
  dataDir: string;
  seed: number;
  store: Store;
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
    // … and a restart may end one the moment it is handed out, before its user listens on it.
    listenForLostConnections(admin);
    cleanups.push(() => admin.end());
    const ordersUrl = options.store === 'mysql' ? await migratedMysqlStore(cleanups) : databaseUrl;
    const orders = createPrismaClient({ databaseUrl: ordersUrl, poolSize: 4, statementTimeoutMs: 60_000 });
    cleanups.push(() => orders.$disconnect());
    await orders.inventory.createMany({
      data: SKUS.map((sku) => ({ sku, onHand: 1_000_000 })),
      skipDuplicates: true,
    });

    const faults: PgProxyFaults = { lostCommitReply: 0.1, reset: 0.04, latency: 0.03, latencyMs: 5_000 };
    const random = seededRandom(options.seed + 1);
    const target = new URL(ordersUrl);
    const mysqlProxy =
      options.store === 'mysql'
        ? await startMysqlProxy({
            target: { host: target.hostname, port: Number(target.port || 3306) },
            random,
            faults,
          })
        : undefined;
    const dbProxy = mysqlProxy ?? (await startPgProxy({ targetPort: Number(target.port), random, faults }));
    cleanups.push(() => dbProxy.close());
    const proxied = new URL(ordersUrl);
    proxied.host = `127.0.0.1:${dbProxy.port}`;
    const downstream = await startScriptedDownstream(
      admin,
      DOWNSTREAM_SECRET,
      'chaos_consumer',
      options.downstreamReply,
    );
    cleanups.push(() => downstream.close());
    const feishu = await startChaosFeishu();
    cleanups.push(() => feishu.close());

    const env = {
      ...CHAOS_TIMINGS,
      // Not production: the scripted downstream answers on http://, and the broker's fault proxy
      // cuts into plain amqp:// with a password, both of which production refuses
      // (services/config/production-refusals.ts).
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      WEBHOOK_SECRET,
      ...feishu.settings,
    };
    // The consumer binds its queue before the worker publishes: no event of the run is unroutable.
    await options.broker.startConsumer(databaseUrl, {
      ...process.env,
      ...env,
      TEMPORAL_ADDRESS: temporalAddress,
      DOWNSTREAM_SECRET,
    });
    const api = await apiProcess({ stack, env: { ...env, DATABASE_URL: ordersUrl } });
    const worker = workerProcess({
      stack,
      entry: 'tools/chaos/worker-main.ts',
      env: {
        ...env,
        // The worker reaches the order store only through the fault proxy.
        DATABASE_URL: proxied.toString(),
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
    await feishu.fake.longConnection.connected(1);
    const client = await connectClient({ address: temporalAddress, namespace: stack.namespace });
    cleanups.push(() => client.connection.close());
    return {
      apiUrl: api.url,
      store: options.store,
      admin,
      orders,
      client,
      postgres,
      temporal,
      worker,
      dbProxy,
      mysqlProxy,
      feishu,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
