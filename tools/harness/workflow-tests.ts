// The unit layer under the workflows: under `npm test` the run's own Temporal dev server, run alone
// a local one that @temporalio/testing starts from the project's own CLI (temporalBinary: never a
// download), with the service's search attributes registered; for each test a worker on a task
// queue of its own whose activities are the test's stand-ins, recording what the workflow asked of
// them. The workflow code is the bundle
// the test runner built (WORKFLOW_BUNDLE_DIR), else bundled once per file.
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, type LogEntry, Runtime, Worker } from '@temporalio/worker';
import { workflowCode, type WorkflowCode } from '../../worker/workflow-bundle.js';
import type { createActivities } from '../../activities/index.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import type {
  FormOrderWorkflowInput,
  OrderWorkflowInput,
  OrderWriteResult,
  WritePolicyInput,
} from '../../workflows/definitions.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { temporalBinary } from './temporal-dev-server.js';
import { waitFor } from './ports.js';

/** The activities as the workflows call them, by name. */
export type Activities = ReturnType<typeof createActivities>;
export type ActivityName = keyof Activities;

/** One call of a stand-in activity: its name and the argument the workflow passed. */
export interface ActivityCall {
  name: ActivityName;
  input: unknown;
}

export interface StandIns {
  /** What the worker runs: each stand-in wrapped to record its calls first. */
  activities: Partial<Activities>;
  /** Every call, in the order the workflow made them. */
  calls: ActivityCall[];
  /** The arguments of the calls to one activity. */
  inputsOf: (name: ActivityName) => unknown[];
  /** The names of the activities called, in order. */
  names: () => ActivityName[];
}

/** A stand-in: returns (or resolves to) what the real activity would, or throws what it would. */
type StandIn<Name extends ActivityName> = (
  input: Parameters<Activities[Name]>[0],
) => Awaited<ReturnType<Activities[Name]>> | ReturnType<Activities[Name]>;

/**
 * Stand-ins for the activities a test needs, each a plain function. An activity the workflow calls
 * without a stand-in fails its task as unregistered, which the test then sees as a workflow that
 * never finishes its path.
 */
export function standIns(implementations: { [Name in ActivityName]?: StandIn<Name> }): StandIns {
  const calls: ActivityCall[] = [];
  const activities = Object.fromEntries(
    Object.entries(implementations).map(([name, run]) => [
      name,
      (input: unknown) => {
        calls.push({ name: name as ActivityName, input });
        // A stand-in that throws fails the activity as a rejected promise does.
        return Promise.resolve().then(() => (run as (input: unknown) => unknown)(input));
      },
    ]),
  ) as Partial<Activities>;
  return {
    activities,
    calls,
    inputsOf: (name) => calls.filter((call) => call.name === name).map((call) => call.input),
    names: () => calls.map((call) => call.name),
  };
}

export interface WorkflowTestEnvironment {
  env: TestWorkflowEnvironment;
  /** Warnings the workflows logged (a status change outside the transition table is one). */
  warnings: LogEntry[];
  /** Runs `body` while a worker with these activities serves a task queue of its own. */
  withWorker: <T>(activities: Partial<Activities>, body: (taskQueue: string) => Promise<T>) => Promise<T>;
  teardown: () => Promise<void>;
}

const warnings: LogEntry[] = [];
let runtimeInstalled = false;

/**
 * The SDK's logs at WARN, kept for the test rather than printed: failures are the point of most of
 * these tests. Installed once per process, before the first connection creates the runtime.
 */
function recordingRuntime() {
  if (runtimeInstalled) return;
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => warnings.push(entry)),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  runtimeInstalled = true;
}

/**
 * One per test file (before/after). Under `npm test`, the run's own Temporal dev server
 * (TEMPORAL_ADDRESS, its search attributes registered): every file's workers on task queues of
 * their own, no server started per file. A file run alone starts a local dev server of its own,
 * in a second or two.
 */
