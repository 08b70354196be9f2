// `npm run bench:anatomy`: what one order costs the engine and the stores, counted instead of timed.
// Orders go one at a time through the webhook into the API hosting the order worker (as the bench's
// "ours"), beside the engine's yardsticks through the bench's floor edge; then, per order:
//   - its event history: events by type, the history's encoded size and the payload bytes in it;
//   - its workflow activations and their jobs (the worker's trace lines);
//   - the statements it ran on PostgreSQL (pg_stat_statements, preloaded in the embedded server)
//     and, with `--store mysql`, on MySQL/MariaDB (the server's statement counters).
// Counts do not move with the machine's load: a change that adds an event or a statement to every
// order shows here, exactly, where the bench's timings could hide it in their noise.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import mariadb from 'mariadb';
import pg from 'pg';
import type { Client } from '@temporalio/client';
import { apiProcess, pollingTaskQueue, workerProcess } from '../harness/service-processes.js';
import { freePort } from '../harness/ports.js';
import { startStack } from '../harness/stack.js';
import { migratedMysqlStore } from '../harness/mysql.js';
import { mysqlConnection } from '../../services/db/stores/mysql-connection.js';
import { signedHeaders } from '../harness/signed-webhook.js';
import { sleep } from '../harness/time.js';
import { connectClient } from '../../services/temporal/connection.js';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { createPrismaClient } from '../../services/db/prisma-client.js';
import { approvalBody, SKUS } from './approvals.js';
import { FLOOR_TASK_QUEUE } from './floor.js';
import { historyAnatomy, type HistoryAnatomy, sumAnatomies } from './history-anatomy.js';

const usage = 'usage: npm run bench:anatomy -- [--orders 20] [--store postgres|mysql]';
let parsed;
try {
  parsed = parseArgs({
    options: {
      orders: { type: 'string', default: '20' },
      store: { type: 'string', default: 'postgres' },
      help: { type: 'boolean', default: false },
    },
  });
} catch {
  console.error(usage);
  process.exit(2);
}
const { values } = parsed;
if (values.help) {
  console.log(usage);
  process.exit(0);
}
if (!/^[1-9]\d{0,3}$/.test(values.orders) || !['postgres', 'mysql'].includes(values.store)) {
  console.error(usage);
  process.exit(2);
}
const ORDERS = Number(values.orders);
/** Orders sent before counting starts: the first ones pay for the query compiler and the caches. */
const WARM_UP = 3;
const SECRET = randomBytes(24).toString('hex');
const RUN = randomBytes(3).toString('hex');

/** The statement counters of MySQL/MariaDB an order moves (performance_schema is off by default). */
const MYSQL_COUNTERS = [
  'Questions',
  'Com_begin',
  'Com_commit',
  'Com_rollback',
  'Com_select',
  'Com_insert',
  'Com_update',
  'Com_stmt_prepare',
  'Com_stmt_execute',
  'Com_stmt_close',
];

interface Door {
  name: string;
  url: string;
  query: string;
  workflowIdOf: (approvalNo: string) => string;
  /** Activation trace lines of the process whose worker runs this door's workflows. */
  activations?: ActivationCounter;
  statements?: StatementCounter;
}

/** Counts, per run id, the activations a worker's trace lines report and the jobs they carry. */
class ActivationCounter {
  private readonly byRun = new Map<string, string[][]>();

  line(text: string): void {
    if (!text.includes('Got workflow activation')) return;

    try {
      const entry = JSON.parse(text) as { runId?: string; jobs?: Record<string, unknown>[] };
      if (!entry.runId) return;
      const jobs = (entry.jobs ?? []).map((job) => Object.keys(job).find((key) => job[key] != null) ?? '?');
      this.byRun.set(entry.runId, [...(this.byRun.get(entry.runId) ?? []), jobs]);
    } catch {
      // Not a JSON line: not the worker's.
    }
  }

  of(runId: string): string[][] {
    return this.byRun.get(runId) ?? [];
  }
}

interface StatementCounter {
  reset(): Promise<void>;
  /** Statement (or counter) → how many times it ran since the reset. */
  read(): Promise<Map<string, number>>;
}

