// The explorer's own stack, started once per invocation: the harness's stack (PostgreSQL embedded,
// or a fresh database on DATABASE_URL's server, and a Temporal dev server in memory), the real API
// and worker as child processes — the API reaching Temporal through a TCP proxy the explorer
// controls, the worker reaching the order store through the fault proxy — and a downstream so
// deliveries succeed or fail for good. The order store is that PostgreSQL, or with `--store mysql`
// a database of the run's own on the MySQL/MariaDB at MYSQL_TEST_URL (the downstream's ledger
// stays on PostgreSQL).
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { ManagedProcess } from '../harness/child-process.js';
import { startMysqlProxy } from '../chaos/mysql-proxy.js';
import { type PgProxy, type PgProxyFaults, startPgProxy } from '../chaos/pg-proxy.js';
import { migratedMysqlStore } from '../harness/mysql.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import type { Store } from '../../services/db/stores/store-of-url.js';
import { seededRandom } from '../chaos/prng.js';
import { apiProcess, workerProcess } from '../harness/service-processes.js';
import { startStack as startHarnessStack } from '../harness/stack.js';
import { temporalBinary } from '../harness/temporal-dev-server.js';
import { EXPLORER_TIMINGS } from '../harness/timings.js';
import { connectClient } from '../../services/temporal/connection.js';
import { loadConfig } from '../../app/env.js';
import { makeBuildCurrent } from '../harness/worker-deployment.js';
import type { Client } from '@temporalio/client';
import { type ScriptedDownstream, startScriptedDownstream } from '../harness/scripted-downstream.js';
import { startTcpProxy, type TcpProxy } from '../harness/tcp-proxy.js';
import { type BrokenRule, entryPointsFor } from './broken-rules.js';
import { type FakeWeCom, randomWeComAesKey, startFakeWeCom } from '../harness/fake-wecom.js';
import { type FakeDingTalk, startFakeDingTalk } from '../harness/fake-dingtalk.js';
import { freePort, waitFor } from '../harness/ports.js';
import { type FakeFeishu, startFakeFeishu } from '../harness/fake-feishu.js';

/** The customer whose events the downstream refuses for good (422). */
export const REFUSED_CUSTOMER = 'CUST-REFUSED';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const WEBHOOK_SECRET = 'explorer-webhook-secret-0123456789';
export const MCP_TOKEN = 'explorer-mcp-token-0123456789abcdef';
const DOWNSTREAM_SECRET = 'explorer-downstream-secret-0123456789';
export const TASK_QUEUE = 'explorer';
/** The WeCom connector's callback settings: approvals also arrive through it (`connector`). */
export const WECOM_TOKEN = 'explorer-wecom-token';
/** The Feishu chat decision cards go to, and the one operator whose clicks decide. */
export const DECISION_CHAT = 'oc_explorerdecisions0001';
export const CARD_OPERATOR = 'ou_explorercardoperator01';
/** Whom the receipts are posted as: Feishu's and DingTalk's commenter, WeCom's app. */
const RECEIPTS = { FEISHU_RECEIPT_USER_ID: 'ou_explorerreceipts01', DINGTALK_RECEIPT_USER_ID: 'explorer-receipts' };
export const WECOM_AES_KEY = randomWeComAesKey();
/** The mapping file the connector's forms are read with (its `wecom` section). */
const FORM_MAPPING = path.join(ROOT, 'examples/oa-form-mapping.json');

export const DECISION_WINDOW_MS = Number(EXPLORER_TIMINGS.COMPENSATION_DECISION_TIMEOUT_MS);

/**
 * The API's INTAKE_MAX_IN_FLIGHT: below the most copies `concurrent` sends at once (6), so the
 * explorer meets the shedding too, and checks that it sheds only beyond the cap or under a fault.
 */
export const INTAKE_MAX_IN_FLIGHT = 4;

/** What the API, the worker and `orders-cli` all run with. */
const SERVICE_SETTINGS = {
  ...EXPLORER_TIMINGS,
  NODE_ENV: 'test',
  TEMPORAL_TASK_QUEUE: TASK_QUEUE,
  DB_POOL_SIZE: '4',
  // Two for deliveries and compensation steps, two for the order writes: the pool holds them all.
  WORKER_MAX_CONCURRENT_ACTIVITIES: '2',
};

/** Plenty of stock for ordinary orders; a scarce SKU whose orders fail for good. */
export const SKUS = ['EXP-A', 'EXP-B', 'EXP-C'];
export const SCARCE_SKU = 'EXP-SCARCE';
export const STOCK = 1_000_000;
export const SCARCE_STOCK = 5;

