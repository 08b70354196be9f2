// Telling the ERP exactly once in effect: every attempt carries the order's key and the same
// event id, HTTP failures are retried or not by the one classification table, and the reference
// consumer applies each event once — also when its answer is lost or the worker dies mid-way.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { eventIdFor } from '../../domain-node/order-event.js';
import type { orderWorkflow } from '../../workflows/order-workflow.js';
import { decideUpdate, deliveryWorkflowIdFor, orderStateQuery } from '../../workflows/definitions.js';
import { WorkflowUpdateStage } from '@temporalio/client';
import { decideDelivery } from '../../submission/operator-decisions/delivery.js';
import { NoPendingDecisionError } from '../../submission/operator-decisions/shared.js';
import { createActivities } from '../../activities/index.js';
import type { OrderEventPublisher } from '../../services/broker/order-event-publisher.js';
import { startScriptedDownstream, type ScriptedDownstream } from '../../tools/harness/scripted-downstream.js';
import { FaultPlan, startServiceWithFaults } from '../../tools/harness/faults.js';
import {
  approval,
  createSku,
  eventually,
  freshApproval,
  getOrder,
  orderCount,
  type OrderView,
  postApproval,
  recordedLastError,
  stackEnv,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  workflowExists,
} from '../../tools/harness/service.js';
import { nodeArgsFor } from '../../tools/harness/test-build.js';

