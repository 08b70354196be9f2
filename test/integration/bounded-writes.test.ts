// A worker never runs more order writes than its pool can serve (docs/architecture.md, decision
// 30): a burst of approvals on a worker whose pool is two connections to a slow database. Every
// write waits for a slot, none for a connection, so none runs out its attempt. Real Temporal, real
// PostgreSQL behind the PostgreSQL proxy of the chaos run; the worker runs in this process, so
// the test reads its pool's counts for the whole burst.
//
// The arithmetic. ACTIVITY_START_TO_CLOSE_MS = 10000, so a write's transaction may take 2000 ms to
// start — a pooled connection and its BEGIN — and 6000 ms to run (transactionTimers in
// activities/order-write.ts: 20 %, and 80 % less those 20 %, of start-to-close);
// DB_STATEMENT_TIMEOUT_MS = 1500 is also the pool's own connection wait. The proxy holds every
// COMMIT's reply back for 2500 ms, so every write holds its connection for at least 2500 ms, and its
// BEGIN and statements are not slowed.
// - A write that finds a free connection: a few statements and the 2500 ms COMMIT, inside its
//   6000 ms transaction and its 10000 ms attempt — it commits on its first attempt, with about
//   3.5 s to spare, and 2 s to get its connection and BEGIN: room for a loaded machine (the proxy
//   runs in this process, beside the worker, and shares its event loop).
// - A write that queues: in a burst the writes arrive together, 2 of them take the pool's 2
//   connections and the others queue; the first connection comes free at least 2500 ms later,
//   past the 2000 ms a transaction may take to start, so every queued attempt fails (DatabaseBusy)
//   — they wait longer than the pool's own 1500 ms as well. The retries meet the same
//   queue, and after three attempts the order goes to compensation.
// With DB_POOL_SIZE = 2 and WORKER_MAX_CONCURRENT_ACTIVITIES = 1 the product leaves 1 slot to the
// writes (worker/worker-slots.ts): 20 writes one after another, about 20 x 2.55 s = 51 s,
// ten times what the pool holds at once.
// The last write waits about that long for its slot, which counts against its schedule-to-close
// only (decision 30), set here to 480 s so that three times that nearly fits on a loaded machine.
//
// Then one COMMIT's reply held back 12 s, past the attempt's 10 s: Temporal times the attempt out
// and lets its slot go while the write still holds its connection (the server has committed). The
// retry must not start until that write has returned: one write on one connection at a time, the
// retry finding the order written (worker/write-slots.ts). The SDK's own fixed-size supplier runs
// the retry beside it, two connections in use, and the test fails.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { compensationWorkflowIdFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { type Config } from '../../app/env.js';
import { workerSlots } from '../../worker/worker-slots.js';
import { createPrismaClient, poolCounts, type PrismaClient } from '../../services/db/prisma-client.js';
import { temporalTargetFrom } from '../../services/temporal/connection.js';
import { readersFromConfig } from '../../vendors/registry.js';
import { tracingOn } from '../../services/telemetry/tracing.js';
import { connectWorker, createWorker } from '../../worker/create-worker.js';
import { workflowCode } from '../../worker/workflow-bundle.js';
import { type PgProxy, startPgProxy } from '../../tools/chaos/pg-proxy.js';
import { sleep } from '../../tools/harness/time.js';
import {
  eventually,
  freshApproval,
  postApproval,
  statusReaches,
  startTestService,
  testConfig,
  type TestService,
  workflowExists,
} from '../../tools/harness/service.js';

const BURST = 20;
const COMMIT_HELD_MS = 2_500;
/** Past ACTIVITY_START_TO_CLOSE_MS: the attempt times out with its COMMIT on its way back. */
const COMMIT_PAST_ATTEMPT_MS = 12_000;
const TIMINGS = {
  ACTIVITY_START_TO_CLOSE_MS: '10000',
  DB_STATEMENT_TIMEOUT_MS: '1500',
  ACTIVITY_SCHEDULE_TO_CLOSE_MS: '480000',
  // Above schedule-to-close, as the ladder requires; no order here waits for a decision.
  COMPENSATION_DECISION_TIMEOUT_MS: '900000',
  // Below start-to-close, as the ladder requires; nothing is delivered here.
  DOWNSTREAM_TIMEOUT_MS: '1500',
  // Above start-to-close, as the ladder requires; no MCP client here.
  MCP_SUBMIT_WAIT_MS: '12000',
};