export interface Stack {
  apiUrl: string;
  /** The order store's URL (PostgreSQL's or MySQL's). */
  databaseUrl: string;
  temporalAddress: string;
  /** PostgreSQL, for the downstream's ledger. */
  db: pg.Pool;
  /** The order store, straight (not through the fault proxy), for the checks' reads. */
  orders: PrismaClient;
  temporal: Client;
  temporalProxy: TcpProxy;
  pgProxy: PgProxy;
  /** The live fault odds of the database proxy: set a field, the next transaction sees it. */
  pgFaults: PgProxyFaults;
  worker: ManagedProcess;
  api: ManagedProcess;
  downstream: ScriptedDownstream;
  /** The fake WeCom API the worker reads the connector's approvals from. */
  wecom: FakeWeCom;
  /** The fake Feishu open API and long-connection service: the API holds its connection (`long-connection`). */
  feishu: FakeFeishu;
  /** The fake DingTalk open API and Stream gateway: the API holds its connection (`stream`). */
  dingtalk: FakeDingTalk;
  /** The node arguments that start `orders-cli`, before the command's own. */
  cliArgs: string[];
  /**
   * Runs the API, the worker and `orders-cli` with `rule` broken on purpose, or the product's when
   * undefined: a process whose entry point changes is stopped and started again (the API on the
   * same port, holding its vendor connections again), the rest of the stack is kept.
   */
  useBrokenRule(rule: BrokenRule | undefined): Promise<void>;
  /** The stack's environment for `orders-cli` (straight to PostgreSQL and Temporal). */
  cliEnv: NodeJS.ProcessEnv;
  temporalBin: string;
  stop: () => Promise<void>;
}