const SECRET = 'downstream-secret-0123456789';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('delivery of order events', () => {
  const faults = new FaultPlan();
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;

  before(async () => {
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
    downstream = await startScriptedDownstream(pool, SECRET, `consumer_${randomBytes(3).toString('hex')}`);
    service = await startServiceWithFaults(faults, {
      DOWNSTREAM_URL: downstream.url,
      DOWNSTREAM_SECRET: SECRET,
      DOWNSTREAM_TIMEOUT_MS: '2000',
      // Room for a Retry-After of 2 s under the cap.
      RETRY_MAX_INTERVAL_MS: '5000',
    });
  });
  after(async () => {
    await service.stop();
    await downstream.close();
    await pool.end();
  });

  const submit = (prefix: string) => freshApproval(service.prisma, prefix);

  function assertSameKeyAndEvent(key: string, count: number) {
    const arrivals = downstream.arrivals(key);
    assert.equal(arrivals.length, count, `${count} attempt(s) reached the downstream`);
    for (const arrival of arrivals) {
      assert.equal(arrival.idempotencyKey, key);
      assert.equal(arrival.eventId, eventIdFor(key));
    }
    assert.equal(new Set(arrivals.map((arrival) => arrival.body)).size, 1, 'the same body on every attempt');
  }

  it('500, 500, then 200: three attempts with the same key and event id, one effect, DELIVERED', async () => {
    const { key, body } = await submit('D500');
    downstream.script(key, [
      { kind: 'status', status: 500 },
      { kind: 'status', status: 503 },
    ]);
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERED');
    assertSameKeyAndEvent(key, 3);
    assert.equal(await downstream.effects(key), 1);
    assert.equal(await orderCount(service.prisma, key), 1);
    const event = JSON.parse(downstream.arrivals(key)[0]?.body ?? '{}') as Record<string, unknown>;
    assert.deepEqual(
      [event.type, event.idempotencyKey, event.approvalNo, event.operation, event.totalAmount],
      ['order.created', key, body.approvalNo, 'MAIN', '21.0000'],
    );
  });

  it('429 with Retry-After: 2 is retried no sooner than two seconds later', async () => {
    const { key, body } = await submit('D429');
    downstream.script(key, [{ kind: 'status', status: 429, headers: { 'retry-after': '2' } }]);
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERED');
    const [first, second] = downstream.arrivals(key);
    assert.ok(first && second, 'two attempts');
    assert.ok(
      second.receivedAt - first.receivedAt >= 2_000,
      `retried after ${second.receivedAt - first.receivedAt} ms`,
    );
    assert.equal(await downstream.effects(key), 1);
  });

  for (const [status, reason] of [
    [400, 'DownstreamRejected'],
    [401, 'DownstreamAuthFailed'],
  ] as const) {
    it(`${status} is not retried: one attempt, DELIVERY_FAILED with the reason`, async () => {
      const { key, body } = await submit(`D${status}`);
      downstream.script(key, [{ kind: 'status', status }]);
      assert.equal((await postApproval(service, body)).statusCode, 202);
      const view = await statusReaches(service, key, 'DELIVERY_FAILED');
      assert.equal(view.lastError?.code, status === 400 ? 'downstream-rejected' : 'downstream-auth-failed');
      assert.match(await recordedLastError(service, key), new RegExp(`${reason}: downstream answered ${status}`));
      assertSameKeyAndEvent(key, 1);
      assert.equal(await downstream.effects(key), 0);
      assert.equal(await orderCount(service.prisma, key), 1, 'the order itself stands');
    });
  }

  it('an operator who redelivers after the window, on a worker without the broker the order was written for, sends to none: DELIVERY_FAILED, naming the setting', async () => {
    // A deploy that drops AMQP_URL: the order was written by a worker that POSTs and publishes, its
    // delivery was refused and its decision window ran out; the operator's redeliver then runs on a
    // worker that only POSTs. Sending to the downstream alone and recording DELIVERED would leave
    // the broker's consumers without the event, and nothing would show it.
    const { key, body } = await submit('DTARGET');
    const taskQueue = `test-targets-${randomBytes(4).toString('hex')}`;
    const published: string[] = [];
    const broker: OrderEventPublisher = {
      exchange: 'orders',
      publish: (message) => {
        published.push(message.idempotencyKey);
        return Promise.resolve();
      },
      close: () => Promise.resolve(),
    };
    const downstreamSettings = {
      DOWNSTREAM_URL: downstream.url,
      DOWNSTREAM_SECRET: SECRET,
      TEMPORAL_TASK_QUEUE: taskQueue,
    };
    const writer = await startTestService({
      config: testConfig({
        ...downstreamSettings,
        // A short decision window, so the order workflow closes and the decision goes the other way.
        ACTIVITY_SCHEDULE_TO_CLOSE_MS: '5000',
        COMPENSATION_DECISION_TIMEOUT_MS: '6000',
      }),
      activities: (_real, deps) => createActivities({ ...deps, publisher: broker }),
    });
    try {
      downstream.script(key, [{ kind: 'status', status: 400 }]);
      assert.equal((await postApproval(writer, body)).statusCode, 202);
      const closed = await writer.temporal.workflow.getHandle<typeof orderWorkflow>(orderWorkflowIdFor(key)).result();
      assert.equal(closed.finalStatus, 'DELIVERY_FAILED');
      assert.deepEqual(published, [key], 'the writing worker published as well as POSTed');
    } finally {
      await writer.stop();
    }

    const operator = await startTestService({ config: testConfig(downstreamSettings) });
    try {
      const result = await decideDelivery(
        {
          prisma: operator.prisma,
          temporal: operator.temporal,
          taskQueue,
          writePolicy: operator.config.writePolicy,
        },
        { idempotencyKey: key, decision: 'redeliver', decidedBy: 'delivery-test' },
      );
      assert.deepEqual(result, { idempotencyKey: key, status: 'DELIVERY_FAILED', outcome: 'REDELIVERY_FAILED' });
      assert.equal(await workflowExists(operator.temporal, deliveryWorkflowIdFor(key)), true);
      const view = JSON.parse((await getOrder(operator, key)).body) as OrderView;
      assert.equal(view.status, 'DELIVERY_FAILED');
      assert.equal(view.lastError?.code, 'delivery-target-missing');
      assert.match(await recordedLastError(operator, key), /DeliveryTargetMissing: .*broker.*AMQP_URL/);
      assertSameKeyAndEvent(key, 1); // the first, refused attempt only: nothing went to the downstream alone
      assert.deepEqual(published, [key]);
    } finally {
      await operator.stop();
    }
  });

  it('a consumer that commits but whose answer is lost gets the event again and applies it once', async () => {
    const { key, body } = await submit('DCUT');
    downstream.script(key, [{ kind: 'consumer-then-cut' }]);
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERED');
    assertSameKeyAndEvent(key, 2);
    assert.equal(await downstream.effects(key), 1);
  });

  it('an order whose write "failed" after it committed is reconciled as landed and still delivered once', async () => {
    const { approvalNo, key, body } = await submit('DLANDED');
    faults.set(approvalNo, { kind: 'commit-then-unclassified-failure' });
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERED');
    assertSameKeyAndEvent(key, 1);
    assert.equal(await downstream.effects(key), 1);
    assert.equal(await orderCount(service.prisma, key), 1);
    const record = await service.prisma.compensationRecord.findFirstOrThrow({ where: { idempotentKey: key } });
    assert.deepEqual([record.orderLanded, record.decision, record.decidedBy], [true, 'resubmit', 'reconciliation']);
  });

  it('an operator redelivers a failed delivery with the same key and event id, or marks it handled', async () => {
    const redeliver = await submit('DREDO');
    downstream.script(redeliver.key, [{ kind: 'status', status: 422 }]);
    assert.equal((await postApproval(service, redeliver.body)).statusCode, 202);
    await statusReaches(service, redeliver.key, 'DELIVERY_FAILED');
    const handle = service.temporal.workflow.getHandle<typeof orderWorkflow>(orderWorkflowIdFor(redeliver.key));
    const answer = await handle.executeUpdate(decideUpdate, {
      args: [{ decision: 'redeliver', decidedBy: 'test-operator' }],
    });
    assert.equal(answer.status, 'DELIVERED');
    assertSameKeyAndEvent(redeliver.key, 2);
    assert.equal(await downstream.effects(redeliver.key), 1);
    assert.equal((await handle.result()).finalStatus, 'DELIVERED');

    const handled = await submit('DHANDLED');
    downstream.script(handled.key, [{ kind: 'status', status: 400 }]);
    assert.equal((await postApproval(service, handled.body)).statusCode, 202);
    await statusReaches(service, handled.key, 'DELIVERY_FAILED');
    const handledAnswer = await service.temporal.workflow
      .getHandle<typeof orderWorkflow>(orderWorkflowIdFor(handled.key))
      .executeUpdate(decideUpdate, { args: [{ decision: 'mark-handled', decidedBy: 'test-operator' }] });
    assert.equal(handledAnswer.status, 'DELIVERED');
    await statusReaches(service, handled.key, 'DELIVERED');
    assertSameKeyAndEvent(handled.key, 1);
  });
  it('an operator who decides as soon as the record says DELIVERY_FAILED is heard, before the workflow has caught up', async () => {
    // The record is written by an activity; the workflow moves to DELIVERY_FAILED only once that
    // activity's completion reaches it. An operator reading the record in between is not refused.
    const { key, body } = await submit('DEARLY');
    downstream.script(key, [{ kind: 'status', status: 400 }]);
    const held = faults.holdDeliveryOutcome(key);
    try {
      assert.equal((await postApproval(service, body)).statusCode, 202);
      await statusReaches(service, key, 'DELIVERY_FAILED');
      const handle = service.temporal.workflow.getHandle<typeof orderWorkflow>(orderWorkflowIdFor(key));
      assert.equal((await handle.query(orderStateQuery)).status, 'SUBMITTED', 'the workflow has not heard it yet');
      const update = await handle.startUpdate(decideUpdate, {
        args: [{ decision: 'redeliver', decidedBy: 'early-operator' }],
        waitForStage: WorkflowUpdateStage.ACCEPTED,
      });
      held.release();
      assert.equal((await update.result()).status, 'DELIVERED');
      assert.equal((await handle.result()).finalStatus, 'DELIVERED');
      assertSameKeyAndEvent(key, 2);
      assert.equal(await downstream.effects(key), 1);
    } finally {
      held.release();
    }
  });
  it('the operator path decides while the order workflow still waits: its own update, no delivery workflow', async () => {
    const { key, body } = await submit('DOPWAIT');
    downstream.script(key, [{ kind: 'status', status: 400 }]);
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERY_FAILED');
    const deps = {
      prisma: service.prisma,
      temporal: service.temporal,
      taskQueue: service.config.temporal.taskQueue,
      writePolicy: service.config.writePolicy,
    };
    const answer = await decideDelivery(deps, { idempotencyKey: key, decision: 'redeliver', decidedBy: 'op' });
    assert.equal(answer.status, 'DELIVERED');
    const handle = service.temporal.workflow.getHandle<typeof orderWorkflow>(orderWorkflowIdFor(key));
    assert.equal((await handle.result()).finalStatus, 'DELIVERED', 'the waiting workflow carried it out');
    assert.equal(await workflowExists(service.temporal, deliveryWorkflowIdFor(key)), false);
    assertSameKeyAndEvent(key, 2);
    assert.equal(await downstream.effects(key), 1);

    await assert.rejects(
      decideDelivery(deps, { idempotencyKey: key, decision: 'redeliver', decidedBy: 'op' }),
      (error) => error instanceof NoPendingDecisionError && /status is DELIVERED/.test(error.message),
    );
    assertSameKeyAndEvent(key, 2);
  });
});

