// `npm run bench`: what exactly-once costs, measured in one run on one machine.
//   1. ours: distinct approvals through the real webhook into the API hosting the order worker
//      (API_HOSTS_WORKER=1: workflows started eagerly), and through the API beside a worker process;
//   2. the engine's yardsticks through the same HTTP edge, no database: the engine floor (a workflow
//      with one no-op activity), the local-activity floor (its no-op a local activity) and the
//      engine ceiling (an empty workflow started eagerly on a worker hosted by the edge);
//   3. the database floor: the same order transaction (header, lines, stock) straight through Prisma;
//   4. a duplicate storm: every approval posted 5 times at once;
//   5. peak RSS of the worker and API processes.
// With `--store mysql`, "ours" and the database floor are measured on MySQL/MariaDB too (a
// database of the run's own at MYSQL_TEST_URL), beside PostgreSQL, in the same rounds.
// Each level runs closed-loop: `c` clients, each posting an approval, waiting for its workflow to
// complete, then posting the next. Latency is from sending the webhook request to the workflow's
// completion (for the database floor: the transaction). Embedded stack by default; DATABASE_URL and
// TEMPORAL_ADDRESS point it at others. Prints a table; writes JSON and an SVG chart.
import { spawnSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import type { ManagedProcess } from '../harness/child-process.js';
import { apiProcess, pollingTaskQueue, workerProcess } from '../harness/service-processes.js';
import { loadConfig } from '../../app/env.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { insertOrderWithReservation } from '../../services/db/order-repository.js';
import { freePort } from '../harness/ports.js';
import { givenServers, startStack } from '../harness/stack.js';
import { sleep } from '../harness/time.js';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { workflowInputFor } from '../../submission/submit-approval.js';
import { connectClient } from '../../services/temporal/connection.js';
import { approvalBody, SKUS } from './approvals.js';
import { signedHeaders } from '../harness/signed-webhook.js';
import { runBurst } from './burst.js';
import { BURST_DOORS, type BurstDoorName } from './doors.js';
import { renderChart } from './chart.js';
import { cpuAccounting, type CpuParts, cpuPerItem, isOnThisMachine, OUTSIDE } from './cpu-accounting.js';
import { FLOOR_TASK_QUEUE } from './floor.js';
import { peakRssMiB } from './process-samples.js';
import { mergeResults, steadyRate } from './results-file.js';
import { SHAPES, type ShapeName, STEADY_NAME } from './shape.js';
import { runSoak } from './soak.js';
import { percentile } from '../harness/stats.js';
import { redactUrl } from '../../domain-node/redact-url.js';
import {
  changeLine,
  changesBetween,
  type Figures,
  figuresOf,
  type PairedRatio,
  pairedRatios,
  roundOrders,
  shown,
} from './round-figures.js';
import { seededRandom } from '../chaos/prng.js';
import { migratedMysqlStore, MYSQL_TEST_URL } from '../harness/mysql.js';

const usage = [
  'usage: npm run bench -- [--levels 1,8,32,64] [--seconds 10] [--rounds 5] [--only <name>,…] [--out docs/bench]',
  '                        [--store postgres|mysql]   (mysql: MariaDB/MySQL at MYSQL_TEST_URL beside PostgreSQL)',
  '                        [--eager-slots <n>] [--profile <dir>] [--seed <n>] [--compare <earlier results.json>]',
  '       npm run bench -- --compare <earlier results.json> --with <later results.json>   (no run: the two compared)',
  '       npm run bench -- --burst <approvals> [--burst-concurrency 256] [--burst-door webhook|feishu|dingtalk]',
  '                        [--burst-warm-up 30] [--out docs/bench] [--eager-slots <n>]',
  '       npm run bench -- --soak <minutes> [--soak-rate <approvals per second>] [--soak-shape hosting|worker-process]',
  '                        [--soak-window 5] [--out docs/bench] [--eager-slots <n>]',
  "  --burst: both shapes, fresh state each, through the webhook or a vendor's callback route; --soak: one shape (hosting by default), at --soak-rate or half",
  '  the steady c=32 rate of results.json. Both merge their figures into <out>/results.json (keys burst,',
  '  soak) and write <out>/burst.svg or <out>/soak.svg.',
].join('\n');
const fail = () => {
  console.error(usage);
  process.exit(2);
};
let parsed;
try {
  parsed = parseArgs({
    options: {
      levels: { type: 'string', default: '1,8,32,64' },
      seconds: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '5' },
      // The order of the measurements in each round comes from it: the same seed, the same orders.
      seed: { type: 'string' },
      // Each figure's change against an earlier run's results.json, and whether it is outside the noise.
      compare: { type: 'string' },
      // With --compare: the later run's results.json instead of a run now.
      with: { type: 'string' },
      store: { type: 'string', default: 'postgres' },
      out: { type: 'string', default: 'docs/bench' },
      // Workflow task slots of the processes that start eagerly (default: one per client of the highest level).
      'eager-slots': { type: 'string' },
      // A V8 CPU profile of every measured process, written to this folder when it stops.
      profile: { type: 'string' },
      // Short runs while looking for a cause: only these measurements (names as in the table).
      only: { type: 'string' },
      // The month-end burst (tools/bench/burst.ts) and the soak (tools/bench/soak.ts) instead of the levels.
      burst: { type: 'string' },
      'burst-concurrency': { type: 'string', default: '256' },
      'burst-door': { type: 'string', default: 'webhook' },
      // Approvals sent one at a time before the burst; 0: the burst meets processes that served
      // nothing before it, as a deploy meets its first traffic.
      'burst-warm-up': { type: 'string', default: '30' },
      soak: { type: 'string' },
      'soak-rate': { type: 'string' },
      'soak-shape': { type: 'string', default: 'hosting' },
      'soak-window': { type: 'string', default: '5' },
      help: { type: 'boolean', default: false },
    },
  });
} catch {
  fail();
}
const { values } = parsed as NonNullable<typeof parsed>;
if (values.help) {
  console.log(usage);
  process.exit(0);
}
if (values.store !== 'postgres' && values.store !== 'mysql') fail();
const WITH_MYSQL = values.store === 'mysql';
const LEVELS = values.levels.split(',').map(Number);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const positiveInteger = (value: string | undefined) => value === undefined || /^[1-9]\d*$/.test(value);
const positiveNumber = (value: string | undefined) =>
  value === undefined || (/^\d+(\.\d+)?$/.test(value) && Number(value) > 0);