/** `brokenRule`: the API, the worker or `orders-cli` is one with that rule broken on purpose (./broken-rules.ts). */
export async function startStack(options: {
  brokenRule?: BrokenRule;
  store?: Store;
  log: (line: string) => void;
}): Promise<Stack> {
  const entryPoints = entryPointsFor(options.brokenRule);
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'orders-explore-'));
    // As root, PostgreSQL runs as its own user, which must reach the data folder.
    chmodSync(dataDir, 0o755);
    cleanups.push(() => Promise.resolve(rmSync(dataDir, { recursive: true, force: true })));

    // Embedded PostgreSQL, or — when DATABASE_URL is set — a database of its own on that server;
    // always a Temporal dev server of its own, in memory.
    const stack = await startHarnessStack({
      dataDir,
      ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL, freshDatabase: true } : {}),
      headless: true,
      persistTemporal: false,
    });
    cleanups.push(() => stack.stop());
    const { temporalAddress } = stack;

    const db = new pg.Pool({ connectionString: stack.databaseUrl, max: 4 });
    db.on('error', () => undefined);
    cleanups.push(() => db.end());
    const databaseUrl = options.store === 'mysql' ? await migratedMysqlStore(cleanups) : stack.databaseUrl;
    const orders = createPrismaClient({ databaseUrl, poolSize: 4, statementTimeoutMs: 30_000 });
    cleanups.push(() => orders.$disconnect());
    await orders.inventory.createMany({
      data: [...SKUS.map((sku) => ({ sku, onHand: STOCK })), { sku: SCARCE_SKU, onHand: SCARCE_STOCK }],
      skipDuplicates: true,
    });

    const target = new URL(databaseUrl);
    const pgFaults: PgProxyFaults = { lostCommitReply: 0, reset: 0, latency: 0, latencyMs: 0 };
    const pgProxy =
      options.store === 'mysql'
        ? await startMysqlProxy({
            target: { host: target.hostname, port: Number(target.port || 3306) },
            random: seededRandom(1),
            faults: pgFaults,
          })
        : await startPgProxy({ targetPort: Number(target.port), random: seededRandom(1), faults: pgFaults });
    cleanups.push(() => pgProxy.close());
    const proxied = new URL(databaseUrl);
    proxied.host = `127.0.0.1:${pgProxy.port}`;
    const temporalProxy = await startTcpProxy(temporalAddress);
    cleanups.push(() => temporalProxy.close());
    // Events of the customer the model marks as refused are answered 422 for good, so both
    // DELIVERED and DELIVERY_FAILED happen; everything else reaches the reference consumer.
    const downstream = await startScriptedDownstream(db, DOWNSTREAM_SECRET, 'explorer_consumer', (arrival) =>
      arrival.body.includes(REFUSED_CUSTOMER) ? { kind: 'status', status: 422 } : { kind: 'consumer' },
    );
    cleanups.push(() => downstream.close());

    const wecom = await startFakeWeCom();
    cleanups.push(() => wecom.close());
    const feishu = await startFakeFeishu();
    cleanups.push(() => feishu.close());
    const dingtalk = await startFakeDingTalk();
    cleanups.push(() => dingtalk.close());

    const common = {
      ...SERVICE_SETTINGS,
      LOG_LEVEL: 'info',
      WEBHOOK_SECRET,
      OA_FORM_MAPPING: FORM_MAPPING,
      WECOM_CORP_ID: wecom.corpId,
      WECOM_AGENT_SECRET: wecom.agentSecret,
      WECOM_TOKEN,
      WECOM_ENCODING_AES_KEY: WECOM_AES_KEY,
      WECOM_API_BASE_URL: wecom.url,
      // Feishu's events come over the long connection the API opens (no callback).
      FEISHU_EVENT_MODE: 'long-connection',
      FEISHU_APP_ID: feishu.appId,
      FEISHU_APP_SECRET: feishu.appSecret,
      FEISHU_API_BASE_URL: feishu.url,
      // DingTalk's events come over the Stream connection the API opens (no callback).
      DINGTALK_EVENT_MODE: 'stream',
      DINGTALK_APP_KEY: dingtalk.appKey,
      DINGTALK_APP_SECRET: dingtalk.appSecret,
      DINGTALK_API_BASE_URL: dingtalk.url,
      // Decision cards in a Feishu chat, clicked over the long connection; receipts in every vendor.
      FEISHU_DECISION_CHAT_ID: DECISION_CHAT,
      FEISHU_OPERATOR_OPEN_IDS: CARD_OPERATOR,
      ...RECEIPTS,
      WECOM_RECEIPTS: 'on',
      WECOM_AGENT_ID: '1000017',
    };
    const apiPort = await freePort();
    const apiOn = (entry: string) =>
      apiProcess({
        stack,
        port: apiPort,
        entry,
        // The API reaches Temporal only through the proxy the explorer controls.
        env: {
          ...common,
          DATABASE_URL: databaseUrl,
          TEMPORAL_ADDRESS: `127.0.0.1:${temporalProxy.port}`,
          MCP_TOKEN,
          INTAKE_MAX_IN_FLIGHT: String(INTAKE_MAX_IN_FLIGHT),
        },
      });
    const workerOn = (entry: string | undefined) =>
      workerProcess({
        stack,
        ...(entry ? { entry } : {}),
        env: {
          ...common,
          // The worker reaches the order store only through the fault proxy.
          DATABASE_URL: proxied.toString(),
          DOWNSTREAM_URL: downstream.url,
          DOWNSTREAM_SECRET,
        },
        readyTimeoutMs: 180_000,
      });
    /** Once the API (re)started: it holds its Feishu long connection and DingTalk Stream. */
    const vendorConnectionsHeld = async () => {
      await feishu.longConnection.connected(1);
      await waitFor(
        "the API holding DingTalk's Stream connection",
        () => Promise.resolve(dingtalk.stream.openConnections() > 0),
        60_000,
      );
    };
    const running = {
      entries: entryPoints,
      api: await apiOn(entryPoints.api),
      worker: workerOn(entryPoints.worker),
    };
    cleanups.push(
      () => running.api.kill('SIGKILL'),
      () => running.worker.kill('SIGKILL'),
    );
    await Promise.all([running.api.start(), running.worker.start()]);
    await vendorConnectionsHeld();
    // Run with TEMPORAL_DEPLOYMENT_NAME + TEMPORAL_BUILD_ID, the worker is versioned: its build is
    // made current, as at a deploy, or it would get no task.
    const { deployment } = loadConfig(process.env).worker;
    if (deployment) await makeBuildCurrent(temporalAddress, deployment);
    const temporal = await connectClient({ address: temporalAddress, namespace: stack.namespace });
    cleanups.push(() => temporal.connection.close());
    options.log(
      `${options.store === 'mysql' ? 'orders on MySQL/MariaDB, ledger on ' : ''}PostgreSQL ` +
        `${process.env.DATABASE_URL ? 'database on DATABASE_URL' : 'embedded'}, Temporal ${temporalAddress} ` +
        `(API via proxy :${temporalProxy.port}), worker to the order store via fault proxy :${pgProxy.port}`,
    );

    const explorerStack: Stack = {
      apiUrl: running.api.url,
      databaseUrl,
      temporalAddress,
      db,
      orders,
      temporal,
      temporalProxy,
      pgProxy,
      pgFaults,
      worker: running.worker,
      api: running.api,
      downstream,
      wecom,
      feishu,
      dingtalk,
      cliArgs: entryPoints.cli,
      cliEnv: {
        ...process.env,
        ...SERVICE_SETTINGS,
        LOG_LEVEL: 'error',
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: temporalAddress,
      },
      temporalBin: temporalBinary(),
      stop,
      async useBrokenRule(rule) {
        const wanted = entryPointsFor(rule);
        explorerStack.cliArgs = wanted.cli;
        if (wanted.api !== running.entries.api) {
          await running.api.kill('SIGKILL');
          await waitFor(
            "the old API's vendor connections closed",
            () =>
              Promise.resolve(
                feishu.longConnection.openConnections().length === 0 && dingtalk.stream.openConnections() === 0,
              ),
            30_000,
          );
          running.api = await apiOn(wanted.api);
          explorerStack.api = running.api;
          await running.api.start();
          await vendorConnectionsHeld();
        }
        if (wanted.worker !== running.entries.worker) {
          await running.worker.kill('SIGKILL');
          running.worker = workerOn(wanted.worker);
          explorerStack.worker = running.worker;
          await running.worker.start();
        }
        running.entries = wanted;
      },
    };
    return explorerStack;
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Runs a program of the project (or the Temporal CLI) to its end: exit code and output. */
export function runProgram(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 90_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 124 : 1), stdout, stderr });
    });
  });
}