function postgresStatements(databaseUrl: string): StatementCounter {
  const run = async <T extends pg.QueryResultRow>(sql: string) => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      return (await client.query<T>(sql)).rows;
    } finally {
      await client.end();
    }
  };
  return {
    reset: async () => {
      await run('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await run('SELECT pg_stat_statements_reset()');
    },
    read: async () => {
      const rows = await run<{ query: string; calls: string }>(
        `SELECT query, calls FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND query NOT LIKE '%pg_stat_statements%'`,
      );
      const counts = new Map<string, number>();
      for (const row of rows) {
        const statement = row.query.replace(/\s+/g, ' ').trim();
        counts.set(statement, (counts.get(statement) ?? 0) + Number(row.calls));
      }
      return counts;
    },
  };
}

function mysqlStatements(url: string): StatementCounter {
  let before = new Map<string, number>();
  const counters = async () => {
    const connection = await mariadb.createConnection(mysqlConnection(url));
    try {
      const rows = await connection.query<{ Variable_name: string; Value: string }[]>(
        'SHOW GLOBAL STATUS WHERE Variable_name IN (?)',
        [MYSQL_COUNTERS],
      );
      return new Map(rows.map((row) => [row.Variable_name, Number(row.Value)]));
    } finally {
      await connection.end();
    }
  };
  return {
    reset: async () => {
      before = await counters();
    },
    read: async () => {
      const after = await counters();
      return new Map(MYSQL_COUNTERS.map((name) => [name, (after.get(name) ?? 0) - (before.get(name) ?? 0)]));
    },
  };
}

async function send(client: Client, door: Door, approvalNo: string): Promise<string> {
  const payload = JSON.stringify(approvalBody(approvalNo));
  const response = await fetch(`${door.url}/webhooks/oa/approvals${door.query}`, {
    method: 'POST',
    headers: signedHeaders(payload, SECRET),
    body: payload,
  });
  if (response.status !== 202) throw new Error(`${door.name}: ${door.url} answered ${response.status}`);
  const handle = client.workflow.getHandle(door.workflowIdOf(approvalNo));
  await handle.result();
  return (await handle.describe()).runId;
}

