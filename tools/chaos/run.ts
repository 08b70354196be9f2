// `npm run chaos -- --seed 7 --size 40`: proof under faults. Submits N distinct approvals through
// the real webhook, many redelivered 1–5 times (concurrently, and again after they finished),
// while it cuts COMMIT replies, resets and delays database connections, holds row locks, kills the
// worker, restarts Temporal and PostgreSQL, and has the downstream answer 429, 5xx or hang; the
// worker also publishes each event to RabbitMQ through a proxy that cuts publishes mid-flight, and
// the reference broker consumer is killed between its commit and its ack. Then it checks, from the
// database and Temporal themselves, that no approval was doubled or lost, that stock adds up
// exactly and that each consumer applied each event once — and exits non-zero if not.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { migrate } from '../../services/db/migrate.js';
import { startEmbeddedPostgres, type RunningPostgres } from '../harness/embedded-postgres.js';
import { freePort } from '../harness/ports.js';
import { startTemporalDevServer, type RunningTemporal } from '../harness/temporal-dev-server.js';
import { compensationWorkflowIdFor, idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { signBody } from '../../domain-node/signature.js';
import { connectClient } from '../../services/temporal/connection.js';
import { decideUpdate } from '../../workflows/definitions.js';
import { type Reply, startScriptedDownstream } from '../harness/scripted-downstream.js';
import { managedProcess } from '../harness/child-process.js';
import { sleep } from '../harness/time.js';
import { CHAOS_TIMINGS } from '../harness/timings.js';
import { attemptsByActivityType, historySteps } from '../harness/history.js';
import { type ChaosBroker, DEFAULT_AMQP_URL, openChaosBroker } from './broker.js';
import { startPgProxy } from './pg-proxy.js';
import { between, type Random, seededRandom } from './prng.js';

const usage =
  'usage: npm run chaos -- [--seed N] [--size N] [--broken key-per-attempt] [--out results.json] [--keep]\n' +
  `needs RabbitMQ at AMQP_URL (default amqp://guest:guest@127.0.0.1:5672)`;
const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    size: { type: 'string', default: '40' },
    broken: { type: 'string' },
    out: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(usage);
  process.exit(0);
}
const seed = Number(values.seed);
const size = Number(values.size);
if (!Number.isInteger(seed) || !Number.isInteger(size) || size < 1 || size > 20_000) {
  console.error(`--seed and --size must be integers (size 1..20000)\n${usage}`);
  process.exit(2);
}
if (values.broken !== undefined && values.broken !== 'key-per-attempt') {
  console.error(`--broken takes one value: key-per-attempt\n${usage}`);
  process.exit(2);
}

const WEBHOOK_SECRET = 'chaos-webhook-secret-0123456789';
const DOWNSTREAM_SECRET = 'chaos-downstream-secret-0123456789';
const TASK_QUEUE = 'chaos';
const POLICY = CHAOS_TIMINGS;
const SKUS = ['CHAOS-A', 'CHAOS-B', 'CHAOS-C', 'CHAOS-D', 'CHAOS-E'];
const FAULT_KINDS = [
  'worker-kill',
  'temporal-restart',
  'db-restart',
  'lock-hold',
  'worker-kill',
  'consumer-kill',
  'broker-cut',
] as const;
type FaultKind = (typeof FAULT_KINDS)[number];

const log = (message: string) => console.log(`[chaos ${new Date().toISOString().slice(11, 23)}] ${message}`);

interface Approval {
  approvalNo: string;
  operation: 'MAIN' | 'SUPPLEMENT';
  key: string;
  copies: number;
  body: string;
  acceptedAt?: number;
}