export async function startWorkflowTestEnvironment(): Promise<WorkflowTestEnvironment> {
  recordingRuntime();
  const address = process.env.TEMPORAL_ADDRESS;
  const [env, code] = await Promise.all([
    address
      ? TestWorkflowEnvironment.createFromExistingServer({
          address,
          namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
        })
      : TestWorkflowEnvironment.createLocal({
          server: {
            executable: { type: 'existing-path', path: temporalBinary() },
            ip: '127.0.0.1',
            searchAttributes: [...ALL_SEARCH_ATTRIBUTES],
          },
        }),
    workflowCode({ traced: false, dir: process.env.WORKFLOW_BUNDLE_DIR }),
  ]);
  const workflowBundle: WorkflowCode = code;
  return {
    env,
    warnings,
    withWorker: async (activities, body) => {
      const taskQueue = `unit-${randomUUID()}`;
      const worker = await Worker.create({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue,
        workflowBundle,
        activities,
        // Workflows in this thread, with no pool of workflow threads to start: a worker is ready in
        // tens of milliseconds rather than a second, which is most of a test's time otherwise. The
        // code still runs in the bundle's sandbox; only the deadlock detector is off.
        debugMode: true,
      });
      return worker.runUntil(body(taskQueue));
    },
    teardown: () => env.teardown(),
  };
}

/** What the Temporal UI shows as a run's current details (the SDK's built-in metadata query). */
export async function currentDetails(handle: WorkflowHandle): Promise<string> {
  const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return metadata.currentDetails ?? '';
}

/** Polls `read` until `done` holds of its answer, within a deadline generous for a loaded machine. */
export async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let last: T | undefined;
  await waitFor(
    what,
    async () => {
      last = await read();
      return done(last);
    },
    30_000,
  );
  return last as T;
}

/**
 * A write policy for workflow tests: quick retries, and a decision window long enough that it never
 * runs out by accident on a loaded machine. A test of the window running out shortens it.
 */
export function testPolicy(overrides: Partial<WritePolicyInput> = {}): WritePolicyInput {
  return {
    maxAttempts: 3,
    initialIntervalMs: 20,
    maxIntervalMs: 100,
    backoffCoefficient: 2,
    startToCloseMs: 10_000,
    scheduleToCloseMs: 30_000,
    decisionTimeoutMs: 120_000,
    ...overrides,
  };
}

/** An order as the edge hands it to the workflow, under a key of its own. */
export function testOrder(overrides: Partial<OrderWorkflowInput> = {}): OrderWorkflowInput {
  const approvalNo = overrides.approvalNo ?? `UNIT-${randomUUID().slice(0, 8)}`;
  return {
    idempotencyKey: idempotencyKeyFor(approvalNo, 'MAIN'),
    approvalNo,
    operation: 'MAIN',
    approvedAt: '2025-03-01T09:30:00.000Z',
    fingerprint: 'f'.repeat(64),
    order: { customerId: 'C-ACME', currency: 'CNY', lines: [{ sku: 'SKU-1', quantity: 2, unitPrice: '10.0000' }] },
    totalAmount: '20.0000',
    policy: testPolicy(),
    ...overrides,
  };
}

/** An order still in its approval form, under a key of its own. */
export function testFormOrder(overrides: Partial<FormOrderWorkflowInput> = {}): FormOrderWorkflowInput {
  const approvalNo = overrides.approvalNo ?? `FORM-${randomUUID().slice(0, 8)}`;
  return {
    idempotencyKey: idempotencyKeyFor(approvalNo, 'MAIN'),
    approvalNo,
    operation: 'MAIN',
    formSource: { vendor: 'feishu', instanceId: `instance-${approvalNo}` },
    policy: testPolicy(),
    ...overrides,
  };
}

/** What the write returns for `order`: written on the first attempt, with an HTTP downstream to tell. */
export function writtenResult(order: OrderWorkflowInput, overrides: Partial<OrderWriteResult> = {}): OrderWriteResult {
  return {
    orderId: '1001',
    orderNo: `SO-${order.approvalNo}`,
    totalAmount: order.totalAmount,
    writtenAttempt: 1,
    attempt: 1,
    alreadyWritten: false,
    createdAt: '2025-03-01T09:30:01.000Z',
    deliveryConfigured: true,
    deliveryTargets: ['http'],
    ...overrides,
  };
}
