// A real service for integration tests: the API (driven through fastify's inject), a worker on a
// task queue of its own and real clients, against the Temporal dev server and PostgreSQL that the
// test runner started (DATABASE_URL, TEMPORAL_ADDRESS). Started once per test file.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { OaVendor } from '../../domain/oa-approval.js';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime, type Worker } from '@temporalio/worker';
import { type AppDeps, buildApp } from '../../edges/http/app.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { type Config, loadConfig } from '../../app/env.js';
import { workerSlots } from '../../worker/worker-slots.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { connectClient, temporalTargetFrom } from '../../services/temporal/connection.js';
import { connectWorker, createWorker, type WorkerDeps } from '../../worker/create-worker.js';
import { tracingOn } from '../../services/telemetry/tracing.js';
import { workflowCode } from '../../worker/workflow-bundle.js';
import {
  connectorsFromConfig,
  decisionCardSendersFromConfig,
  readersFromConfig,
  receiptPostersFromConfig,
} from '../../vendors/registry.js';
import { signedHeaders, TEST_WEBHOOK_SECRET } from './signed-webhook.js';
import { sleep } from './time.js';
import { TEST_TIMINGS } from './timings.js';

export function stackEnv(): { databaseUrl: string; temporalAddress: string } {
  const databaseUrl = process.env.DATABASE_URL;
  const temporalAddress = process.env.TEMPORAL_ADDRESS;
  if (!databaseUrl || !temporalAddress) {
    throw new Error('integration tests need DATABASE_URL and TEMPORAL_ADDRESS: run them through `npm test`');
  }
  return { databaseUrl, temporalAddress };
}

/** Short, test-mode timings (tools/harness/timings.ts): never slept through at production values. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig(testEnv(overrides));
}

/** The environment behind `testConfig`, for a process that must run with the same settings. */
export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  const { databaseUrl, temporalAddress } = stackEnv();
  return {
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE: `test-${randomBytes(4).toString('hex')}`,
    WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    ...TEST_TIMINGS,
    // The workflow bundles the runner built once for the whole run, instead of one per process.
    ...(process.env.WORKFLOW_BUNDLE_DIR ? { WORKFLOW_BUNDLE_DIR: process.env.WORKFLOW_BUNDLE_DIR } : {}),
    ...overrides,
  };
}

export interface TestService {
  config: Config;
  prisma: PrismaClient;
  temporal: Client;
  app: ReturnType<typeof buildApp>;
  /** Undefined when the test runs its workers as separate processes. */
  worker: Worker | undefined;
  stop: () => Promise<void>;
}

let runtimeInstalled = false;

/**
 * Worker logs at ERROR during tests, the SDK core's own included (a local activity that waits for
 * a slot warns of a long workflow task): expected failures (the point of many tests) stay quiet.
 */
function quietRuntime() {
  if (runtimeInstalled) return;
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  runtimeInstalled = true;
}