if (
  LEVELS.some((level) => !Number.isInteger(level) || level < 1) ||
  !(SECONDS > 0) ||
  !Number.isInteger(ROUNDS) ||
  ROUNDS < 1 ||
  !positiveInteger(values['eager-slots']) ||
  !positiveInteger(values.burst) ||
  !positiveInteger(values['burst-concurrency']) ||
  !/^\d+$/.test(values['burst-warm-up']) ||
  !(BURST_DOORS as readonly string[]).includes(values['burst-door']) ||
  !positiveNumber(values.soak) ||
  !positiveNumber(values['soak-rate']) ||
  !positiveInteger(values['soak-window']) ||
  !(SHAPES as readonly string[]).includes(values['soak-shape']) ||
  !(values.seed === undefined || /^\d{1,9}$/.test(values.seed)) ||
  (values.with !== undefined && values.compare === undefined)
) {
  fail();
}

const SEED = values.seed === undefined ? randomInt(1, 1_000_000_000) : Number(values.seed);
const SECRET = randomBytes(24).toString('hex');
const RUN = randomBytes(3).toString('hex');
// Each process's PostgreSQL pool; DB_POOL_SIZE in the bench's environment changes it for a short run.
const DB_POOL_SIZE = Number(process.env.DB_POOL_SIZE ?? 10);

/** What is measured at every level, the order switched each round; the database floor follows. */
const OURS = 'ours';
const OURS_WORKER_PROCESS = 'ours (worker process)';
const ENGINE_FLOOR = 'engine floor';
const LOCAL_ACTIVITY_FLOOR = 'local-activity floor';
const ENGINE_CEILING = 'engine ceiling';
const DB_FLOOR = 'db floor';
const VISIBLE_FLOOR = 'engine floor + visibility';
const OURS_MYSQL = 'ours on MySQL';
const DB_FLOOR_MYSQL = 'db floor on MySQL';
const CONTENDERS = [
  OURS,
  OURS_WORKER_PROCESS,
  ...(WITH_MYSQL ? [OURS_MYSQL] : []),
  ENGINE_FLOOR,
  LOCAL_ACTIVITY_FLOOR,
  ENGINE_CEILING,
];
const DB_FLOORS = [DB_FLOOR, ...(WITH_MYSQL ? [DB_FLOOR_MYSQL] : [])];
const ONLY = values.only?.split(',').map((name) => name.trim());
const measured = (name: string) => !ONLY || ONLY.includes(name);

interface Measurement {
  name: string;
  concurrency: number;
  completed: number;
  seconds: number;
  throughput: number;
  p50: number;
  p95: number;
  p99: number;
  errors: number;
  /** CPU milliseconds per completed item, by part of the system. */
  cpuMsPerItem?: CpuParts;
  /** Which round measured it (levels are measured once per round). */
  round?: number;
}

let cpu: ReturnType<typeof cpuAccounting> | undefined;

/**
 * Waits until the stack is quiet — every part but the load generator together under a tenth of a
 * core for half a second — or 20 s have passed.
 */
