// The compensation workflow's decisions, with its activities stood in for: what reconciliation's
// answer leads to, how it waits for an operator's resubmit or abandon, what a closed window and a
// failed step end in. One local dev server for the file, a worker and a task queue per test. What
// the steps themselves do to the database is proven by test/integration/compensation.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { compensationWorkflowIdFor } from '../../../domain/idempotency-key.js';
import { compensationWorkflow } from '../../../workflows/compensation-workflow.js';
import {
  type CompensationInput,
  compensationStateQuery,
  type DecisionRequest,
  decideUpdate,
  type OrderWorkflowStart,
} from '../../../workflows/definitions.js';
import { OrderStatus } from '../../../workflows/search-attributes.js';
import {
  currentDetails,
  eventually,
  standIns,
  startWorkflowTestEnvironment,
  testFormOrder,
  testOrder,
  testPolicy,
  type WorkflowTestEnvironment,
} from '../../../tools/harness/workflow-tests.js';

const RUN_ID = 'failed-order-run';

function failedWrite(order: OrderWorkflowStart = testOrder()): CompensationInput {
  return {
    order,
    orderRunId: RUN_ID,
    reasonType: 'InsufficientStock',
    reason: 'insufficient stock for SKU-1: requested 2, available 0',
    attempts: 1,
  };
}

const nothingLanded = () => ({ orderLanded: false, releasedLines: 0 });