/**
 * Runs `work` while reading the worker's pool every few milliseconds: the most callers seen
 * waiting for a connection, the most connections seen in use, and how many reads there were.
 */
async function samplingPool<T>(prisma: PrismaClient, work: () => Promise<T>) {
  const pool = { samples: 0, maxWaiting: 0, maxInUse: 0 };
  const timer = setInterval(() => {
    const counts = poolCounts(prisma);
    pool.samples += 1;
    pool.maxWaiting = Math.max(pool.maxWaiting, counts.waiting);
    pool.maxInUse = Math.max(pool.maxInUse, counts.total - counts.idle);
  }, 2);
  try {
    return { result: await work(), pool };
  } finally {
    clearInterval(timer);
  }
}

/** How many times a sender sends one approval before it gives up. */
const SENDS_PER_APPROVAL = 10;

/**
 * Sends one approval as a sender does: a 503 (the API's own intake, loaded by the suite's other
 * files, is not what this test measures) is sent again after its Retry-After, up to
 * SENDS_PER_APPROVAL times; the last answer, which the caller checks.
 */
async function deliveredAsASenderWould(service: TestService, body: unknown) {
  let answer = await postApproval(service, body);
  for (let sent = 1; answer.statusCode === 503 && sent < SENDS_PER_APPROVAL; sent++) {
    await sleep(Number(answer.headers['retry-after'] ?? 1) * 1_000);
    answer = await postApproval(service, body);
  }
  return answer;
}

/** Sends the approvals at once through the webhook; the keys' records once none is RECEIVED. */
async function burstUntilSettled(service: TestService, approvals: { key: string; body: unknown }[]) {
  const answers = await Promise.all(approvals.map((each) => deliveredAsASenderWould(service, each.body)));
  assert.deepEqual(
    answers.filter((answer) => answer.statusCode !== 202).map((answer) => `${answer.statusCode} ${answer.body}`),
    [],
    'every approval of the burst is accepted',
  );
  const keys = approvals.map((each) => each.key);
  // Settled: every key has left RECEIVED — written, or failed into compensation.
  return eventually(
    `the ${keys.length} keys to settle`,
    async () => {
      const rows = await service.prisma.idempotencyRecord.findMany({ where: { idempotentKey: { in: keys } } });
      return rows.length === keys.length && rows.every((row) => row.status !== 'RECEIVED') ? rows : undefined;
    },
    480_000,
  );
}

/** The worker of decision 30 on `config`'s pool: slots as the worker process computes them. */
async function startBoundedWorker(config: Config, service: TestService, prisma: PrismaClient) {
  const connection: NativeConnection = await connectWorker(temporalTargetFrom(config.temporal));
  const worker: Worker = await createWorker({
    workflows: await workflowCode({ traced: tracingOn(), dir: config.worker.bundleDir }),
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    prisma,
    temporal: service.temporal,
    readers: readersFromConfig(config.connectors, config.writePolicy),
    slots: workerSlots(config, false),
  });
  const done = worker.run();
  return {
    stop: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
      await connection.close();
    },
  };
}

