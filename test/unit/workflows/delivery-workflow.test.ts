// The delivery workflow's decisions, with its activities stood in for: an operator's redeliver or
// mark-handled on a failed delivery after the order workflow has closed. One local dev server for
// the file, a worker and a task queue per test. What the delivery itself sends is proven by
// test/unit/activities/delivery.test.ts and test/integration/delivery.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Context } from '@temporalio/activity';
import { toActivityFailure } from '../../../activities/activity-failure.js';
import { DownstreamHttpError } from '../../../domain/errors.js';
import { deliveryWorkflow } from '../../../workflows/delivery-workflow.js';
import {
  type DeliveryDecision,
  type DeliveryDecisionInput,
  deliveryWorkflowIdFor,
} from '../../../workflows/definitions.js';
import { OrderStatus } from '../../../workflows/search-attributes.js';
import {
  standIns,
  startWorkflowTestEnvironment,
  testOrder,
  type WorkflowTestEnvironment,
  writtenResult,
} from '../../../tools/harness/workflow-tests.js';

function decisionOn(decision: DeliveryDecision): DeliveryDecisionInput {
  const order = testOrder();
  return { order, written: writtenResult(order), decision, decidedBy: 'erin' };
}

/** Throws `error` as the real delivery does: classified by the one table, with the attempt. */
function fail(error: unknown): never {
  throw toActivityFailure(error, Context.current().info.attempt, {
    initialIntervalMs: 20,
    maxIntervalMs: 100,
    backoffCoefficient: 2,
  });
}

describe('the delivery workflow', () => {
  let testEnv: WorkflowTestEnvironment;
  before(async () => {
    testEnv = await startWorkflowTestEnvironment();
  });
  after(async () => {
    await testEnv?.teardown();
  });

  /** Runs the decision to its end; returns what it answered and the status the UI lists it under. */
  const run = (activities: Parameters<WorkflowTestEnvironment['withWorker']>[0], input: DeliveryDecisionInput) =>
    testEnv.withWorker(activities, async (taskQueue) => {
      const handle = await testEnv.env.client.workflow.start(deliveryWorkflow, {
        taskQueue,
        workflowId: deliveryWorkflowIdFor(input.order.idempotencyKey),
        args: [input],
      });
      const result = await handle.result();
      const listedAs = (await handle.describe()).typedSearchAttributes.get(OrderStatus);
      return { result, listedAs };
    });

  it('marks a failed delivery handled: records DELIVERED with who decided, and sends nothing', async () => {
    const input = decisionOn('mark-handled');
    const steps = standIns({ recordDeliveryOutcome: (request) => request.status });
    const { result, listedAs } = await run(steps.activities, input);
    assert.deepEqual(result, {
      idempotencyKey: input.order.idempotencyKey,
      status: 'DELIVERED',
      outcome: 'MARKED_HANDLED',
    });
    assert.equal(listedAs, 'DELIVERED');
    assert.deepEqual(steps.names(), ['recordDeliveryOutcome']);
    assert.deepEqual(steps.inputsOf('recordDeliveryOutcome'), [
      { idempotencyKey: input.order.idempotencyKey, status: 'DELIVERED', decidedBy: 'erin' },
    ]);
  });

  it('redelivers the same event, built from the order as written, and reports DELIVERED', async () => {
    const input = decisionOn('redeliver');
    const steps = standIns({ deliverOrderEvent: () => ({ status: 202, attempt: 1, eventId: 'event' }) });
    const { result, listedAs } = await run(steps.activities, input);
    assert.deepEqual(result, {
      idempotencyKey: input.order.idempotencyKey,
      status: 'DELIVERED',
      outcome: 'REDELIVERED',
    });
    assert.equal(listedAs, 'DELIVERED');
    // The delivery records DELIVERED itself; nothing else is asked of the record.
    assert.deepEqual(steps.names(), ['deliverOrderEvent']);
    assert.deepEqual(steps.inputsOf('deliverOrderEvent'), [{ order: input.order, written: input.written }]);
  });

  it("retries a redelivery the downstream could not take just now, under the order's policy", async () => {
    const input = decisionOn('redeliver');
    const steps = standIns({
      deliverOrderEvent: () => {
        const { attempt } = Context.current().info;
        if (attempt === 1) fail(new DownstreamHttpError(503, undefined, 'busy'));
        return { status: 202, attempt, eventId: 'event' };
      },
    });
    const { result } = await run(steps.activities, input);
    assert.equal(result.status, 'DELIVERED');
    assert.deepEqual(steps.names(), ['deliverOrderEvent', 'deliverOrderEvent']);
  });

  it("records DELIVERY_FAILED with the downstream's answer when the redelivery is refused", async () => {
    const input = decisionOn('redeliver');
    const steps = standIns({
      deliverOrderEvent: () => fail(new DownstreamHttpError(422, undefined, 'unknown sku')),
      recordDeliveryOutcome: (request) => request.status,
    });
    const { result, listedAs } = await run(steps.activities, input);
    assert.deepEqual(result, {
      idempotencyKey: input.order.idempotencyKey,
      status: 'DELIVERY_FAILED',
      outcome: 'REDELIVERY_FAILED',
    });
    assert.equal(listedAs, 'DELIVERY_FAILED');
    assert.deepEqual(steps.names(), ['deliverOrderEvent', 'recordDeliveryOutcome']);
    assert.deepEqual(steps.inputsOf('recordDeliveryOutcome'), [
      {
        idempotencyKey: input.order.idempotencyKey,
        status: 'DELIVERY_FAILED',
        lastError: 'DownstreamRejected: downstream answered 422: unknown sku',
      },
    ]);
  });

  it("keeps DELIVERED when an earlier attempt's acknowledgement was recorded, though the redelivery failed", async () => {
    const input = decisionOn('redeliver');
    const steps = standIns({
      deliverOrderEvent: () => fail(new DownstreamHttpError(422, undefined, 'already processed')),
      recordDeliveryOutcome: () => 'DELIVERED' as const,
    });
    const { result, listedAs } = await run(steps.activities, input);
    assert.deepEqual([result.status, result.outcome, listedAs], ['DELIVERED', 'REDELIVERY_FAILED', 'DELIVERED']);
  });
});
