// The order workflow's decisions, with its activities stood in for: what it writes, when it
// delivers, when it hands the key to compensation, how it waits for an operator after a failed
// delivery, and the status it shows at each end. One local dev server for the file, a worker and a
// task queue per test. What the activities themselves do is proven elsewhere (test/README.md).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Context } from '@temporalio/activity';
import {
  WithStartWorkflowOperation,
  WorkflowFailedError,
  type WorkflowHandle,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { toActivityFailure } from '../../../activities/activity-failure.js';
import { orderWorkflowIdFor } from '../../../domain/idempotency-key.js';
import { DownstreamHttpError, InsufficientStockError, UnmappableFormError } from '../../../domain/errors.js';
import { ACTIVITY_TIMEOUT } from '../../../domain/error-classification.js';
import {
  decideUpdate,
  type OrderWorkflowInput,
  type OrderWorkflowStart,
  orderStateQuery,
  writeOutcomeUpdate,
} from '../../../workflows/definitions.js';
import { orderWorkflow } from '../../../workflows/order-workflow.js';
import { orderVisibilityFor } from '../../../services/temporal/order-workflows.js';
import { CustomerId, OrderStatus } from '../../../workflows/search-attributes.js';
import {
  eventually,
  standIns,
  startWorkflowTestEnvironment,
  testFormOrder,
  testOrder,
  testPolicy,
  type WorkflowTestEnvironment,
  writtenResult,
} from '../../../tools/harness/workflow-tests.js';

/** Throws `error` as the real activities do: classified by the one table, with the attempt. */
function fail(error: unknown): never {
  throw toActivityFailure(error, Context.current().info.attempt);
}

const refusedByDownstream = () => new DownstreamHttpError(400, undefined, 'unknown customer');

describe('the order workflow', () => {
  let testEnv: WorkflowTestEnvironment;
  before(async () => {
    testEnv = await startWorkflowTestEnvironment();
  });
  after(async () => {
    await testEnv?.teardown();
  });

  /** Starts the run as the service's one start path does: its id, search attributes and summary. */
  const start = (taskQueue: string, input: OrderWorkflowStart) =>
    testEnv.env.client.workflow.start(orderWorkflow, {
      taskQueue,
      workflowId: orderWorkflowIdFor(input.idempotencyKey),
      args: [input],
      ...orderVisibilityFor(input),
    });

  /** The run's status as its query answers it, once `expected`. */
  const statusBecomes = (handle: WorkflowHandle<typeof orderWorkflow>, expected: string) =>
    eventually(
      `${handle.workflowId} shows ${expected}`,
      () => handle.query(orderStateQuery).catch(() => undefined),
      (state) => state?.status === expected,
    );

  /** What the Temporal UI lists the run under. */
  const searchAttributes = async (handle: WorkflowHandle<typeof orderWorkflow>) => {
    const { typedSearchAttributes } = await handle.describe();
    return { status: typedSearchAttributes.get(OrderStatus), customer: typedSearchAttributes.get(CustomerId) };
  };

  /** The run never moved its status outside the transition table (it logs a warning when it does). */
  const statusMovesAllowed = (key: string) =>
    assert.deepEqual(
      testEnv.warnings.filter(
        (entry) => entry.message === 'status change outside the transition table' && entry.meta?.idempotencyKey === key,
      ),
      [],
    );

  it('writes the order and, with no downstream configured, finishes SUBMITTED without delivering', async () => {
    const order = testOrder();
    const steps = standIns({
      writeOrder: () => writtenResult(order, { deliveryConfigured: false, deliveryTargets: [] }),
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, order);
      const finished = await handle.result();
      assert.deepEqual(await searchAttributes(handle), { status: 'SUBMITTED', customer: 'C-ACME' });
      return finished;
    });
    assert.equal(result.finalStatus, 'SUBMITTED');
    assert.equal(result.orderNo, `SO-${order.approvalNo}`);
    assert.deepEqual(steps.names(), ['writeOrder']);
    assert.deepEqual(steps.inputsOf('writeOrder'), [order]);
    statusMovesAllowed(order.idempotencyKey);
  });

  it('writes the order, tells the downstream once with the order as written, and finishes DELIVERED', async () => {
    const order = testOrder();
    const written = writtenResult(order);
    const steps = standIns({
      writeOrder: () => written,
      deliverOrderEvent: () => ({ status: 202, attempt: 1, eventId: 'event' }),
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, order);
      const finished = await handle.result();
      assert.equal((await searchAttributes(handle)).status, 'DELIVERED');
      return finished;
    });
    assert.equal(result.finalStatus, 'DELIVERED');
    assert.deepEqual(steps.names(), ['writeOrder', 'deliverOrderEvent']);
    assert.deepEqual(steps.inputsOf('deliverOrderEvent'), [{ order, written }]);
    statusMovesAllowed(order.idempotencyKey);
  });

  it('retries a write that lost its connection under the policy, and reports the attempt that committed', async () => {
    const order = testOrder();
    const steps = standIns({
      writeOrder: () => {
        const { attempt } = Context.current().info;
        if (attempt < 3) fail(Object.assign(new Error('connect ECONNRESET'), { code: 'ECONNRESET' }));
        return writtenResult(order, { attempt, writtenAttempt: attempt, deliveryConfigured: false });
      },
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) =>
      (await start(taskQueue, order)).result(),
    );
    assert.equal(result.finalStatus, 'SUBMITTED');
    assert.equal(result.attempt, 3);
    assert.deepEqual(steps.names(), ['writeOrder', 'writeOrder', 'writeOrder']);
  });

  it('hands a write that failed for good to compensation with its reason, tells a waiting caller COMPENSATING, and fails without delivering', async () => {
    const order = testOrder();
    const steps = standIns({
      writeOrder: () => fail(new InsufficientStockError('SKU-1', 2, 0)),
      startCompensation: () => `compensation-${order.idempotencyKey}`,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      // As a caller that asked to wait: the update travels with the start (Update-with-Start).
      const startWorkflowOperation = new WithStartWorkflowOperation(orderWorkflow, {
        taskQueue,
        workflowId: orderWorkflowIdFor(order.idempotencyKey),
        args: [order],
        workflowIdConflictPolicy: 'FAIL',
        ...orderVisibilityFor(order),
      });
      const outcome = await testEnv.env.client.workflow.executeUpdateWithStart(writeOutcomeUpdate, {
        startWorkflowOperation,
      });
      assert.equal(outcome.status, 'COMPENSATING');
      assert.equal(outcome.attempts, 1);
      assert.match(outcome.lastError ?? '', /^InsufficientStock: insufficient stock for SKU-1/);
      assert.equal(outcome.orderNo, undefined);

      const handle = await startWorkflowOperation.workflowHandle();
      const failed = await handle.result().then(
        () => assert.fail('the run must fail'),
        (error: unknown) => error,
      );
      assert.ok(failed instanceof WorkflowFailedError);
      assert.ok(failed.cause instanceof ApplicationFailure);
      assert.equal(failed.cause.type, 'OrderWriteFailed');
      assert.equal(failed.cause.nonRetryable, true);
      assert.deepEqual(failed.cause.details, [{ reasonType: 'InsufficientStock', attempts: 1 }]);
      assert.equal((await searchAttributes(handle)).status, 'COMPENSATING');

      const [handedOver] = steps.inputsOf('startCompensation') as { orderRunId: string }[];
      assert.deepEqual(handedOver, {
        order,
        orderRunId: (await handle.describe()).runId,
        reasonType: 'InsufficientStock',
        reason: 'insufficient stock for SKU-1: requested 2, available 0',
        attempts: 1,
      });
    });
    // Not retried (a business rule fails the same way again), and nothing delivered.
    assert.deepEqual(steps.names(), ['writeOrder', 'startCompensation']);
    statusMovesAllowed(order.idempotencyKey);
  });

  it('gives up on a write whose attempts all failed and compensates with the number of attempts', async () => {
    const order = testOrder({ policy: testPolicy({ maxAttempts: 2 }) });
    const steps = standIns({
      writeOrder: () => fail(Object.assign(new Error('deadlock detected'), { code: '40P01' })),
      startCompensation: () => `compensation-${order.idempotencyKey}`,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      await assert.rejects((await start(taskQueue, order)).result(), WorkflowFailedError);
    });
    assert.deepEqual(steps.names(), ['writeOrder', 'writeOrder', 'startCompensation']);
    assert.deepEqual(
      steps.inputsOf('startCompensation').map((input) => {
        const { reasonType, attempts } = input as { reasonType: string; attempts: number };
        return { reasonType, attempts };
      }),
      [{ reasonType: 'Deadlock', attempts: 2 }],
    );
  });

  it('compensates a write attempt that ran out of time as an ActivityTimeout', async () => {
    const order = testOrder({ policy: testPolicy({ maxAttempts: 1, startToCloseMs: 300, scheduleToCloseMs: 300 }) });
    const steps = standIns({
      // Hangs until the attempt is given up on.
      writeOrder: () => Context.current().cancelled.then(() => writtenResult(order)),
      startCompensation: () => `compensation-${order.idempotencyKey}`,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      await assert.rejects((await start(taskQueue, order)).result(), WorkflowFailedError);
    });
    const [handedOver] = steps.inputsOf('startCompensation') as { reasonType: string; reason: string }[];
    assert.equal(handedOver?.reasonType, ACTIVITY_TIMEOUT);
    assert.match(handedOver?.reason ?? '', /the attempt timed out/);
  });

  it('reads an OA order from its approval form first, then writes and delivers what the form mapped to', async () => {
    const form = testFormOrder();
    const mapped: OrderWorkflowInput = testOrder({
      idempotencyKey: form.idempotencyKey,
      approvalNo: form.approvalNo,
      order: {
        customerId: 'C-FROM-FORM',
        currency: 'CNY',
        lines: [{ sku: 'SKU-9', quantity: 1, unitPrice: '5.0000' }],
      },
      totalAmount: '5.0000',
    });
    const steps = standIns({
      readApprovalForm: () => mapped,
      writeOrder: () => writtenResult(mapped),
      deliverOrderEvent: () => ({ status: 200, attempt: 1, eventId: 'event' }),
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, form);
      const finished = await handle.result();
      assert.deepEqual(await searchAttributes(handle), { status: 'DELIVERED', customer: 'C-FROM-FORM' });
      return finished;
    });
    assert.equal(result.finalStatus, 'DELIVERED');
    assert.deepEqual(steps.names(), ['readApprovalForm', 'writeOrder', 'deliverOrderEvent']);
    assert.deepEqual(steps.inputsOf('readApprovalForm'), [form]);
    assert.deepEqual(steps.inputsOf('writeOrder'), [mapped]);
  });

  it('compensates an approval form that does not map, handing over the form itself, and writes nothing', async () => {
    const form = testFormOrder();
    const steps = standIns({
      readApprovalForm: () => fail(new UnmappableFormError(form.formSource.instanceId, ['no field "customer"'])),
      startCompensation: () => `compensation-${form.idempotencyKey}`,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, form);
      await assert.rejects(handle.result(), WorkflowFailedError);
      const state = await handle.query(orderStateQuery);
      assert.equal(state.status, 'COMPENSATING');
      assert.match(state.lastError ?? '', /^UnmappableForm: .*no field "customer"/);
    });
    assert.deepEqual(steps.names(), ['readApprovalForm', 'startCompensation']);
    const [handedOver] = steps.inputsOf('startCompensation') as { order: unknown; reasonType: string }[];
    assert.deepEqual(handedOver?.order, form);
    assert.equal(handedOver?.reasonType, 'UnmappableForm');
  });

  it('records DELIVERY_FAILED when the downstream refuses, then redelivers the same event when an operator decides redeliver', async () => {
    const order = testOrder();
    const written = writtenResult(order);
    let deliveries = 0;
    const steps = standIns({
      writeOrder: () => written,
      deliverOrderEvent: () => {
        deliveries += 1;
        if (deliveries === 1) fail(refusedByDownstream());
        return { status: 202, attempt: 1, eventId: 'event' };
      },
      recordDeliveryOutcome: (request) => request.status,
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, order);
      const waiting = await statusBecomes(handle, 'DELIVERY_FAILED');
      assert.match(waiting?.lastError ?? '', /^DownstreamRejected: downstream answered 400/);
      assert.equal((await searchAttributes(handle)).status, 'DELIVERY_FAILED');
      // A compensation decision has no place here: refused, and the run keeps waiting.
      await assert.rejects(
        handle.executeUpdate(decideUpdate, { args: [{ decision: 'abandon', decidedBy: 'alice' }] }),
        (error: unknown) =>
          error instanceof WorkflowUpdateFailedError &&
          /decision must be one of redeliver, mark-handled/.test(error.cause?.message ?? ''),
      );
      const decided = await handle.executeUpdate(decideUpdate, {
        args: [{ decision: 'redeliver', decidedBy: 'alice' }],
      });
      assert.equal(decided.status, 'DELIVERED');
      return handle.result();
    });
    assert.equal(result.finalStatus, 'DELIVERED');
    assert.deepEqual(steps.names(), ['writeOrder', 'deliverOrderEvent', 'recordDeliveryOutcome', 'deliverOrderEvent']);
    assert.deepEqual(steps.inputsOf('recordDeliveryOutcome'), [
      {
        idempotencyKey: order.idempotencyKey,
        status: 'DELIVERY_FAILED',
        lastError: 'DownstreamRejected: downstream answered 400: unknown customer',
      },
    ]);
    // The redelivery is the same event: the same order as written.
    assert.deepEqual(steps.inputsOf('deliverOrderEvent'), [
      { order, written },
      { order, written },
    ]);
    statusMovesAllowed(order.idempotencyKey);
  });

  it('hears an operator who decides while the failed delivery is still being recorded, and redelivers', async () => {
    const order = testOrder();
    let letRecordFinish = () => {};
    const recording = new Promise<void>((resolve) => (letRecordFinish = resolve));
    let deliveries = 0;
    const steps = standIns({
      writeOrder: () => writtenResult(order),
      deliverOrderEvent: () => {
        deliveries += 1;
        if (deliveries === 1) fail(refusedByDownstream());
        return { status: 202, attempt: 1, eventId: 'event' };
      },
      // The record says DELIVERY_FAILED (an operator may read it) before the run hears back.
      recordDeliveryOutcome: async (request) => {
        await recording;
        return request.status;
      },
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, order);
      await eventually(
        'the failed delivery is being recorded',
        () => Promise.resolve(steps.names()),
        (names) => names.includes('recordDeliveryOutcome'),
      );
      assert.equal((await handle.query(orderStateQuery)).status, 'SUBMITTED', 'the run has not heard it yet');
      const update = await handle.startUpdate(decideUpdate, {
        args: [{ decision: 'redeliver', decidedBy: 'early' }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      letRecordFinish();
      assert.equal((await update.result()).status, 'DELIVERED');
      return handle.result();
    });
    assert.equal(result.finalStatus, 'DELIVERED');
    assert.deepEqual(steps.names(), ['writeOrder', 'deliverOrderEvent', 'recordDeliveryOutcome', 'deliverOrderEvent']);
  });

  it("marks a failed delivery handled on an operator's word, without telling the downstream again", async () => {
    const order = testOrder();
    const steps = standIns({
      writeOrder: () => writtenResult(order),
      deliverOrderEvent: () => fail(refusedByDownstream()),
      recordDeliveryOutcome: (request) => request.status,
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, order);
      await statusBecomes(handle, 'DELIVERY_FAILED');
      const decided = await handle.executeUpdate(decideUpdate, {
        args: [{ decision: 'mark-handled', decidedBy: 'bob' }],
      });
      assert.equal(decided.status, 'DELIVERED');
      return handle.result();
    });
    assert.equal(result.finalStatus, 'DELIVERED');
    assert.deepEqual(steps.names(), [
      'writeOrder',
      'deliverOrderEvent',
      'recordDeliveryOutcome',
      'recordDeliveryOutcome',
    ]);
    assert.deepEqual(steps.inputsOf('recordDeliveryOutcome')[1], {
      idempotencyKey: order.idempotencyKey,
      status: 'DELIVERED',
      decidedBy: 'bob',
    });
    statusMovesAllowed(order.idempotencyKey);
  });

  it('finishes DELIVERY_FAILED when nobody decides within the window, and hears no decision after it', async () => {
    const order = testOrder({ policy: testPolicy({ decisionTimeoutMs: 500 }) });
    const steps = standIns({
      writeOrder: () => writtenResult(order),
      deliverOrderEvent: () => fail(refusedByDownstream()),
      recordDeliveryOutcome: (request) => request.status,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, order);
      const result = await handle.result();
      assert.equal(result.finalStatus, 'DELIVERY_FAILED');
      assert.equal((await searchAttributes(handle)).status, 'DELIVERY_FAILED');
      // The run is over: a decision now goes to the delivery workflow, never to this run.
      await assert.rejects(
        handle.executeUpdate(decideUpdate, { args: [{ decision: 'redeliver', decidedBy: 'late' }] }),
      );
    });
    assert.deepEqual(steps.names(), ['writeOrder', 'deliverOrderEvent', 'recordDeliveryOutcome']);
    statusMovesAllowed(order.idempotencyKey);
  });

  it('takes a failed delivery whose acknowledgement an earlier attempt recorded as DELIVERED, without waiting for anyone', async () => {
    const order = testOrder();
    const steps = standIns({
      writeOrder: () => writtenResult(order),
      deliverOrderEvent: () => fail(refusedByDownstream()),
      recordDeliveryOutcome: () => 'DELIVERED' as const,
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) =>
      (await start(taskQueue, order)).result(),
    );
    assert.equal(result.finalStatus, 'DELIVERED');
    assert.deepEqual(steps.names(), ['writeOrder', 'deliverOrderEvent', 'recordDeliveryOutcome']);
  });
});