async function settle(): Promise<void> {
  if (!cpu) return;
  const deadline = performance.now() + 20_000;
  const busyMs = (parts: CpuParts) =>
    Object.entries(parts).reduce(
      (sum, [part, ms]) => (part === 'load generator' || part === OUTSIDE ? sum : sum + ms),
      0,
    );
  while (performance.now() < deadline) {
    const before = busyMs(cpu.snapshot());
    await sleep(500);
    if (busyMs(cpu.snapshot()) - before < 50) return;
  }
}

/** For each measurement and level, the round with the median throughput. */
function medianRounds(rounds: Measurement[]): Measurement[] {
  const groups = new Map<string, Measurement[]>();
  for (const measured of rounds) {
    const key = `${measured.name}@${measured.concurrency}`;
    groups.set(key, [...(groups.get(key) ?? []), measured]);
  }
  return [...groups.values()].map((group) => {
    const sorted = [...group].sort((a, b) => a.throughput - b.throughput);
    return sorted[Math.floor((sorted.length - 1) / 2)] as Measurement;
  });
}

/** `c` closed-loop clients for `seconds`; each `once()` returns its latency in ms (or throws). */
async function closedLoop(
  name: string,
  concurrency: number,
  once: (n: number) => Promise<number>,
): Promise<Measurement> {
  const latencies: number[] = [];
  let errors = 0;
  let issued = 0;
  const cpuBefore = cpu?.snapshot();
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  let lastDone = started;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        try {
          latencies.push(await once(issued++));
          lastDone = performance.now();
        } catch (error) {
          errors += 1;
          if (errors <= 3) console.error(`  ${name}: ${(error as Error).message}`);
        }
      }
    }),
  );
  const seconds = (lastDone - started) / 1000;
  // The engine finishes some of a phase's work after its last completion (visibility records,
  // history cleanup): wait for that before the CPU is read, so it counts here and not in the next phase.
  await settle();
  const cpuAfter = cpu?.snapshot();
  latencies.sort((a, b) => a - b);
  const measurement = {
    name,
    concurrency,
    completed: latencies.length,
    seconds,
    throughput: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    errors,
    ...(cpuBefore && cpuAfter ? { cpuMsPerItem: cpuPerItem(cpuBefore, cpuAfter, latencies.length) } : {}),
  };
  console.log(
    `  ${name.padEnd(12)} c=${String(concurrency).padEnd(3)} ${measurement.throughput.toFixed(1).padStart(6)}/s  ` +
      `p50 ${measurement.p50.toFixed(0)} p95 ${measurement.p95.toFixed(0)} p99 ${measurement.p99.toFixed(0)} ms` +
      (errors ? `  errors ${errors}` : ''),
  );
  return measurement;
}

async function post(url: string, body: unknown, query = ''): Promise<{ status: number; duplicate?: boolean }> {
  const payload = JSON.stringify(body);
  const response = await fetch(`${url}/webhooks/oa/approvals${query}`, {
    method: 'POST',
    headers: signedHeaders(payload, SECRET),
    body: payload,
  });
  const answer = (await response.json().catch(() => ({}))) as { duplicate?: boolean };
  return { status: response.status, ...(answer.duplicate !== undefined ? { duplicate: answer.duplicate } : {}) };
}

