// The order write as a local activity (docs/architecture.md, decision 18), under the faults that
// are its own: a worker that dies after the commit and before the workflow task that ran the write
// completes, and a backoff long enough to become a durable timer. Real Temporal, real PostgreSQL,
// real worker processes; what the history shows is read from the server.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import type { orderWorkflow } from '../../workflows/order-workflow.js';
import { findRecord } from '../../services/db/idempotency-records.js';
import { managedProcess, type ManagedProcess } from '../../tools/harness/child-process.js';
import { type HistoryStep, historySteps } from '../../tools/harness/history.js';
import { FaultPlan, startServiceWithFaults } from '../../tools/harness/faults.js';
import { processEnv, workerProcess } from '../../tools/harness/processes.js';
import {
  approval,
  createSku,
  eventually,
  orderCount,
  postApproval,
  startTestService,
  statusReaches,
  stockOf,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

/**
 * The steps of the order's run that concern the write, timers and lost workflow tasks included;
 * a write's result only as whether it found its order already written.
 */
async function writeSteps(service: TestService, key: string): Promise<HistoryStep[]> {
  const history = await service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).fetchHistory();
  return historySteps(history)
    .filter((step) => !('activityType' in step) || step.activityType === 'writeOrder')
    .map((step) => {
      if (step.kind !== 'local-activity' || step.result === undefined) return step;
      const { result, ...rest } = step;
      return { ...rest, result: { alreadyWritten: (result as { alreadyWritten?: boolean }).alreadyWritten } };
    });
}

/** Whether `worker` logged that the write of `key` committed (and that it now hangs). */
function committedOn(worker: ManagedProcess, key: string): boolean {
  return worker
    .output()
    .split('\n')
    .some((line) => line.includes(key) && line.includes('committed, now hanging until killed'));
}

/** The write's marker, as writeSteps shows it: written (the order new or found), or failed. */
function writeMarker(attempt: number, outcome: { alreadyWritten: boolean } | { backoffMs?: number }): HistoryStep {
  const step = { kind: 'local-activity', activityType: 'writeOrder', attempt } as const;
  if ('alreadyWritten' in outcome) return { ...step, failed: false, result: outcome };
  return { ...step, failed: true, ...outcome };
}

async function writtenOrder(service: TestService, key: string) {
  return service.prisma.orderMain.findUniqueOrThrow({ where: { idempotentKey: key } });
}

describe('a worker killed after the commit, before its workflow task completes', () => {
  let service: TestService;
  let dying: ManagedProcess;
  let healthy: ManagedProcess;

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    const env = processEnv(service.config);
    // Until the kill, the worker whose write hangs after its commit is the only one polling.
    dying = managedProcess({
      name: 'worker-dies-after-commit',
      entry: 'tools/harness/worker-dies-after-commit.ts',
      env,
      readyLine: 'worker polling',
    });
    healthy = workerProcess('worker', env);
    await dying.start();
  });
  after(async () => {
    await Promise.all([dying.kill('SIGKILL'), healthy.kill('SIGKILL')]);
    await service.stop();
  });

  it('the next worker runs the write again and finds the order: one order, and the attempts say it ran twice', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('KILLAC');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);

    await eventually('the write to commit on the worker that is about to die', () =>
      Promise.resolve(committedOn(dying, key) || undefined),
    );
    await dying.kill('SIGKILL');
    // Committed, yet the history knows nothing of it: no marker, the workflow task still open.
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.deepEqual(
      (await writeSteps(service, key)).filter((step) => step.kind === 'local-activity'),
      [],
      'the write left no trace in the history',
    );

    await healthy.start();
    // The record said SUBMITTED since the commit; the run ends only once a worker completed the write.
    const result = await service.temporal.workflow.getHandle<typeof orderWorkflow>(orderWorkflowIdFor(key)).result();
    assert.equal(result.finalStatus, 'SUBMITTED');
    assert.equal(result.alreadyWritten, true, 'the rerun found the order the dead worker committed');
    const view = await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1, 'exactly one order');
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 100, reserved: 2 }, 'stock reserved once');
    assert.equal((await writtenOrder(service, key)).writtenAttempt, 1, 'the order is the one the first run wrote');
    assert.equal((await findRecord(service.prisma, key))?.attempts, 2, 'the record counts both runs of the write');
    assert.equal(view.attempts, 2, 'GET /orders shows that the write ran twice');
    assert.equal(view.orderNo, (await writtenOrder(service, key)).orderNo);

    // The history: one marker — the rerun, from its first attempt, finding the order — after the
    // workflow task the dead worker held timed out; the write never became an activity task.
    const steps = await writeSteps(service, key);
    const markers = steps.filter((step) => step.kind === 'local-activity');
    assert.deepEqual(markers, [writeMarker(1, { alreadyWritten: true })], JSON.stringify(steps));
    assert.deepEqual(steps.at(-1), markers[0]);
    assert.deepEqual(
      steps.filter((step) => step.kind === 'activity-attempt'),
      [],
    );
    assert.ok(
      steps.some((step) => step.kind === 'workflow-task-lost' && step.how === 'timed out'),
      `a workflow task timed out before the marker: ${JSON.stringify(steps)}`,
    );
  });
});