describe('a burst of approvals on a worker whose pool is 2 connections to a slow database', () => {
  let service: TestService;
  let proxy: PgProxy;
  let workerPrisma: PrismaClient;
  let worker: { stop: () => Promise<void> };
  // Read by the proxy at every COMMIT: a test may hold the replies back longer.
  const faults = {
    lostCommitReply: 0,
    reset: 0,
    latency: 0,
    latencyMs: 0,
    slowCommit: 1,
    slowCommitMs: COMMIT_HELD_MS,
  };

  before(async () => {
    // The API (and the test's reads) on a pool of their own, straight to the database.
    service = await startTestService({ config: testConfig(TIMINGS), inProcessWorker: false });
    const databaseUrl = new URL(service.config.databaseUrl as string);
    proxy = await startPgProxy({
      targetPort: Number(databaseUrl.port),
      random: () => 0,
      faults,
    });
    databaseUrl.hostname = '127.0.0.1';
    databaseUrl.port = String(proxy.port);
    const workerConfig = testConfig({
      ...TIMINGS,
      TEMPORAL_TASK_QUEUE: service.config.temporal.taskQueue,
      DATABASE_URL: databaseUrl.toString(),
      DB_POOL_SIZE: '2',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '1',
    });
    workerPrisma = createPrismaClient({
      databaseUrl: databaseUrl.toString(),
      poolSize: workerConfig.dbPoolSize,
      statementTimeoutMs: workerConfig.writePolicy.statementTimeoutMs,
    });
    worker = await startBoundedWorker(workerConfig, service, workerPrisma);
  });
  after(async () => {
    await worker?.stop();
    await workerPrisma?.$disconnect();
    await proxy?.close();
    await service?.stop();
  });

  it('writes every order once, on its first attempt, and no write ever waits for a connection', async () => {
    const approvals: Awaited<ReturnType<typeof freshApproval>>[] = [];
    for (let i = 0; i < BURST; i++) approvals.push(await freshApproval(service.prisma, 'BOUND'));
    const keys = approvals.map((each) => each.key);
    // One write first, so that the burst finds the worker's connection open: opening one (the
    // startup and authentication round trips) on a loaded machine eats into the 2000 ms a
    // transaction may take to start, which is not what this test is about.
    const first = await freshApproval(service.prisma, 'BOUND-FIRST');
    assert.equal((await postApproval(service, first.body)).statusCode, 202);
    await statusReaches(service, first.key, 'SUBMITTED');

    const { result: records, pool } = await samplingPool(workerPrisma, () => burstUntilSettled(service, approvals));

    const orders = await service.prisma.orderMain.findMany({ where: { idempotentKey: { in: keys } } });
    const statuses: Record<string, number> = {};
    for (const record of records) statuses[record.status] = (statuses[record.status] ?? 0) + 1;
    let compensations = 0;
    for (const key of keys) {
      if (await workflowExists(service.temporal, compensationWorkflowIdFor(key))) compensations += 1;
    }
    assert.deepEqual(
      {
        statuses,
        orders: orders.length,
        keysWithAnOrder: new Set(orders.map((order) => order.idempotentKey)).size,
        writtenOnTheFirstAttempt: orders.filter((order) => order.writtenAttempt === 1).length,
        compensations,
        maxWaitingForAConnection: pool.maxWaiting,
      },
      {
        statuses: { SUBMITTED: BURST },
        orders: BURST,
        keysWithAnOrder: BURST,
        writtenOnTheFirstAttempt: BURST,
        compensations: 0,
        maxWaitingForAConnection: 0,
      },
    );
    // The counts were read from the pool the writes used, often, and the database was slow for them.
    assert.ok(pool.maxInUse >= 1, `the sampled pool served the writes: ${JSON.stringify(pool)}`);
    assert.ok(pool.samples >= 100, `the pool was sampled throughout the burst: ${JSON.stringify(pool)}`);
    assert.ok(proxy.counts.slowCommits >= BURST, `every write was slowed: ${JSON.stringify(proxy.counts)}`);
  });

  it('keeps the slot of a timed-out write until the write returns, so that its retry never runs beside it', async () => {
    // The COMMIT's reply now comes after the attempt's 10 s: Temporal gives up on the attempt and
    // frees its slot while the write still holds its connection; the server has committed. The
    // retry (1 s later) finds the order written — but only once the first write has returned.
    const approval = await freshApproval(service.prisma, 'BOUND-TIMEDOUT');
    faults.slowCommitMs = COMMIT_PAST_ATTEMPT_MS;
    const { pool } = await samplingPool(workerPrisma, async () => {
      assert.equal((await deliveredAsASenderWould(service, approval.body)).statusCode, 202);
      await service.temporal.workflow.getHandle(orderWorkflowIdFor(approval.key)).result();
    }).finally(() => (faults.slowCommitMs = COMMIT_HELD_MS));

    const orders = await service.prisma.orderMain.findMany({ where: { idempotentKey: approval.key } });
    const record = await service.prisma.idempotencyRecord.findUniqueOrThrow({ where: { idempotentKey: approval.key } });
    assert.deepEqual(
      {
        orders: orders.map((order) => order.writtenAttempt),
        status: record.status,
        // Attempt 1 timed out (it committed all the same); attempt 2 found its order.
        attempts: record.attempts,
        compensation: await workflowExists(service.temporal, compensationWorkflowIdFor(approval.key)),
        mostWritesHoldingAConnection: pool.maxInUse,
        maxWaitingForAConnection: pool.maxWaiting,
      },
      {
        orders: [1],
        status: 'SUBMITTED',
        attempts: 2,
        compensation: false,
        mostWritesHoldingAConnection: 1,
        maxWaitingForAConnection: 0,
      },
    );
  });
});