async function main(): Promise<boolean> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'orders-bench-'));
  // As root, PostgreSQL runs as its own user, which must reach the data folder.
  chmodSync(dataDir, 0o755);
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    // The machine as the run found it, before the bench loaded it: a busy machine moves every figure.
    const machine = {
      cores: os.cpus().length,
      model: os.cpus()[0]?.model,
      memoryGiB: os.totalmem() / 2 ** 30,
      node: process.version,
      loadAverageBefore: os.loadavg().map((load) => Math.round(load * 100) / 100),
    };
    console.log(
      `bench ${RUN}: ${machine.cores} cores (${machine.model}), ${machine.memoryGiB.toFixed(0)} GiB, node ${process.version}, ` +
        `load average ${machine.loadAverageBefore.join(' ')}, seed ${SEED}`,
    );
    const stack = await startStack({
      dataDir,
      ...givenServers(),
      namespace: 'default',
      headless: true,
      // Idle pollers ask as often as against a production cluster, not as often as the tests need.
      temporalServerDefaults: true,
    });
    cleanups.push(() => stack.stop());
    const ports = {
      api: await freePort(),
      hostingApi: await freePort(),
      mysqlHostingApi: await freePort(),
      floorApi: await freePort(),
    };
    const mysqlUrl = WITH_MYSQL ? await migratedMysqlStore(cleanups) : undefined;
    const env = {
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      TEMPORAL_TASK_QUEUE: `bench-${RUN}`,
      WEBHOOK_SECRET: SECRET,
      DB_POOL_SIZE: String(DB_POOL_SIZE),
    };
    // The API hosting the worker has a task queue of its own: no worker process takes its tasks,
    // and its worker takes none of the worker process's. A start is eager only when the hosted
    // worker has a free workflow task slot, so the processes that start eagerly (it, and the floor
    // edge for the ceiling) get a slot for every client of the highest level.
    const eagerSlots = values['eager-slots'] ?? String(Math.max(40, ...LEVELS));
    const temporal: Client = await connectClient({ address: stack.temporalAddress, namespace: 'default' });
    cleanups.push(() => temporal.connection.close());
    // LOG_LEVEL=warn keeps per-request logging out of the figures; readiness is probed instead of
    // read from info lines: an HTTP answer, or a worker polling its task queue.
    const answers = (url: string) => async () => (await fetch(url, { method: 'POST' })).status > 0;
    const polling = (taskQueue: string) => pollingTaskQueue(temporal, taskQueue);
    const livez = (port: number) => async () => (await fetch(`http://127.0.0.1:${port}/livez`)).ok;
    const measuredProcess = {
      env,
      ...(values.profile
        ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${path.resolve(values.profile)}`, '--import', 'tsx'] }
        : {}),
    };
    const processes: Record<string, ManagedProcess> = {
      hostingApi: await apiProcess({
        ...measuredProcess,
        name: 'api hosting the worker',
        hostsWorker: true,
        env: { ...env, TEMPORAL_TASK_QUEUE: `bench-${RUN}-hosted`, WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: eagerSlots },
        port: ports.hostingApi,
        ready: livez(ports.hostingApi),
      }),
      ...(mysqlUrl
        ? {
            mysqlHostingApi: await apiProcess({
              ...measuredProcess,
              name: 'api hosting the worker, on MySQL',
              hostsWorker: true,
              env: {
                ...env,
                DATABASE_URL: mysqlUrl,
                TEMPORAL_TASK_QUEUE: `bench-${RUN}-mysql`,
                WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: eagerSlots,
              },
              port: ports.mysqlHostingApi,
              ready: livez(ports.mysqlHostingApi),
            }),
          }
        : {}),
      api: await apiProcess({ ...measuredProcess, port: ports.api, ready: livez(ports.api) }),
      worker: workerProcess({ ...measuredProcess, ready: polling(env.TEMPORAL_TASK_QUEUE) }),
      floorApi: await apiProcess({
        ...measuredProcess,
        name: 'floor-api',
        entry: 'tools/bench/floor-api.ts',
        env: { ...env, WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: eagerSlots },
        port: ports.floorApi,
        ready: answers(`http://127.0.0.1:${ports.floorApi}/webhooks/oa/approvals`),
      }),
      floorWorker: workerProcess({
        ...measuredProcess,
        name: 'floor-worker',
        entry: 'tools/bench/floor-worker.ts',
        ready: polling(FLOOR_TASK_QUEUE),
      }),
    };
    for (const managed of Object.values(processes)) cleanups.push(() => managed.kill('SIGTERM'));
    await Promise.all(Object.values(processes).map((managed) => managed.start()));
    cpu = cpuAccounting(
      dataDir,
      {
        'api hosting the worker': () => processes.hostingApi?.pid(),
        'api hosting the worker, on MySQL': () => processes.mysqlHostingApi?.pid(),
        api: () => processes.api?.pid(),
        worker: () => processes.worker?.pid(),
        'floor api': () => processes.floorApi?.pid(),
        'floor worker': () => processes.floorWorker?.pid(),
      },
      { mysql: WITH_MYSQL && isOnThisMachine(MYSQL_TEST_URL) },
    );

    const prisma: PrismaClient = createPrismaClient({
      databaseUrl: stack.databaseUrl,
      poolSize: DB_POOL_SIZE,
      statementTimeoutMs: 2_000,
    });
    cleanups.push(() => prisma.$disconnect());
    const mysqlPrisma = mysqlUrl
      ? createPrismaClient({ databaseUrl: mysqlUrl, poolSize: DB_POOL_SIZE, statementTimeoutMs: 2_000 })
      : undefined;
    if (mysqlPrisma) cleanups.push(() => mysqlPrisma.$disconnect());
    for (const store of [prisma, mysqlPrisma]) {
      await store?.inventory.createMany({
        data: SKUS.map((sku) => ({ sku, onHand: 1_000_000_000 })),
        skipDuplicates: true,
      });
    }

    const hostingUrl = `http://127.0.0.1:${ports.hostingApi}`;
    const mysqlHostingUrl = `http://127.0.0.1:${ports.mysqlHostingApi}`;
    const apiUrl = `http://127.0.0.1:${ports.api}`;
    const floorUrl = `http://127.0.0.1:${ports.floorApi}`;
    /**
     * One approval through an edge: `prefix` names the approvals of one measurement (every
     * approval of a run is a new one); the latency runs from sending it to its workflow's end.
     */
    const through =
      (url: string, query: string, workflowIdOf: (approvalNo: string) => string) =>
      (prefix: string) =>
      async (n: number) => {
        const approvalNo = `B${RUN}-${prefix}-${n}`;
        const sent = performance.now();
        const answer = await post(url, approvalBody(approvalNo), query);
        if (answer.status !== 202) throw new Error(`${url} answered ${answer.status}`);
        await temporal.workflow.getHandle(workflowIdOf(approvalNo)).result();
        return performance.now() - sent;
      };
    const orderId = (approvalNo: string) => orderWorkflowIdFor(idempotencyKeyFor(approvalNo, 'MAIN'));
    const floorId = (approvalNo: string) => `floor-${idempotencyKeyFor(approvalNo, 'MAIN')}`;
    // The order the activity would write for the approval (the same input builder as the edge).
    const { writePolicy } = loadConfig(env);
    const databaseOn = (store: PrismaClient | undefined) => (prefix: string) => async (n: number) => {
      if (!store) throw new Error('no such store in this run');
      const input = workflowInputFor(approvalBody(`B${RUN}-${prefix}-${n}`), writePolicy);
      const started = performance.now();
      await store.$transaction((tx) => insertOrderWithReservation(tx, { ...input, writtenAttempt: 1 }));
      return performance.now() - started;
    };
    // `visible`: the floor workflow started and moved on with an order's search attributes and UI
    // metadata — the engine's share of what operators see, without the database or the edge's checks.
    const measurements: Record<string, { prefix: string; once: (prefix: string) => (n: number) => Promise<number> }> = {
      [OURS]: { prefix: 'O', once: through(hostingUrl, '', orderId) },
      [OURS_WORKER_PROCESS]: { prefix: 'W', once: through(apiUrl, '', orderId) },
      [ENGINE_FLOOR]: { prefix: 'F', once: through(floorUrl, '', floorId) },
      [LOCAL_ACTIVITY_FLOOR]: { prefix: 'L', once: through(floorUrl, '?workflow=local-activity', floorId) },
      [ENGINE_CEILING]: { prefix: 'E', once: through(floorUrl, '?workflow=empty', floorId) },
      [OURS_MYSQL]: { prefix: 'M', once: through(mysqlHostingUrl, '', orderId) },
      [DB_FLOOR]: { prefix: 'D', once: databaseOn(prisma) },
      [DB_FLOOR_MYSQL]: { prefix: 'DM', once: databaseOn(mysqlPrisma) },
      [VISIBLE_FLOOR]: { prefix: 'V', once: through(floorUrl, '?visible=1', floorId) },
    };
    const loop = (name: string, label: string, level: number, tag: string) => {
      const { prefix, once } = measurements[name] as (typeof measurements)[string];
      return closedLoop(label, level, once(`${prefix}${tag}`));
    };
    const measure = async (name: string, level: number, round: number) => ({
      ...(await loop(name, name, level, `${level}r${round}`)),
      round,
    });

    console.log('warming up (JIT, pools, workflow caches) …');
    for (const name of CONTENDERS.filter(measured)) await loop(name, `warm-up ${name}`, 8, 'warm');

    // Rounds: every level measured again, every measurement in a new order each round (from the
    // seed), so none always inherits another's warm caches or the machine's slow moments. Each
    // figure is reported with its median and its spread over the rounds.
    const rounds: Measurement[] = [];
    const random = seededRandom(SEED);
    const ordersByLevel = new Map(
      LEVELS.map((level) => {
        const names = [...CONTENDERS, ...DB_FLOORS, ...(level === 32 ? [VISIBLE_FLOOR] : [])].filter(measured);
        return [level, roundOrders(names, ROUNDS, random)];
      }),
    );
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const level of LEVELS) {
        console.log(`round ${round} of ${ROUNDS}, concurrency ${level}`);
        for (const name of ordersByLevel.get(level)?.[round - 1] ?? []) rounds.push(await measure(name, level, round));
      }
    }
    const results = medianRounds(rounds);
    const figures = figuresOf(rounds);
    const bare = await closedLoop('bare SDK', 32, async (n) => {
      const started = performance.now();
      await temporal.workflow.execute('floorWorkflow', { taskQueue: FLOOR_TASK_QUEUE, workflowId: `bare-${RUN}-${n}` });
      return performance.now() - started;
    });

    console.log('duplicate storm: every approval posted 5 times at once to the API hosting the worker, c=32');
    let firstDeliveries = 0;
    const storm = await closedLoop('storm', 32, async (n) => {
      const approvalNo = `B${RUN}-S-${n}`;
      const body = approvalBody(approvalNo);
      const started = performance.now();
      const answers = await Promise.all(Array.from({ length: 5 }, () => post(hostingUrl, body)));
      if (answers.some((answer) => answer.status !== 202 && answer.status !== 200)) throw new Error('storm refused');
      firstDeliveries += answers.filter((answer) => answer.duplicate === false).length;
      await temporal.workflow.getHandle(orderId(approvalNo)).result();
      return performance.now() - started;
    });
    // Every store of the run: an approval written twice anywhere fails it.
    let doubled = 0;
    for (const store of [prisma, mysqlPrisma]) {
      const keys = await store?.orderMain.groupBy({
        by: ['approvalNo', 'operation'],
        where: { approvalNo: { startsWith: `B${RUN}-` } },
        having: { approvalNo: { _count: { gt: 1 } } },
      });
      doubled += keys?.length ?? 0;
    }
    const memory = {
      hostingApiPeakRssMiB: peakRssMiB(processes.hostingApi?.pid()),
      workerPeakRssMiB: peakRssMiB(processes.worker?.pid()),
      apiPeakRssMiB: peakRssMiB(processes.api?.pid()),
    };

    const report = {
      run: RUN,
      machine,
      commit: commitOfCheckout(),
      settings: {
        secondsPerLevel: SECONDS,
        rounds: ROUNDS,
        dbPoolSize: DB_POOL_SIZE,
        temporal:
          process.env.TEMPORAL_ADDRESS ??
          "embedded dev server, SQLite on disk, journal_mode=wal, synchronous=normal, the server's poll timings",
        postgres: process.env.DATABASE_URL ? 'external' : 'embedded PostgreSQL 17',
        ...(mysqlUrl ? { mysql: `a database of its own on ${redactUrl(MYSQL_TEST_URL)}` } : {}),
        logLevel: 'warn',
        workflowTaskSlots: {
          eager: Number(eagerSlots),
          workerProcesses: loadConfig(env).worker.maxConcurrentWorkflowTasks,
        },
        latency: 'from sending the webhook request to the workflow completing',
      },
      rounds: ROUNDS,
      seed: SEED,
      results,
      figures,
      ratios: ratiosOf(results),
      roundRatios: pairedRatios(
        rounds,
        [OURS, OURS_MYSQL],
        [OURS_WORKER_PROCESS, ENGINE_FLOOR, LOCAL_ACTIVITY_FLOOR, ENGINE_CEILING],
      ),
      allRounds: rounds,
      bare,
      storm: {
        ...storm,
        firstDeliveries,
        uniqueOrdersPerSecond: storm.throughput,
        duplicateOrders: doubled,
      },
      memory,
    };
    printTable(report.results, report);
    printFigures(figures);
    if (values.compare) printComparison(values.compare, figures, conditionsOf(undefined, report));
    // The burst's and soak's keys stay: they are measured apart, and a normal run does not redo them.
    mergeResults(values.out, report);
    writeFileSync(path.join(values.out, 'throughput.svg'), renderChart(report.results));
    console.log(`wrote ${values.out}/results.json and ${values.out}/throughput.svg`);
    // Exactly-once is the point: the run fails when an approval was written twice, or when its
    // storm did not answer exactly one delivery as the first.
    if (report.storm.duplicateOrders !== 0) console.error(`DUPLICATE ORDERS: ${report.storm.duplicateOrders}`);
    if (firstDeliveries !== storm.completed) {
      console.error(`FIRST DELIVERIES: ${firstDeliveries} answered as first for ${storm.completed} approvals`);
    }
    return report.storm.duplicateOrders === 0 && firstDeliveries === storm.completed;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The commit the run measured, and whether the work tree had changes beside it. */