export async function startTestService(
  options: {
    config?: Config;
    activities?: WorkerDeps['activities'];
    inProcessWorker?: boolean;
    /** The OA approval readers of the worker; by default those the config turns on. */
    readers?: WorkerDeps['readers'];
    /** The OA connectors of the HTTP edge; by default those the config turns on. */
    connectors?: AppDeps['connectors'];
    /** Where the HTTP edge and the in-process worker count; by default nowhere. */
    metrics?: AppDeps['metrics'];
  } = {},
): Promise<TestService> {
  quietRuntime();
  const config = options.config ?? testConfig();
  const databaseUrl = config.databaseUrl as string;
  const target = temporalTargetFrom(config.temporal);
  const prisma = createPrismaClient({
    databaseUrl,
    poolSize: config.dbPoolSize,
    statementTimeoutMs: config.writePolicy.statementTimeoutMs,
  });
  const temporal = await connectClient(target);
  let worker: Worker | undefined;
  let stopWorker = () => Promise.resolve();
  if (options.inProcessWorker !== false) {
    const connection = await connectWorker(target);
    const running = await createWorker({
      workflows: await workflowCode({ traced: tracingOn(), dir: config.worker.bundleDir }),
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      prisma,
      temporal,
      downstream: config.downstream,
      broker: config.broker,
      readers: options.readers ?? readersFromConfig(config.connectors, config.writePolicy),
      formMapping: config.connectors.formMapping?.file,
      decisionCardSenders: decisionCardSendersFromConfig(config.connectors),
      receiptPosters: receiptPostersFromConfig(config.connectors),
      decisionCardLookEveryMs: config.decisionCards.lookEveryMs,
      temporalUiUrl: config.decisionCards.temporalUiUrl,
      // The app below shares this pool, as an API hosting its worker does: the same room is kept for it.
      slots: workerSlots(config, true),
      ...(options.activities ? { activities: options.activities } : {}),
      ...(options.metrics ? { metrics: options.metrics } : {}),
    });
    const done = running.run();
    worker = running;
    stopWorker = async () => {
      // A test may have shut it down itself (to see what a stopping worker answers).
      if (running.getState() === 'RUNNING') running.shutdown();
      await done;
      await connection.close();
    };
  }
  const app = buildApp({
    config,
    prisma,
    temporal,
    connectors: options.connectors ?? connectorsFromConfig(config),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
  await app.ready();
  return {
    config,
    prisma,
    temporal,
    app,
    worker,
    stop: async () => {
      await app.close();
      await stopWorker();
      await Promise.all([prisma.$disconnect(), temporal.connection.close()]);
    },
  };
}

/**
 * The example mapping (examples/oa-form-mapping.json), each vendor named limited to the approval
 * definitions given, written to a file of its own: its path, for OA_FORM_MAPPING.
 */
export function exampleMappingFile(definitions: Partial<Record<OaVendor, string[]>>): string {
  const mapping = JSON.parse(readFileSync(new URL('../../examples/oa-form-mapping.json', import.meta.url), 'utf8')) as {
    vendors: Partial<Record<OaVendor, Record<string, unknown>>>;
  };
  for (const [vendor, codes] of Object.entries(definitions) as [OaVendor, string[]][]) {
    mapping.vendors[vendor] = { ...mapping.vendors[vendor], definitions: codes };
  }
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'oa-mapping-')), 'mapping.json');
  writeFileSync(file, JSON.stringify(mapping));
  return file;
}

/** A unique approval number per test, so tests share one database without touching each other. */
export function uniqueApprovalNo(prefix = 'AP'): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

export interface ApprovalBody {
  approvalNo: string;
  operation: 'MAIN' | 'SUPPLEMENT';
  approvedAt: string;
  order: { customerId: string; currency: string; lines: { sku: string; quantity: number; unitPrice: string }[] };
}

export function approval(approvalNo: string, sku: string, overrides: Partial<ApprovalBody> = {}): ApprovalBody {
  return {
    approvalNo,
    operation: 'MAIN',
    approvedAt: '2026-11-29T10:00:00+08:00',
    order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku, quantity: 2, unitPrice: '10.50' }] },
    ...overrides,
  };
}

/** A new approval (MAIN) of one line, on a SKU of its own with 100 in stock, and its key. */
export async function freshApproval(prisma: PrismaClient, prefix: string) {
  const approvalNo = uniqueApprovalNo(prefix);
  const key = idempotencyKeyFor(approvalNo, 'MAIN');
  return { approvalNo, key, body: approval(approvalNo, await createSku(prisma, 100)) };
}

/** Creates a SKU of the test's own with known stock. */
export async function createSku(prisma: PrismaClient, onHand: number): Promise<string> {
  const sku = `SKU-T-${randomBytes(5).toString('hex')}`;
  await prisma.inventory.create({ data: { sku, onHand } });
  return sku;
}

/** The body of the webhook's 200, 201 and 202 answers. */
export interface WebhookAnswer {
  idempotencyKey: string;
  workflowId: string;
  duplicate: boolean;
  status: string;
  /** Only when the delivery asked to wait and the order is written. */
  orderNo?: string;
}

/** Posts a signed approval; `headers` go along, e.g. `prefer`. */
export async function postApproval(
  service: Pick<TestService, 'app'>,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  return service.app.inject({
    method: 'POST',
    url: '/webhooks/oa/approvals',
    headers: { ...signedHeaders(payload), ...headers },
    payload,
  });
}

