// One way of running the service for the burst and soak modes, on a stack of its own: the API
// beside a worker process (the default deployment), or the API hosting the order worker
// (API_HOSTS_WORKER=1). Each shape gets fresh state — its own embedded PostgreSQL and Temporal dev
// server, or a new database on DATABASE_URL's server and a task queue of its own on TEMPORAL_ADDRESS —
// so one shape's backlog, records and caches never reach the other's figures.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ManagedProcess } from '../harness/child-process.js';
import { apiProcess, pollingTaskQueue, workerProcess } from '../harness/service-processes.js';
import { freePort } from '../harness/ports.js';
import { givenServers, startStack } from '../harness/stack.js';
import { loadConfig } from '../../app/env.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { connectClient } from '../../services/temporal/connection.js';
import { SKUS } from './approvals.js';

export const SHAPES = ['worker-process', 'hosting'] as const;
export type ShapeName = (typeof SHAPES)[number];

/** How the normal bench names the shape in its results (docs/bench/results.json). */
export const STEADY_NAME: Record<ShapeName, string> = {
  hosting: 'ours',
  'worker-process': 'ours (worker process)',
};
export const SHAPE_TITLE: Record<ShapeName, string> = {
  hosting: 'API hosting the worker',
  'worker-process': 'API beside a worker process',
};

export interface ShapeOptions {
  run: string;
  secret: string;
  dbPoolSize: number;
  /** Workflow task slots of the API hosting the worker (the normal bench's, so the steady rate compares). */
  eagerSlots: string;
  /** More settings for the API and the worker: a vendor door's connector and reader. */
  env?: Record<string, string>;
}

export interface RunningShape {
  name: ShapeName;
  url: string;
  /** The processes the shape started, by name, for the samplers. */
  pids: Record<string, () => number | undefined>;
  prisma: PrismaClient;
  settings: { startTimeoutMs: number; workflowTaskSlots: number; dbPoolSize: number };
  stop: () => Promise<void>;
}

export async function startShape(name: ShapeName, options: ShapeOptions): Promise<RunningShape> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `orders-bench-${name}-`));
  // As root, PostgreSQL runs as its own user, which must reach the data folder.
  chmodSync(dataDir, 0o755);
  const cleanups: (() => Promise<unknown>)[] = [
    () => Promise.resolve(rmSync(dataDir, { recursive: true, force: true })),
  ];
  const stop = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const given = givenServers();
    const stack = await startStack({
      dataDir,
      ...given,
      ...(given.databaseUrl ? { freshDatabase: true } : {}),
      namespace: 'default',
      headless: true,
    });
    cleanups.push(() => stack.stop());
    const taskQueue = `bench-${options.run}-${name}`;
    const base = {
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_TASK_QUEUE: taskQueue,
      WEBHOOK_SECRET: options.secret,
      DB_POOL_SIZE: String(options.dbPoolSize),
      ...options.env,
      ...(name === 'hosting' ? { WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: options.eagerSlots } : {}),
    };
    // The sender's timeout is the service's start deadline as configured (its default unless the
    // bench's environment sets it); the API gets the same value explicitly, so the two cannot drift.
    const config = loadConfig(base);
    const env = { ...base, WEBHOOK_START_TIMEOUT_MS: String(config.http.startTimeoutMs) };
    const livez = (port: number) => async () => (await fetch(`http://127.0.0.1:${port}/livez`)).ok;
    // LOG_LEVEL=warn keeps per-request logging out of the figures: readiness is probed, not read.
    const port = await freePort();
    const api = await apiProcess({
      env,
      port,
      ready: livez(port),
      hostsWorker: name === 'hosting',
      name: `api (${name})`,
    });
    const processes: Record<string, ManagedProcess> = { [name === 'hosting' ? 'api hosting the worker' : 'api']: api };
    if (name === 'worker-process') {
      const temporal = await connectClient({ address: stack.temporalAddress, namespace: 'default' });
      cleanups.push(() => temporal.connection.close());
      processes.worker = workerProcess({
        env,
        ready: pollingTaskQueue(temporal, taskQueue),
      });
    }
    for (const managed of Object.values(processes)) cleanups.push(() => managed.kill('SIGTERM'));
    await api.start();
    await processes.worker?.start();

    const prisma = createPrismaClient({ databaseUrl: stack.databaseUrl, poolSize: 2, statementTimeoutMs: 30_000 });
    cleanups.push(() => prisma.$disconnect());
    await prisma.inventory.createMany({
      data: SKUS.map((sku) => ({ sku, onHand: 1_000_000_000 })),
      skipDuplicates: true,
    });
    return {
      name,
      url: api.url,
      pids: Object.fromEntries(Object.entries(processes).map(([label, managed]) => [label, () => managed.pid()])),
      prisma,
      settings: {
        startTimeoutMs: config.http.startTimeoutMs,
        workflowTaskSlots: config.worker.maxConcurrentWorkflowTasks,
        dbPoolSize: options.dbPoolSize,
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