function commitOfCheckout(): { id: string; changedFiles: number } | undefined {
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' });
  if (head.status !== 0) return undefined;
  const status = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  return { id: head.stdout.trim(), changedFiles: status.stdout.split('\n').filter(Boolean).length };
}

/** Each measurement's figures over the rounds: the median, and the lowest and highest round. */
function printFigures(figures: Figures[]) {
  console.log(
    `\n| c | measured | CPU ms per order: the bench's processes, median (range) | by process | /s | p99 ms |`,
  );
  console.log('|---|---|---|---|---|---|');
  for (const figure of figures) {
    const byProcess = Object.entries(figure.cpuMsPerOrderByProcess ?? {})
      .filter(([, spread]) => spread.median >= 0.05)
      .map(([part, spread]) => `${part} ${shown(spread)}`)
      .join(', ');
    console.log(
      `| ${figure.concurrency} | ${figure.name} | ${figure.cpuMsPerOrder ? shown(figure.cpuMsPerOrder) : '-'} | ` +
        `${byProcess || '-'} | ${shown(figure.throughput)} | ${shown(figure.p99, 0)} |`,
    );
  }
}

/** The figures of an earlier run's results.json: its own, or computed from its rounds (older files). */
function figuresFrom(file: string): Figures[] {
  if (!existsSync(file)) throw new Error(`--compare: no file ${file}`);
  const earlier = JSON.parse(readFileSync(file, 'utf8')) as { figures?: Figures[]; allRounds?: Measurement[] };
  if (earlier.figures) return earlier.figures;
  if (earlier.allRounds) return figuresOf(earlier.allRounds);
  throw new Error(`--compare: ${file} holds no rounds of a normal run`);
}