function printAnatomy(door: Door, anatomy: HistoryAnatomy, activations: string[][] | undefined): void {
  const per = (count: number) => (count / ORDERS).toFixed(1);
  console.log(`\n${door.name}: per order, over ${ORDERS} orders`);
  console.log(
    `  events ${per(anatomy.events)}, history ${per(anatomy.historyBytes)} bytes encoded, payloads ${per(anatomy.payloadBytes)} bytes`,
  );
  for (const [type, count] of [...anatomy.eventTypes].sort((a, b) => b[1] - a[1])) {
    console.log(`    ${per(count).padStart(5)}  ${type}`);
  }
  console.log('  payload bytes by where they are:');
  for (const [where, bytes] of [...anatomy.payloadBytesByField].sort((a, b) => b[1] - a[1])) {
    console.log(`    ${per(bytes).padStart(7)}  ${where}`);
  }
  if (activations) {
    const jobs = new Map<string, number>();
    for (const activation of activations) {
      for (const job of activation.length > 0 ? activation : ['(no job)']) jobs.set(job, (jobs.get(job) ?? 0) + 1);
    }
    console.log(`  workflow activations ${per(activations.length)}; jobs:`);
    for (const [job, count] of jobs) console.log(`    ${per(count).padStart(5)}  ${job}`);
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'orders-anatomy-'));
  chmodSync(dataDir, 0o755);
  const cleanups: (() => Promise<unknown>)[] = [];
  try {
    const stack = await startStack({
      dataDir,
      namespace: 'default',
      headless: true,
      databaseSettings: { shared_preload_libraries: 'pg_stat_statements' },
      temporalServerDefaults: true,
    });
    cleanups.push(() => stack.stop());
    const mysqlUrl = values.store === 'mysql' ? await migratedMysqlStore(cleanups) : undefined;
    const env = {
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      WEBHOOK_SECRET: SECRET,
    };
    const temporal = await connectClient({ address: stack.temporalAddress, namespace: 'default' });
    cleanups.push(() => temporal.connection.close());
    for (const url of [stack.databaseUrl, mysqlUrl]) {
      if (!url) continue;
      const prisma = createPrismaClient({ databaseUrl: url, poolSize: 1, statementTimeoutMs: 2_000 });
      await prisma.inventory.createMany({
        data: SKUS.map((sku) => ({ sku, onHand: 1_000_000_000 })),
        skipDuplicates: true,
      });
      await prisma.$disconnect();
    }

    const orderId = (approvalNo: string) => orderWorkflowIdFor(idempotencyKeyFor(approvalNo, 'MAIN'));
    const floorId = (approvalNo: string) => `floor-${idempotencyKeyFor(approvalNo, 'MAIN')}`;
    const doors: Door[] = [];
    const hostingApi = async (name: string, databaseUrl: string, statements: StatementCounter) => {
      const activations = new ActivationCounter();
      const api = await apiProcess({
        name,
        hostsWorker: true,
        // Trace: the worker's line for each activation it is handed, with the activation's jobs.
        env: { ...env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'trace', TEMPORAL_TASK_QUEUE: `anatomy-${RUN}-${name}` },
        onOutput: (line) => activations.line(line),
      });
      cleanups.push(() => api.kill('SIGTERM'));
      await api.start();
      doors.push({ name, url: api.url, query: '', workflowIdOf: orderId, activations, statements });
    };
    await hostingApi('ours', stack.databaseUrl, postgresStatements(stack.databaseUrl));
    if (mysqlUrl) await hostingApi('ours on MySQL', mysqlUrl, mysqlStatements(mysqlUrl));
    // The floor edge answers any POST once it listens; the floor worker is ready once it polls.
    const floorApiPort = await freePort();
    const floorApi = await apiProcess({
      name: 'floor-api',
      entry: 'tools/bench/floor-api.ts',
      env,
      port: floorApiPort,
      ready: async () => (await fetch(`http://127.0.0.1:${floorApiPort}/`, { method: 'POST' })).status > 0,
    });
    const floorWorker = workerProcess({
      name: 'floor-worker',
      entry: 'tools/bench/floor-worker.ts',
      env,
      ready: pollingTaskQueue(temporal, FLOOR_TASK_QUEUE),
    });
    cleanups.push(
      () => floorApi.kill('SIGTERM'),
      () => floorWorker.kill('SIGTERM'),
    );
    await Promise.all([floorApi.start(), floorWorker.start()]);
    doors.push(
      { name: 'engine floor', url: floorApi.url, query: '', workflowIdOf: floorId },
      { name: 'engine ceiling', url: floorApi.url, query: '?workflow=empty', workflowIdOf: floorId },
    );

    console.log(`anatomy ${RUN}: ${ORDERS} orders per door, one at a time, after ${WARM_UP} not counted`);
    for (const [index, door] of doors.entries()) {
      for (let n = 0; n < WARM_UP; n++) await send(temporal, door, `A${RUN}-${index}-warm-${n}`);
      await door.statements?.reset();
      const anatomies: HistoryAnatomy[] = [];
      const runIds: string[] = [];
      for (let n = 0; n < ORDERS; n++) {
        const approvalNo = `A${RUN}-${index}-${n}`;
        runIds.push(await send(temporal, door, approvalNo));
        const history = await temporal.workflow.getHandle(door.workflowIdOf(approvalNo)).fetchHistory();
        anatomies.push(historyAnatomy(history));
      }
      // The worker's trace lines come through a pipe: the last run's may still be on their way.
      const { activations } = door;
      const lastRun = runIds.at(-1) ?? '';
      for (let waited = 0; activations && activations.of(lastRun).length === 0 && waited < 5_000; waited += 100) {
        await sleep(100);
      }
      const counted = activations ? runIds.flatMap((runId) => activations.of(runId)) : undefined;
      printAnatomy(door, sumAnatomies(anatomies), counted);
      const statements = await door.statements?.read();
      if (statements) {
        console.log('  statements (calls per order; a background scan shows as a fraction):');
        for (const [statement, calls] of [...statements].sort((a, b) => b[1] - a[1])) {
          if (calls > 0) console.log(`    ${(calls / ORDERS).toFixed(2).padStart(6)}  ${statement.slice(0, 150)}`);
        }
      }
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