/** A callback as an OA vendor sends it (the fakes' builders), to `/webhooks/<vendor>`. */
export function postVendorCallback(
  service: Pick<TestService, 'app'>,
  vendor: OaVendor,
  callback: {
    method?: 'GET' | 'POST';
    headers: Record<string, string>;
    query?: Record<string, string>;
    rawBody: Buffer;
  },
) {
  return service.app.inject({
    method: callback.method ?? 'POST',
    url: `/webhooks/${vendor}`,
    headers: callback.headers,
    ...(callback.query ? { query: callback.query } : {}),
    payload: callback.rawBody,
  });
}

/** `GET /orders/<key>`; `headers` carry `Authorization` where STATUS_TOKEN is set. */
export async function getOrder(service: Pick<TestService, 'app'>, key: string, headers: Record<string, string> = {}) {
  return service.app.inject({ method: 'GET', url: `/orders/${encodeURIComponent(key)}`, headers });
}

/** What `GET /orders/<key>` answers. */
export interface OrderView {
  idempotencyKey: string;
  workflowId: string;
  status: string;
  attempts: number;
  orderId?: string;
  orderNo?: string;
  /** The classification table's code and sentence; the raw text is `recordedLastError`'s. */
  lastError?: { code: string; message: string };
}

/** The last error as the key's record keeps it: the operator's view, never the public answer's. */
export async function recordedLastError(service: Pick<TestService, 'prisma'>, key: string): Promise<string> {
  const record = await service.prisma.idempotencyRecord.findUniqueOrThrow({ where: { idempotentKey: key } });
  return record.lastError ?? '';
}

/** Polls `GET /orders/<key>` until the key reaches `status`, and returns that view; else fails with the last answer. */
export async function statusReaches(
  service: Pick<TestService, 'app'>,
  key: string,
  status: string,
  headers: Record<string, string> = {},
): Promise<OrderView> {
  return eventually(`${key} to reach ${status}`, async () => {
    const response = await getOrder(service, key, headers);
    const view = response.json<OrderView>();
    if (response.statusCode === 200 && view.status === status) return view;
    throw new Error(`GET /orders answered ${response.statusCode} ${response.body}`);
  });
}

/** Polls until `condition` holds (a state a fake or a process reports at once), or fails the test. */
export function until(what: string, condition: () => boolean, timeoutMs?: number): Promise<true> {
  return eventually(what, () => Promise.resolve(condition() ? true : undefined), timeoutMs);
}

/** Polls until `check` returns a value, or fails the test with what it last saw. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(200);
  }
  throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
}

export async function orderCount(prisma: PrismaClient, key: string): Promise<number> {
  return prisma.orderMain.count({ where: { idempotentKey: key } });
}

/** The quantities of the order written under `key`, line by line. */
export async function orderedQuantities(prisma: PrismaClient, key: string): Promise<number[]> {
  const row = await prisma.orderMain.findUniqueOrThrow({
    where: { idempotentKey: key },
    include: { lines: { orderBy: { lineNo: 'asc' } } },
  });
  return row.lines.map((line) => line.quantity);
}

export async function stockOf(prisma: PrismaClient, sku: string) {
  const row = await prisma.inventory.findUniqueOrThrow({ where: { sku } });
  return { onHand: row.onHand, reserved: row.reserved };
}

export async function workflowExists(temporal: Client, workflowId: string): Promise<boolean> {
  try {
    await temporal.workflow.getHandle(workflowId).describe();
    return true;
  } catch (error) {
    if ((error as Error).name === 'WorkflowNotFoundError') return false;
    throw error;
  }
}

/** How many runs of `workflowId` Temporal lists: 1 when no redelivery started it again. */
export async function visibleRuns(temporal: Client, workflowId: string): Promise<number> {
  // Visibility lags behind a start: wait for the run known to exist, then count them all.
  return eventually(`a run of ${workflowId} to be visible`, async () => {
    let runs = 0;
    for await (const _run of temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs += 1;
    return runs > 0 ? runs : undefined;
  });
}