describe('delivery when the worker dies', () => {
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;
  const workers: ChildProcess[] = [];

  before(async () => {
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
    downstream = await startScriptedDownstream(pool, SECRET, `consumer_${randomBytes(3).toString('hex')}`);
    service = await startTestService({
      config: testConfig({ DOWNSTREAM_URL: downstream.url, DOWNSTREAM_SECRET: SECRET }),
      inProcessWorker: false,
    });
  });
  after(async () => {
    for (const worker of workers) worker.kill('SIGKILL');
    await service.stop();
    await downstream.close();
    await pool.end();
  });

  /** The real worker entry point, as its own process, on this file's task queue. */
  async function startWorkerProcess(): Promise<ChildProcess> {
    const { config } = service;
    const child = spawn(process.execPath, nodeArgsFor('app/worker-main.ts'), {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        DATABASE_URL: config.databaseUrl,
        TEMPORAL_ADDRESS: config.temporal.address,
        TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
        DOWNSTREAM_URL: downstream.url,
        DOWNSTREAM_SECRET: SECRET,
        DOWNSTREAM_TIMEOUT_MS: '2500',
        ACTIVITY_START_TO_CLOSE_MS: '3000',
        RETRY_INITIAL_INTERVAL_MS: '100',
        RETRY_MAX_INTERVAL_MS: '1000',
        LOG_LEVEL: 'info',
      },
    });
    workers.push(child);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    await eventually(
      'the worker process to poll',
      () => Promise.resolve(output.includes('worker polling') ? true : undefined),
      60_000,
    );
    return child;
  }

  it('a worker killed between the commit and the acknowledged delivery: the next worker delivers once, same key', async () => {
    const approvalNo = uniqueApprovalNo('DKILL');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, await createSku(service.prisma, 10));
    downstream.script(key, [{ kind: 'hang' }]);
    const first = await startWorkerProcess();
    assert.equal((await postApproval(service, body)).statusCode, 202);

    // The order is committed and its event is on the wire when the worker dies.
    await eventually('the first delivery attempt', () =>
      Promise.resolve(downstream.arrivals(key).length > 0 ? true : undefined),
    );
    assert.equal(await orderCount(service.prisma, key), 1);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));

    await startWorkerProcess();
    await eventually(`${key} to be delivered`, async () => {
      const view = (await getOrder(service, key)).json<OrderView>();
      return view.status === 'DELIVERED' ? view : undefined;
    });
    const arrivals = downstream.arrivals(key);
    assert.equal(arrivals.length, 2);
    assert.deepEqual(
      new Set(arrivals.map((arrival) => `${arrival.idempotencyKey} ${arrival.eventId}`)),
      new Set([`${key} ${eventIdFor(key)}`]),
    );
    assert.equal(await downstream.effects(key), 1);
    assert.equal(await orderCount(service.prisma, key), 1);
  });
});