function makeApprovals(random: Random): Approval[] {
  return Array.from({ length: size }, (_, index) => {
    const approvalNo = `CH${seed}-${String(index).padStart(5, '0')}`;
    const operation = random() < 0.25 ? 'SUPPLEMENT' : 'MAIN';
    const lineCount = between(random, 1, 3);
    const lines = Array.from({ length: lineCount }, (_, line) => ({
      sku: SKUS[(index + line) % SKUS.length] as string,
      quantity: between(random, 1, 5),
      unitPrice: `${between(random, 1, 500)}.${String(between(random, 0, 99)).padStart(2, '0')}`,
    }));
    const body = JSON.stringify({
      approvalNo,
      operation,
      approvedAt: '2026-11-29T10:00:00+08:00',
      order: { customerId: `CUST-${index % 17}`, currency: 'CNY', lines },
    });
    return {
      approvalNo,
      operation,
      key: idempotencyKeyFor(approvalNo, operation),
      copies: between(random, 1, 5),
      body,
    };
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

async function main(): Promise<number> {
  // Checked first: without a broker the run stops before it starts anything.
  let broker: ChaosBroker;
  try {
    broker = await openChaosBroker(process.env.AMQP_URL || DEFAULT_AMQP_URL, seed);
  } catch (error) {
    console.error(`chaos: ${(error as Error).message}`);
    return 2;
  }
  const random = seededRandom(seed);
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'orders-chaos-'));
  chmodSync(dataDir, 0o755);
  const ports = { postgres: await freePort(), temporal: await freePort(), api: await freePort() };
  const cleanups: (() => Promise<unknown>)[] = [];
  const started = Date.now();

  try {
    // ---- the stack: PostgreSQL and Temporal with on-disk state, so both can be restarted ----
    const pgOptions = { dataDir: path.join(dataDir, 'postgres'), port: ports.postgres };
    let postgres: RunningPostgres = await startEmbeddedPostgres(pgOptions);
    cleanups.push(() => postgres.stop());
    const databaseUrl = postgres.databaseUrl;
    await migrate(databaseUrl);
    const temporalOptions = {
      dbFile: path.join(dataDir, 'temporal', 'temporal.db'),
      port: ports.temporal,
      headless: true,
    };
    let temporal: RunningTemporal = await startTemporalDevServer(temporalOptions);
    cleanups.push(() => temporal.stop());
    cleanups.push(() => broker.close());

    const admin = new pg.Pool({ connectionString: databaseUrl, max: 4 });
    admin.on('error', () => undefined); // restarts end idle connections; the pool replaces them
    cleanups.push(() => admin.end());
    await admin.query(
      `INSERT INTO inventory (sku, on_hand) SELECT unnest($1::text[]), 1000000 ON CONFLICT DO NOTHING`,
      [SKUS],
    );
    const initialStock = await stockOf(admin);

    // ---- fault injectors ----
    const proxy = await startPgProxy({
      targetPort: ports.postgres,
      random: seededRandom(seed + 1),
      faults: { lostCommitReply: 0.1, reset: 0.04, latency: 0.03, latencyMs: 5_000 },
    });
    cleanups.push(() => proxy.close());
    const downstreamRandom = seededRandom(seed + 2);
    const downstreamCounts = { rateLimited: 0, serverErrors: 0, hangs: 0 };
    let downstreamFaults = true;
    let downstreamRequests = 0;
    const downstream = await startScriptedDownstream(admin, DOWNSTREAM_SECRET, 'chaos_consumer', (): Reply => {
      if (!downstreamFaults) return { kind: 'consumer' };
      // The first requests meet each fault once for certain; after that, chance decides.
      downstreamRequests += 1;
      const roll = downstreamRequests <= 3 ? [0.01, 0.1, 0.13][downstreamRequests - 1]! : downstreamRandom();
      if (roll < 0.06) {
        downstreamCounts.rateLimited += 1;
        return { kind: 'status', status: 429, headers: { 'retry-after': '1' } };
      }
      if (roll < 0.12) {
        downstreamCounts.serverErrors += 1;
        return { kind: 'status', status: roll < 0.09 ? 500 : 503 };
      }
      if (roll < 0.15) {
        downstreamCounts.hangs += 1;
        return { kind: 'hang' };
      }
      return { kind: 'consumer' };
    });
    cleanups.push(() => downstream.close());

    // ---- the service: the real API and worker entry points as processes ----
    const commonEnv = {
      ...process.env,
      ...POLICY,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      WEBHOOK_SECRET,
    };
    // The consumer binds its queue before the worker publishes: no event of the run is unroutable.
    await broker.startConsumer(databaseUrl, { ...commonEnv, DOWNSTREAM_SECRET });
    const api = managedProcess({
      name: 'api',
      entry: 'edges/http/main.ts',
      env: { ...commonEnv, DATABASE_URL: databaseUrl, PORT: String(ports.api) },
      readyLine: 'Server listening',
    });
    const worker = managedProcess({
      name: 'worker',
      entry: 'tools/chaos/worker-main.ts',
      env: {
        ...commonEnv,
        // The worker reaches PostgreSQL only through the fault proxy.
        DATABASE_URL: databaseUrl.replace(`:${ports.postgres}/`, `:${proxy.port}/`),
        DOWNSTREAM_URL: downstream.url,
        DOWNSTREAM_SECRET,
        // … and RabbitMQ only through the broker proxy, on an exchange of this run's own.
        AMQP_URL: broker.workerUrl,
        ORDER_EVENTS_EXCHANGE: broker.exchange,
        ...(values.broken ? { CHAOS_BROKEN: values.broken } : {}),
      },
      readyLine: 'worker polling',
    });
    cleanups.push(
      () => api.kill('SIGTERM'),
      () => worker.kill('SIGKILL'),
    );
    await Promise.all([api.start(), worker.start()]);
    const client = await connectClient({ address: temporal.address, namespace: 'default' });
    cleanups.push(() => client.connection.close());
    proxy.forceEachOnce();
    log(
      `stack ready in ${Date.now() - started} ms; ${size} approvals, seed ${seed}${values.broken ? `, BROKEN: ${values.broken}` : ''}`,
    );

    // ---- the fault schedule: by progress, so it is the same on a fast or a slow machine ----
    const faultCounts: Record<FaultKind, number> = {
      'worker-kill': 0,
      'temporal-restart': 0,
      'db-restart': 0,
      'lock-hold': 0,
      'consumer-kill': 0,
      'broker-cut': 0,
    };
    const scheduleRandom = seededRandom(seed + 3);
    const schedule: { at: number; kind: FaultKind }[] = [];
    const cycles = Math.max(1, Math.round(size / 100));
    for (let cycle = 0; cycle < cycles; cycle += 1) {
      const kinds = [...FAULT_KINDS].sort(() => scheduleRandom() - 0.5);
      kinds.forEach((kind, index) => {
        const slot = (cycle + (index + 0.5 + (scheduleRandom() - 0.5) * 0.5) / kinds.length) / cycles;
        schedule.push({ at: Math.floor(slot * size * 0.9), kind });
      });
    }
    schedule.sort((a, b) => a.at - b.at);
    let faultQueue: Promise<void> = Promise.resolve();
    const inject = (kind: FaultKind) => {
      faultQueue = faultQueue
        .then(async () => {
          log(`fault: ${kind}`);
          faultCounts[kind] += 1;
          const pause = between(scheduleRandom, 500, 2_000);
          if (kind === 'worker-kill') {
            await worker.kill('SIGKILL');
            await sleep(pause);
            await worker.start();
          } else if (kind === 'temporal-restart') {
            await temporal.stop();
            await sleep(pause);
            temporal = await startTemporalDevServer(temporalOptions);
          } else if (kind === 'db-restart') {
            await postgres.stop();
            await sleep(pause);
            postgres = await startEmbeddedPostgres(pgOptions);
          } else if (kind === 'consumer-kill') {
            await broker.killConsumerBeforeAck(pause, log);
          } else if (kind === 'broker-cut') {
            await broker.cutDuringPublish(log);
          } else {
            // Hold every chaos SKU's row past the lock timeout: writes meet a real lock timeout.
            const holder = await admin.connect();
            holder.on('error', () => undefined); // a database restart may end it; the query says so
            try {
              await holder.query('BEGIN');
              await holder.query('SELECT sku FROM inventory WHERE sku = ANY($1) ORDER BY sku FOR UPDATE', [SKUS]);
              await sleep(Number(POLICY.DB_STATEMENT_TIMEOUT_MS) + 1_000);
              await holder.query('COMMIT');
            } finally {
              holder.release();
            }
          }
        })
        .catch((error: unknown) => log(`fault ${kind} did not complete: ${String(error)}`));
    };

    // ---- the load: every approval through the real webhook, redelivered 1–5 times at once ----
    const answers = { accepted: 0, duplicate: 0, unavailable: 0, refused: 0, transportErrors: 0 };
    const post = async (approval: Approval): Promise<number> => {
      const deadline = Date.now() + 300_000;
      for (;;) {
        const timestamp = String(Math.floor(Date.now() / 1000));
        try {
          const response = await fetch(`http://127.0.0.1:${ports.api}/webhooks/oa/approvals`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-oa-timestamp': timestamp,
              'x-oa-signature': signBody(WEBHOOK_SECRET, timestamp, approval.body),
            },
            body: approval.body,
            signal: AbortSignal.timeout(15_000),
          });
          await response.arrayBuffer();
          if (response.status === 202 || response.status === 200) {
            answers[response.status === 202 ? 'accepted' : 'duplicate'] += 1;
            approval.acceptedAt ??= Date.now();
            return response.status;
          }
          if (response.status !== 503) {
            answers.refused += 1;
            return response.status;
          }
          answers.unavailable += 1;
        } catch {
          answers.transportErrors += 1;
        }
        // What an OA system does with a 503 or a timeout: redeliver later, same body.
        if (Date.now() > deadline) return 0;
        await sleep(300);
      }
    };
    const approvals = makeApprovals(random);
    // Paced so the load overlaps the faults: about 40 s for a CI-sized run, longer for big ones.
    const lanes = 6;
    const loadMs = Math.max(40_000, size * 300);
    const paceMs = (loadMs * lanes) / size;
    let submitted = 0;
    let nextFault = 0;
    const queue = [...approvals];
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        for (let approval = queue.shift(); approval; approval = queue.shift()) {
          const began = Date.now();
          await Promise.all(Array.from({ length: approval.copies }, () => post(approval)));
          submitted += 1;
          while (nextFault < schedule.length && (schedule[nextFault]?.at ?? Infinity) <= submitted) {
            inject((schedule[nextFault] as { kind: FaultKind }).kind);
            nextFault += 1;
          }
          await sleep(Math.max(0, paceMs * (0.5 + scheduleRandom()) - (Date.now() - began)));
        }
      }),
    );
    while (nextFault < schedule.length) inject((schedule[nextFault++] as { kind: FaultKind }).kind);
    log(`all ${size} approvals answered; waiting for the fault schedule to finish`);
    await faultQueue;

    // ---- drain: faults off; the harness acts as the operator for anything awaiting a decision ----
    proxy.setEnabled(false);
    downstreamFaults = false;
    const prefix = `CH${seed}-%`;
    const decided = { resubmitted: 0, redelivered: 0 };
    // Why the operator had to redeliver: the delivery error each redelivered order recorded last.
    const redeliveredAfter = new Map<string, number>();
    const drainDeadline = Date.now() + (values.broken ? 60_000 : 240_000 + size * 200);
    let running = Number.NaN;
    log('draining');
    while (Date.now() < drainDeadline) {
      const { rows } = await admin.query<{ idempotent_key: string; status: string; last_error: string | null }>(
        `SELECT idempotent_key, status, last_error FROM idempotency_record WHERE approval_no LIKE $1`,
        [prefix],
      );
      for (const row of rows) {
        const decision =
          row.status === 'COMPENSATING'
            ? ('resubmit' as const)
            : row.status === 'DELIVERY_FAILED'
              ? ('redeliver' as const)
              : undefined;
        if (!decision) continue;
        const workflowId =
          decision === 'resubmit'
            ? compensationWorkflowIdFor(row.idempotent_key)
            : orderWorkflowIdFor(row.idempotent_key);
        try {
          await client.workflow
            .getHandle(workflowId)
            .executeUpdate(decideUpdate, { args: [{ decision, decidedBy: 'chaos-operator' }] });
          decided[decision === 'resubmit' ? 'resubmitted' : 'redelivered'] += 1;
          if (decision === 'redeliver') {
            const cause = (row.last_error ?? 'unknown').slice(0, 100);
            redeliveredAfter.set(cause, (redeliveredAfter.get(cause) ?? 0) + 1);
          }
        } catch {
          // Not waiting for a decision yet (reconciliation still running): try again next round.
        }
      }
      running = (await client.workflow.count(`TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running'`)).count;
      const waiting = rows.filter((row) => row.status !== 'DELIVERED').length;
      if (running === 0 && (waiting === 0 || values.broken)) break;
      await sleep(1_000);
    }

    // ---- and once more after they finished: every redelivery must be a duplicate ----
    const lateAnswers = await Promise.all(approvals.filter(() => random() < 0.3).map((approval) => post(approval)));
    const lateStarts = lateAnswers.filter((status) => status === 202).length;
    await sleep(500);
    // The broker consumer catches up: its queue empty, and one effect per delivered order.
    const deliveredCount = async () =>
      (
        await admin.query<{ delivered: string }>(
          `SELECT count(*) AS delivered FROM idempotency_record WHERE approval_no LIKE $1 AND status = 'DELIVERED'`,
          [prefix],
        )
      ).rows[0]?.delivered;
    const consumerDeadline = Date.now() + 120_000;
    while (Date.now() < consumerDeadline) {
      // The broken variant's statuses are not checked (its writes are filed under other keys), so the
      // delivered count means nothing there: an empty queue is all it waits for.
      const caughtUp =
        (await broker.queued()) === 0 &&
        (values.broken !== undefined ||
          (await effectsOf(admin, broker.consumerSchema)).keys >= Number(await deliveredCount()));
      if (caughtUp) break;
      await sleep(1_000);
    }
    running = (await client.workflow.count(`TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running'`)).count;

    // ---- the checks, from the database and Temporal themselves ----
    const orders = await admin.query<{ approval_no: string; operation: string; orders: string; created_at: Date }>(
      `SELECT approval_no, operation, count(*) AS orders, min(created_at) AS created_at
       FROM order_main WHERE approval_no LIKE $1 GROUP BY approval_no, operation`,
      [prefix],
    );
    const ordersByKey = new Map(
      orders.rows.map((row) => [idempotencyKeyFor(row.approval_no, row.operation as 'MAIN'), row]),
    );
    const ordersWritten = orders.rows.reduce((sum, row) => sum + Number(row.orders), 0);
    const maxPerKey = Math.max(0, ...orders.rows.map((row) => Number(row.orders)));
    const duplicates = orders.rows.reduce((sum, row) => sum + Number(row.orders) - 1, 0);
    const records = await admin.query<{ idempotent_key: string; status: string }>(
      `SELECT idempotent_key, status FROM idempotency_record WHERE approval_no LIKE $1`,
      [prefix],
    );
    const statusByKey = new Map(records.rows.map((row) => [row.idempotent_key, row.status]));
    const lost = approvals.filter(
      (approval) =>
        !ordersByKey.has(approval.key) &&
        !['COMPENSATING', 'COMPENSATED'].includes(statusByKey.get(approval.key) ?? ''),
    );
    const inCompensation = approvals.filter(
      (approval) => !ordersByKey.has(approval.key) && !lost.includes(approval),
    ).length;

    const finalStock = await stockOf(admin);
    const ordered = await admin.query<{ sku: string; quantity: string }>(
      `SELECT l.sku, sum(l.quantity) AS quantity FROM order_line l JOIN order_main o ON o.id = l.order_id
       WHERE o.approval_no LIKE $1 GROUP BY l.sku`,
      [prefix],
    );
    const orderedBySku = new Map(ordered.rows.map((row) => [row.sku, Number(row.quantity)]));
    let stockExact = true;
    let initialAvailable = 0;
    let finalAvailable = 0;
    let totalOrdered = 0;
    for (const sku of SKUS) {
      const before = initialStock.get(sku) ?? { onHand: 0, reserved: 0 };
      const after = finalStock.get(sku) ?? { onHand: 0, reserved: 0 };
      const quantity = orderedBySku.get(sku) ?? 0;
      initialAvailable += before.onHand - before.reserved;
      finalAvailable += after.onHand - after.reserved;
      totalOrdered += quantity;
      if (after.onHand !== before.onHand || after.reserved - before.reserved !== quantity) stockExact = false;
    }

    const httpEffects = await effectsOf(admin, 'chaos_consumer');
    const brokerEffects = await effectsOf(admin, broker.consumerSchema);
    const brokerDeliveries = broker.deliveries();
    const delivered = records.rows.filter((row) => row.status === 'DELIVERED').length;

    // Attempts as the histories record them: each attempt of an activity task, and the attempt each
    // local write ended on (its marker). A local write that ran on a workflow task that was lost (its
    // worker killed, Temporal restarted) left no marker: the next run starts again from attempt 1
    // and, when the lost run had committed, finds the order — counted here.
    const attempts: Record<string, Record<number, number>> = {};
    const writeReruns = { afterLostTask: 0, foundWritten: 0 };
    for await (const execution of client.workflow.list({ query: `TaskQueue = '${TASK_QUEUE}'` })) {
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      const steps = historySteps(history);
      attemptsByActivityType(steps, attempts);
      const write = steps.find((step) => step.kind === 'local-activity' && step.activityType === 'writeOrder');
      if (!write || write.kind !== 'local-activity') continue;
      if (steps.slice(0, steps.indexOf(write)).some((step) => step.kind === 'workflow-task-lost')) {
        writeReruns.afterLostTask += 1;
        // Found at its first attempt: the order was committed by the run on the lost task.
        const found = (write.result as { alreadyWritten?: boolean } | undefined)?.alreadyWritten === true;
        if (found && write.attempt === 1) writeReruns.foundWritten += 1;
      }
    }
    const policyAttempts = Number(POLICY.RETRY_MAX_ATTEMPTS);
    const maxWriteAttempt = Math.max(0, ...Object.keys(attempts.writeOrder ?? {}).map(Number));
    const maxDeliveryAttempt = Math.max(0, ...Object.keys(attempts.deliverOrderEvent ?? {}).map(Number));

    const latencies = approvals
      .map((approval) => {
        const order = ordersByKey.get(approval.key);
        return order && approval.acceptedAt ? Math.max(0, order.created_at.getTime() - approval.acceptedAt) : undefined;
      })
      .filter((value): value is number => value !== undefined)
      .sort((a, b) => a - b);

    const faults = {
      'lost COMMIT reply (db proxy)': proxy.counts.lostCommitReplies,
      'connection reset (db proxy)': proxy.counts.resets,
      'reply delayed past timeout (db proxy)': proxy.counts.latencies,
      'row locks held past lock timeout': faultCounts['lock-hold'],
      'worker SIGKILL + restart': faultCounts['worker-kill'],
      'Temporal restart': faultCounts['temporal-restart'],
      'PostgreSQL restart': faultCounts['db-restart'],
      'downstream 429 + Retry-After': downstreamCounts.rateLimited,
      'downstream 5xx': downstreamCounts.serverErrors,
      'downstream hang': downstreamCounts.hangs,
      'broker consumer SIGKILL with a committed, unacked message': broker.counts.consumerKillsBeforeAck,
      'worker↔broker connections cut during a publish': broker.counts.publishCuts,
    };
    const silentFaults = Object.entries(faults)
      .filter(([, count]) => count === 0)
      .map(([kind]) => kind);

    const checks: [string, string | number, string, boolean][] = [
      ['approvals submitted', size, '', true],
      [
        'webhook deliveries (202 / 200 / 503 / refused / transport errors)',
        `${answers.accepted} / ${answers.duplicate} / ${answers.unavailable} / ${answers.refused} / ${answers.transportErrors}`,
        'refused 0',
        answers.refused === 0,
      ],
      [
        'approvals accepted',
        approvals.filter((approval) => approval.acceptedAt).length,
        `${size}`,
        approvals.every((approval) => approval.acceptedAt),
      ],
      ['orders written', ordersWritten, `≤ ${size}`, ordersWritten <= size],
      ['orders per approval+operation (max)', maxPerKey, '≤ 1', maxPerKey <= 1],
      ['duplicate orders', duplicates, '0', duplicates === 0],
      ['approvals neither ordered nor in compensation (lost)', lost.length, '0', lost.length === 0],
      ['approvals left in compensation', inCompensation, '', true],
      [
        'compensations resubmitted / deliveries redelivered by the operator',
        `${decided.resubmitted} / ${decided.redelivered}`,
        '',
        true,
      ],
      [
        'stock: initial available − ordered = final available',
        `${initialAvailable} − ${totalOrdered} = ${finalAvailable}`,
        'exact',
        stockExact && initialAvailable - totalOrdered === finalAvailable,
      ],
      ...[
        ['events applied by the consumer (per key, max)', httpEffects] as const,
        ['events applied by the broker consumer (per key, max)', brokerEffects] as const,
      ].map(([name, effects]): [string, string, string, boolean] => [
        name,
        `${effects.keys} (${effects.maxPerKey})`,
        `${delivered} (≤ 1)`,
        effects.maxPerKey <= 1 && (values.broken !== undefined || effects.keys === delivered),
      ]),
      [
        'broker consumer: applied / redeliveries absorbed / second publishes absorbed',
        `${brokerDeliveries.applied} / ${brokerDeliveries.redeliveriesAbsorbed} / ${brokerDeliveries.republishesAbsorbed}`,
        '',
        true,
      ],
      ['broker message ids delivered more than once', brokerDeliveries.messageIdsDeliveredAgain, '', true],
      ['redeliveries after the end that started a workflow', lateStarts, '0', lateStarts === 0],
      ['workflows still open after drain', running, '0', running === 0],
      [
        'orders not DELIVERED after drain',
        records.rows.filter((row) => row.status !== 'DELIVERED').length,
        '0',
        values.broken !== undefined || records.rows.every((row) => row.status === 'DELIVERED'),
      ],
      [
        'writeOrder local runs by the attempt they ended on (attempt: runs)',
        formatHistogram(attempts.writeOrder),
        `max ${policyAttempts}`,
        // No write in the histories at all would mean this check read nothing.
        maxWriteAttempt >= 1 && maxWriteAttempt <= policyAttempts,
      ],
      [
        'writes run again after a lost workflow task (found the order at attempt 1)',
        `${writeReruns.afterLostTask} (${writeReruns.foundWritten})`,
        '',
        true,
      ],
      [
        'deliverOrderEvent attempts (attempt: activities)',
        formatHistogram(attempts.deliverOrderEvent),
        `max ${policyAttempts}`,
        maxDeliveryAttempt <= policyAttempts,
      ],
      [
        'webhook accepted → order committed, p50 / p99',
        `${percentile(latencies, 50)} ms / ${percentile(latencies, 99)} ms`,
        '',
        true,
      ],
      ...Object.entries(faults).map(([kind, count]): [string, number, string, boolean] => [
        `fault: ${kind}`,
        count,
        '> 0',
        count > 0,
      ]),
      ['wall time', `${Math.round((Date.now() - started) / 1000)} s`, '', true],
    ];
    printTable(checks);
    const failed = checks.filter(([, , , ok]) => !ok).map(([name]) => name);
    if (values.out) {
      mkdirSync(path.dirname(path.resolve(values.out)), { recursive: true });
      writeFileSync(
        values.out,
        JSON.stringify(
          {
            seed,
            size,
            broken: values.broken ?? null,
            checks: checks.map(([name, value, expected, ok]) => ({ name, value, expected, ok })),
            duplicateKeys: orders.rows
              .filter((row) => Number(row.orders) > 1)
              .map((row) => `${row.approval_no}:${row.operation}`),
            lostKeys: lost.map((approval) => approval.key),
          },
          null,
          2,
        ) + '\n',
      );
    }
    if (duplicates > 0)
      console.log(
        `DUPLICATES: ${orders.rows
          .filter((row) => Number(row.orders) > 1)
          .map((row) => `${row.approval_no}:${row.operation} ×${row.orders}`)
          .join(', ')}`,
      );
    if (lost.length > 0) console.log(`LOST: ${lost.map((approval) => approval.key).join(', ')}`);
    if (running > 0) {
      const open: string[] = [];
      for await (const execution of client.workflow.list({
        query: `TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running'`,
      })) {
        open.push(execution.workflowId);
      }
      console.log(`open workflows: ${open.join(', ')}`);
    }
    const unfinished = records.rows.filter((row) => row.status !== 'DELIVERED');
    if (unfinished.length > 0) {
      console.log(
        `not DELIVERED at the end: ${unfinished.map((row) => `${row.idempotent_key} ${row.status}`).join(', ')}`,
      );
    }
    for (const [cause, count] of redeliveredAfter) console.log(`redelivered by the operator ×${count} after: ${cause}`);
    if (silentFaults.length > 0)
      console.log(`faults that never fired (this run proves less): ${silentFaults.join(', ')}`);
    console.log(
      failed.length === 0 ? 'RESULT: PASS — no duplicate, no loss, stock exact' : `RESULT: FAIL — ${failed.join('; ')}`,
    );
    return failed.length === 0 ? 0 : 1;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    if (!values.keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The effects a consumer's ledger holds for this run: how many keys, and the most for one key. */
async function effectsOf(db: pg.Pool, schema: string): Promise<{ keys: number; maxPerKey: number }> {
  const { rows } = await db.query<{ effects: string }>(
    `SELECT count(*) AS effects FROM ${schema}.shipment_request GROUP BY idempotency_key`,
  );
  return { keys: rows.length, maxPerKey: Math.max(0, ...rows.map((row) => Number(row.effects))) };
}

async function stockOf(db: pg.Pool): Promise<Map<string, { onHand: number; reserved: number }>> {
  const { rows } = await db.query<{ sku: string; on_hand: number; reserved: number }>(
    'SELECT sku, on_hand, reserved FROM inventory WHERE sku = ANY($1)',
    [SKUS],
  );
  return new Map(rows.map((row) => [row.sku, { onHand: row.on_hand, reserved: row.reserved }]));
}

function formatHistogram(histogram: Record<number, number> | undefined): string {
  if (!histogram) return 'none';
  return Object.entries(histogram)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([attempt, count]) => `${attempt}: ${count}`)
    .join(', ');
}

function printTable(rows: [string, string | number, string, boolean][]): void {
  const width = Math.max(...rows.map(([name]) => name.length));
  const valueWidth = Math.max(...rows.map(([, value]) => String(value).length));
  console.log('');
  console.log(`${'check'.padEnd(width)}  ${'value'.padEnd(valueWidth)}  expected   ok`);
  console.log(`${'-'.repeat(width)}  ${'-'.repeat(valueWidth)}  ---------  --`);
  for (const [name, value, expected, ok] of rows) {
    console.log(
      `${name.padEnd(width)}  ${String(value).padEnd(valueWidth)}  ${expected.padEnd(9)}  ${ok ? 'ok' : 'FAIL'}`,
    );
  }
  console.log('');
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