/** What makes two runs' figures comparable: the machine, and how long each measurement ran. */
function conditionsOf(file: string | undefined, report?: Record<string, unknown>): Record<string, unknown> {
  const read = report ?? (file ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {});
  const machine = (read.machine ?? {}) as Record<string, unknown>;
  const settings = (read.settings ?? {}) as Record<string, unknown>;
  return {
    cores: machine.cores,
    model: machine.model,
    'seconds per level': settings.secondsPerLevel,
    temporal: settings.temporal,
  };
}

/**
 * Each figure against the same figure of the run in `file`, and whether its change is outside the
 * noise; first, what differs between the two runs' machines and settings, which no range covers.
 */
function printComparison(file: string, figures: Figures[], now: Record<string, unknown>) {
  const then = conditionsOf(file);
  const differs = Object.keys(now).filter((name) => JSON.stringify(now[name]) !== JSON.stringify(then[name]));
  if (differs.length > 0) {
    console.log(
      `\nthe two runs differ in ${differs.map((name) => `${name} (${String(then[name])} → ${String(now[name])})`).join(', ')}: ` +
        'a change below may be that difference, not the code',
    );
  }
  const changes = changesBetween(figuresFrom(file), figures);
  const outside = changes.filter((change) => change.outsideTheNoise);
  console.log(`\nagainst ${file}: each figure's median (range over the rounds), and its change`);
  console.log('| c | measured | figure | before | now | change | |');
  console.log('|---|---|---|---|---|---|---|');
  for (const change of changes) console.log(changeLine(change));
  console.log(
    `\n${outside.length} of ${changes.length} figures moved outside the noise (the two runs' ranges apart)` +
      (outside.length
        ? `: ${outside.map((change) => `${change.name} c=${change.concurrency} ${change.figure.trim()}`).join('; ')}`
        : ''),
  );
}