describe('the local write backs off in the worker, or on a timer when the backoff is long', () => {
  const faults = new FaultPlan();
  // The first backoff is 500–1000 ms (jittered): above this threshold, so always a timer.
  let timerService: TestService;
  // The same backoff under the default threshold (5 s): waited out in the worker.
  let waitService: TestService;
  const policy = { RETRY_INITIAL_INTERVAL_MS: '1000', RETRY_MAX_INTERVAL_MS: '2000' };

  before(async () => {
    timerService = await startServiceWithFaults(faults, { ...policy, RETRY_LOCAL_THRESHOLD_MS: '200' });
    waitService = await startServiceWithFaults(faults, policy);
  });
  after(async () => {
    await timerService.stop();
    await waitService.stop();
  });

  /** An order whose first write attempt meets a database that is down; written on the second. */
  async function writeAfterOneTransientFailure(service: TestService) {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('BACKOFF');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    faults.set(approvalNo, { kind: 'database-down', attempts: 1 });
    assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);
    const view = await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.equal((await writtenOrder(service, key)).writtenAttempt, 2);
    assert.equal(view.attempts, 2);
    const delays = faults.retryDelaysOf(approvalNo);
    assert.equal(delays.length, 1, 'exactly one attempt met the fault');
    // The record says SUBMITTED from inside the workflow task that runs the write; the task's
    // marker reaches the history only when that task completes, which on a busy machine is later.
    const steps = await eventually(`the marker of ${key}'s written attempt in its history`, async () => {
      const seen = await writeSteps(service, key);
      return seen.some((step) => step.kind === 'local-activity' && !step.failed) ? seen : undefined;
    });
    return { steps, askedFor: delays[0] as number };
  }

  it('a backoff above the threshold is a timer in the history, as long as the failure asked for', async () => {
    const { steps, askedFor } = await writeAfterOneTransientFailure(timerService);
    assert.ok(askedFor >= 500 && askedFor <= 1000, `a jittered first backoff, got ${askedFor} ms`);
    // The failed attempt is recorded with its backoff, the timer waits exactly the jittered delay
    // (nextRetryDelay, not the policy's plain 1000 ms), then the second attempt writes.
    assert.equal(steps.length, 4, JSON.stringify(steps));
    const [failed, started, fired, written] = steps;
    assert.deepEqual(failed, writeMarker(1, { backoffMs: askedFor }));
    assert.equal(started?.kind, 'timer-started');
    assert.equal(started.kind === 'timer-started' && started.durationMs, askedFor);
    assert.deepEqual(fired, { kind: 'timer-fired', timerId: started.kind === 'timer-started' ? started.timerId : '' });
    assert.deepEqual(written, writeMarker(2, { alreadyWritten: false }));
  });

  it('a backoff under the threshold is waited out in the worker: no timer, one marker', async () => {
    const { steps } = await writeAfterOneTransientFailure(waitService);
    assert.deepEqual(steps, [writeMarker(2, { alreadyWritten: false })]);
  });

  it('a business failure (insufficient stock) is tried once: one failed marker, no timer', async () => {
    const sku = await createSku(timerService.prisma, 1);
    const approvalNo = uniqueApprovalNo('NOSTOCK');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku, {
      order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku, quantity: 5, unitPrice: '1' }] },
    });
    assert.equal((await postApproval(timerService, body)).statusCode, 202);
    const view = await statusReaches(timerService, key, 'COMPENSATING');
    assert.equal(view.attempts, 1);
    assert.deepEqual(await writeSteps(timerService, key), [writeMarker(1, {})]);
  });

  it('an order written at its first attempt records one marker and one search-attribute upsert, its write and its status', async () => {
    const sku = await createSku(waitService.prisma, 10);
    const approvalNo = uniqueApprovalNo('LEAN');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal((await postApproval(waitService, approval(approvalNo, sku))).statusCode, 202);
    const handle = waitService.temporal.workflow.getHandle(orderWorkflowIdFor(key));
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    // No patch marker and no TemporalChangeVersion upsert: whether the run writes as a local activity
    // is read from its input, and recording that would cost every order two events and a visibility update.
    const markers = events.flatMap((event) => event.markerRecordedEventAttributes?.markerName ?? []);
    const upserted = events.flatMap((event) => {
      const fields = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
      return fields ? [Object.keys(fields)] : [];
    });
    assert.deepEqual(markers, ['core_local_activity']);
    assert.deepEqual(upserted, [['OrderStatus']]);
  });
});