describe('the compensation workflow', () => {
  let testEnv: WorkflowTestEnvironment;
  before(async () => {
    testEnv = await startWorkflowTestEnvironment();
  });
  after(async () => {
    await testEnv?.teardown();
  });

  const start = (taskQueue: string, input: CompensationInput) =>
    testEnv.env.client.workflow.start(compensationWorkflow, {
      taskQueue,
      workflowId: compensationWorkflowIdFor(input.order.idempotencyKey),
      args: [input],
    });
  type Handle = Awaited<ReturnType<typeof start>>;

  /**
   * Once the run waits for an operator (reconciliation found nothing), as the Temporal UI shows it:
   * a decision sent only then proves the run waits for it, not that it arrived before it was needed.
   */
  const awaitingDecision = async (handle: Handle) => {
    await eventually(
      `${handle.workflowId} waits for a decision`,
      () => currentDetails(handle).catch(() => ''),
      (details) => details.includes('waiting for an operator'),
    );
    return handle.query(compensationStateQuery);
  };
  const decide = (handle: Handle, request: DecisionRequest) => handle.executeUpdate(decideUpdate, { args: [request] });
  const refusedWith = (pattern: RegExp) => (error: unknown) =>
    error instanceof WorkflowUpdateFailedError && pattern.test(error.cause?.message ?? '');
  /** The status the Temporal UI lists the run under. */
  const listedAs = async (handle: Handle) => (await handle.describe()).typedSearchAttributes.get(OrderStatus);

  it("continues an order that landed after all: starts it again on reconciliation's word, ends SUBMITTED and asks no one", async () => {
    const input = failedWrite();
    const steps = standIns({
      reconcileFailedWrite: () => ({ orderLanded: true, orderNo: 'SO-1', releasedLines: 0, continuations: 0 }),
      resubmitOrder: () => `order-${input.order.idempotencyKey}`,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input);
      const result = await handle.result();
      assert.equal(result.status, 'SUBMITTED');
      assert.equal(result.outcome, 'ORDER_LANDED');
      assert.equal(await listedAs(handle), 'SUBMITTED');
    });
    assert.deepEqual(steps.names(), ['reconcileFailedWrite', 'resubmitOrder']);
    assert.deepEqual(steps.inputsOf('reconcileFailedWrite'), [input]);
    assert.deepEqual(steps.inputsOf('resubmitOrder'), [
      { order: input.order, orderRunId: RUN_ID, decidedBy: 'reconciliation' },
    ]);
  });

  it('asks for a person instead, FAILED, once five follow-up runs of a landed order have failed too', async () => {
    const input = failedWrite();
    const steps = standIns({
      reconcileFailedWrite: () => ({ orderLanded: true, orderNo: 'SO-1', releasedLines: 0, continuations: 5 }),
      markCompensationFailed: () => undefined,
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) =>
      (await start(taskQueue, input)).result(),
    );
    assert.deepEqual([result.status, result.outcome], ['FAILED', 'FAILED']);
    assert.deepEqual(steps.names(), ['reconcileFailedWrite', 'markCompensationFailed']);
    const [marked] = steps.inputsOf('markCompensationFailed') as { reason: string; landed?: boolean }[];
    assert.equal(marked?.landed, true);
    assert.match(marked?.reason ?? '', /the order landed, but 5 follow-up runs failed too \(last: InsufficientStock: /);
  });

  it('keeps the decision an operator already took on this failed run, and waits for no one', async () => {
    const input = failedWrite();
    const steps = standIns({
      reconcileFailedWrite: () => ({
        orderLanded: false,
        releasedLines: 0,
        priorDecision: { decision: 'abandon' as const, status: 'COMPENSATED' as const },
      }),
    });
    const result = await testEnv.withWorker(steps.activities, async (taskQueue) =>
      (await start(taskQueue, input)).result(),
    );
    assert.deepEqual([result.status, result.outcome, result.decision], ['COMPENSATED', 'ABANDONED', 'abandon']);
    assert.deepEqual(steps.names(), ['reconcileFailedWrite']);
  });

  it('waits for an operator and resubmits with the same key on their word, hearing one decision only', async () => {
    const input = failedWrite();
    let letResubmitFinish = () => {};
    const resubmitting = new Promise<void>((resolve) => (letResubmitFinish = resolve));
    const steps = standIns({
      reconcileFailedWrite: nothingLanded,
      resubmitOrder: async () => {
        await resubmitting;
        return `order-${input.order.idempotencyKey}`;
      },
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input);
      assert.equal((await awaitingDecision(handle)).status, 'COMPENSATING');
      assert.equal(await listedAs(handle), 'COMPENSATING');
      await assert.rejects(
        decide(handle, { decision: 'redeliver', decidedBy: 'alice' }),
        refusedWith(/decision must be one of resubmit, abandon/),
      );
      const decided = decide(handle, { decision: 'resubmit', decidedBy: 'alice' });
      await eventually(
        'the resubmit is under way',
        () => Promise.resolve(steps.names()),
        (names) => names.includes('resubmitOrder'),
      );
      // A second operator, while the first decision is carried out: refused, never carried out twice.
      await assert.rejects(
        decide(handle, { decision: 'abandon', decidedBy: 'bob' }),
        refusedWith(/a decision was already made: resubmit/),
      );
      letResubmitFinish();
      const answer = await decided;
      assert.deepEqual([answer.status, answer.outcome], ['RECEIVED', 'RESUBMITTED']);
      const result = await handle.result();
      assert.deepEqual([result.status, result.decision], ['RECEIVED', 'resubmit']);
      assert.equal(await listedAs(handle), 'RECEIVED');
    });
    assert.deepEqual(steps.names(), ['reconcileFailedWrite', 'resubmitOrder']);
    assert.deepEqual(steps.inputsOf('resubmitOrder'), [{ order: input.order, orderRunId: RUN_ID, decidedBy: 'alice' }]);
  });

  it("abandons on an operator's word: records the decision with the order's fingerprint and ends COMPENSATED", async () => {
    const input = failedWrite();
    const steps = standIns({
      reconcileFailedWrite: nothingLanded,
      recordDecision: () => ({ orderLanded: false }),
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input);
      await awaitingDecision(handle);
      const answer = await decide(handle, { decision: 'abandon', decidedBy: 'carol' });
      assert.deepEqual([answer.status, answer.outcome], ['COMPENSATED', 'ABANDONED']);
      assert.equal(await listedAs(handle), 'COMPENSATED');
    });
    assert.deepEqual(steps.names(), ['reconcileFailedWrite', 'recordDecision']);
    assert.deepEqual(steps.inputsOf('recordDecision'), [
      {
        idempotencyKey: input.order.idempotencyKey,
        orderRunId: RUN_ID,
        decision: 'abandon',
        decidedBy: 'carol',
        fingerprint: 'f'.repeat(64),
      },
    ]);
  });

  it('continues instead of abandoning when the order landed meanwhile', async () => {
    const input = failedWrite();
    const steps = standIns({
      reconcileFailedWrite: nothingLanded,
      recordDecision: () => ({ orderLanded: true }),
      resubmitOrder: () => `order-${input.order.idempotencyKey}`,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input);
      await awaitingDecision(handle);
      const answer = await decide(handle, { decision: 'abandon', decidedBy: 'carol' });
      assert.deepEqual([answer.status, answer.outcome], ['SUBMITTED', 'ORDER_LANDED']);
    });
    assert.deepEqual(steps.names(), ['reconcileFailedWrite', 'recordDecision', 'resubmitOrder']);
    assert.deepEqual(steps.inputsOf('resubmitOrder'), [
      { order: input.order, orderRunId: RUN_ID, decidedBy: 'reconciliation' },
    ]);
  });

  it('abandons an order still in its approval form with no fingerprint of its own: the record names what was mapped', async () => {
    const input = failedWrite(testFormOrder());
    const steps = standIns({
      reconcileFailedWrite: nothingLanded,
      recordDecision: () => ({ orderLanded: false }),
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input);
      await awaitingDecision(handle);
      assert.equal((await decide(handle, { decision: 'abandon', decidedBy: 'dave' })).status, 'COMPENSATED');
    });
    const [recorded] = steps.inputsOf('recordDecision') as { fingerprint?: string }[];
    assert.equal(recorded?.fingerprint, undefined);
  });

  it('looks again while it waits, and carries on an order whose commit landed after reconciliation, asking no one', async () => {
    const input = failedWrite(testOrder({ policy: testPolicy({ startToCloseMs: 1_000 }) }));
    const looks: boolean[] = [false, true];
    const steps = standIns({
      reconcileFailedWrite: () =>
        steps.names().includes('orderLandedSince')
          ? { orderLanded: true, orderNo: 'SO-1', releasedLines: 0, continuations: 0 }
          : nothingLanded(),
      orderLandedSince: () => looks.shift() ?? true,
      resubmitOrder: () => `order-${input.order.idempotencyKey}`,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input);
      const result = await handle.result();
      assert.deepEqual([result.status, result.outcome], ['SUBMITTED', 'ORDER_LANDED']);
      assert.equal(await listedAs(handle), 'SUBMITTED');
      await assert.rejects(decide(handle, { decision: 'abandon', decidedBy: 'late' }));
    });
    // The first look finds nothing and the wait goes on; the second finds the order.
    assert.deepEqual(steps.names(), [
      'reconcileFailedWrite',
      'orderLandedSince',
      'orderLandedSince',
      'reconcileFailedWrite',
      'resubmitOrder',
    ]);
    assert.deepEqual(steps.inputsOf('resubmitOrder'), [
      { order: input.order, orderRunId: RUN_ID, decidedBy: 'reconciliation' },
    ]);
  });

  it('ends FAILED when the decision window runs out, and hears no decision after it', async () => {
    const input = failedWrite(testOrder({ policy: testPolicy({ decisionTimeoutMs: 500 }) }));
    const steps = standIns({
      reconcileFailedWrite: nothingLanded,
      orderLandedSince: () => false,
      markCompensationFailed: () => undefined,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input);
      const result = await handle.result();
      assert.deepEqual([result.status, result.outcome], ['FAILED', 'DECISION_TIMED_OUT']);
      assert.equal(await listedAs(handle), 'FAILED');
      await assert.rejects(decide(handle, { decision: 'resubmit', decidedBy: 'late' }));
    });
    // One last look whether the order landed, when the window closed, before the key is marked FAILED.
    assert.deepEqual(steps.names(), ['reconcileFailedWrite', 'orderLandedSince', 'markCompensationFailed']);
    assert.deepEqual(steps.inputsOf('markCompensationFailed'), [
      { idempotencyKey: input.order.idempotencyKey, orderRunId: RUN_ID, reason: 'decision window ran out' },
    ]);
  });

  it('records FAILED, keeping the original reason, when a compensation step itself fails, and fails', async () => {
    const input = failedWrite();
    const steps = standIns({
      reconcileFailedWrite: () => {
        throw ApplicationFailure.nonRetryable('permission denied for table compensation_record', 'AuthFailed');
      },
      markCompensationFailed: () => undefined,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      const handle = await start(taskQueue, input);
      await assert.rejects(handle.result(), WorkflowFailedError);
      assert.equal(await listedAs(handle), 'FAILED');
    });
    assert.deepEqual(steps.names(), ['reconcileFailedWrite', 'markCompensationFailed']);
    const [marked] = steps.inputsOf('markCompensationFailed') as { reason: string; landed?: boolean }[];
    assert.match(marked?.reason ?? '', /^compensation failed: .*; original: insufficient stock for SKU-1/);
    assert.equal(marked?.landed, undefined, 'nothing said the order landed');
  });

  it('says the order landed when carrying on a late order fails: the key at SUBMITTED takes only that FAILED', async () => {
    const input = failedWrite(testOrder({ policy: testPolicy({ startToCloseMs: 1_000 }) }));
    const steps = standIns({
      reconcileFailedWrite: () =>
        steps.names().includes('orderLandedSince')
          ? { orderLanded: true, orderNo: 'SO-1', releasedLines: 0, continuations: 0 }
          : nothingLanded(),
      orderLandedSince: () => true,
      resubmitOrder: () => {
        throw ApplicationFailure.nonRetryable('the namespace refuses the start', 'PermissionDenied');
      },
      markCompensationFailed: () => undefined,
    });
    await testEnv.withWorker(steps.activities, async (taskQueue) => {
      await assert.rejects((await start(taskQueue, input)).result(), WorkflowFailedError);
    });
    const [marked] = steps.inputsOf('markCompensationFailed') as { reason: string; landed?: boolean }[];
    assert.equal(marked?.landed, true);
    assert.match(marked?.reason ?? '', /^compensation failed: .*; original: insufficient stock/);
  });
});