/** Ours (the API hosting the worker) over each yardstick's throughput, median rounds, per level. */
function ratiosOf(results: Measurement[]) {
  const at = (name: string, level: number) =>
    results.find((result) => result.name === name && result.concurrency === level)?.throughput;
  const over = (ours: number | undefined, yardstick: number | undefined) =>
    ours !== undefined && yardstick ? Math.round((1000 * ours) / yardstick) / 1000 : null;
  return LEVELS.map((concurrency) => ({
    concurrency,
    oursOverEngineFloor: over(at(OURS, concurrency), at(ENGINE_FLOOR, concurrency)),
    oursOverLocalActivityFloor: over(at(OURS, concurrency), at(LOCAL_ACTIVITY_FLOOR, concurrency)),
    oursOverEngineCeiling: over(at(OURS, concurrency), at(ENGINE_CEILING, concurrency)),
  }));
}

function printTable(
  results: Measurement[],
  report: {
    allRounds: Measurement[];
    ratios: ReturnType<typeof ratiosOf>;
    roundRatios: PairedRatio[];
    bare: Measurement;
    storm: Measurement & { duplicateOrders: number; firstDeliveries: number };
    memory: Record<string, number>;
  },
) {
  const at = (name: string, level: number) =>
    results.find((result) => result.name === name && result.concurrency === level);
  const ms = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? '-' : value.toFixed(0));
  const cpuOf = (parts: CpuParts | undefined) => {
    if (!parts) return '-';
    const total = Object.entries(parts).reduce((sum, [part, value]) => (part === OUTSIDE ? sum : sum + value), 0);
    const shown = Object.entries(parts)
      .filter(([, value]) => value >= 0.05)
      .map(([part, value]) => `${part} ${value.toFixed(1)}`)
      .join(', ');
    return `${total.toFixed(1)}: ${shown}`;
  };
  console.log(
    "\n| c | measured | /s | ours ÷ it | p50/p95/p99 ms | CPU ms per item: the bench's total, by process (and outside the bench) |",
  );
  console.log('|---|---|---|---|---|---|');
  for (const level of LEVELS) {
    const ours = at(OURS, level);
    for (const name of [...CONTENDERS, ...DB_FLOORS, ...(level === 32 ? [VISIBLE_FLOOR] : [])]) {
      const m = at(name, level);
      if (!m) continue;
      const ratio = ours && name !== OURS ? `${((100 * ours.throughput) / m.throughput).toFixed(0)} %` : '';
      console.log(
        `| ${level} | ${name} | ${m.throughput.toFixed(1)} | ${ratio} | ${ms(m.p50)}/${ms(m.p95)}/${ms(m.p99)} | ${cpuOf(m.cpuMsPerItem)} |`,
      );
    }
  }
  if (ROUNDS > 1) {
    console.log(
      `\nours ÷ each yardstick, taken within each round: median (range) of ${ROUNDS}, then each round in order`,
    );
    for (const ratio of report.roundRatios) {
      const percent = (value: number) => (100 * value).toFixed(0);
      console.log(
        `  c=${ratio.concurrency} ${ratio.name} ÷ ${ratio.yardstick}: ${percent(ratio.spread.median)} % ` +
          `(${percent(ratio.spread.low)}–${percent(ratio.spread.high)}); ${ratio.perRound.map(percent).join(', ')}`,
      );
    }
  }
  console.log('\nratios (median rounds): ' + JSON.stringify(report.ratios));
  console.log(
    `\nbare SDK (client.workflow.execute, no HTTP), c=32: ${report.bare.throughput.toFixed(1)} wf/s, p50 ${ms(report.bare.p50)} ms`,
  );
  console.log(
    `duplicate storm, c=32 × 5 deliveries: ${report.storm.throughput.toFixed(1)} unique orders/s, ` +
      `duplicate orders ${report.storm.duplicateOrders}, first deliveries ${report.storm.firstDeliveries} for ${report.storm.completed} approvals`,
  );
  console.log(
    `peak RSS: API hosting the worker ${report.memory.hostingApiPeakRssMiB?.toFixed(0)} MiB, ` +
      `worker ${report.memory.workerPeakRssMiB?.toFixed(0)} MiB, API ${report.memory.apiPeakRssMiB?.toFixed(0)} MiB`,
  );
}

/** An OA sender gives an approval this many attempts (timeouts and 503s) before it gives up. */
const MAX_ATTEMPTS_PER_APPROVAL = 30;
/** After the last answer, the order count may stand still this long before what is missing counts as lost. */
const DRAIN_QUIET_MS = 60_000;

/** The soak's arrival rate: the flag's, or half the steady c=32 rate of the shape from results.json. */
function soakRate(shape: ShapeName): { perSecond: number; from: string } | undefined {
  if (values['soak-rate']) return { perSecond: Number(values['soak-rate']), from: '--soak-rate' };
  const steady = steadyRate(values.out, STEADY_NAME[shape]);
  return steady && { perSecond: steady.perSecond / 2, from: `half the steady c=32 rate of ${steady.from}` };
}

/** `--burst` and/or `--soak` (the burst first): true when exactly-once held in every run. */
async function modes(): Promise<boolean> {
  const shape = values['soak-shape'] as ShapeName;
  const rate = values.soak ? soakRate(shape) : undefined;
  if (values.soak && !rate) {
    console.error('--soak needs --soak-rate, or a normal run (c=32) in <out>/results.json or docs/bench/results.json');
    console.error(usage);
    process.exit(2);
  }
  console.log(
    `bench ${RUN}: ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
  );
  const shapeOptions = {
    run: RUN,
    secret: SECRET,
    dbPoolSize: DB_POOL_SIZE,
    // The same slots as the normal run's, so the burst's drain rate compares with its steady rate.
    eagerSlots: values['eager-slots'] ?? String(Math.max(40, ...LEVELS)),
    maxAttempts: MAX_ATTEMPTS_PER_APPROVAL,
    drainQuietMs: DRAIN_QUIET_MS,
    out: values.out,
  };
  let held = true;
  if (values.burst) {
    held =
      (await runBurst({
        ...shapeOptions,
        approvals: Number(values.burst),
        concurrency: Number(values['burst-concurrency']),
        door: values['burst-door'] as BurstDoorName,
        warmUpApprovals: Number(values['burst-warm-up']),
      })) && held;
  }
  if (values.soak && rate) {
    held =
      (await runSoak({
        ...shapeOptions,
        minutes: Number(values.soak),
        shape,
        ratePerSecond: rate.perSecond,
        rateFrom: rate.from,
        windowSeconds: Number(values['soak-window']),
      })) && held;
  }
  return held;
}

// An explicit exit, as the test runner does: embedded PostgreSQL's exit hook ends the process with
// code 0 on beforeExit, which would hide a failed run behind process.exitCode.
// An earlier run to compare with is read before anything runs: a wrong path fails in a second, not after the run.
for (const file of [values.compare, values.with]) {
  if (file === undefined) continue;
  try {
    figuresFrom(file);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
}
if (values.with && values.compare) {
  printComparison(values.compare, figuresFrom(values.with), conditionsOf(values.with));
  process.exit(0);
}
process.exit((await (values.burst || values.soak ? modes() : main())) ? 0 : 1);
