// The compensation steps in a mocked activity context, their database steps stood in by in-memory
// tables and Temporal by a client of plain functions: what reconciliation finds and records, that a
// decided failure is never compensated again, that abandoning never abandons an order that landed,
// that a resubmit starts its run only once the failed one closed and is recorded only once it
// started, and that a failure reaches the steps' retry policy as it was thrown. The statements run
// against the database in test/integration/compensation.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { type compensationDatabase, createCompensationActivities } from '../../../activities/compensation.js';
import { publicErrorOf } from '../../../domain/error-classification.js';
import { compensationWorkflowIdFor, orderWorkflowIdFor } from '../../../domain/idempotency-key.js';
import type { CompensationDecision, OrderStatus } from '../../../domain/order-status.js';
import type { CompensationRecord } from '../../../services/db/compensation-records.js';
import type { IdempotencyRecord } from '../../../services/db/idempotency-records.js';
import type { StoredOrder } from '../../../services/db/order-repository.js';
import type { StatusDetails } from '../../../services/db/order-status-writer.js';
import type { PrismaClient, Tx } from '../../../services/db/prisma-client.js';
import { noProductMetrics } from '../../../services/metrics/product-metrics.js';
import { DEFAULT_LOCAL_RETRY_THRESHOLD_MS } from '../../../workflows/activity-presets.js';
import type { CompensationInput, OrderWorkflowStart } from '../../../workflows/definitions.js';
import { testFormOrder, testOrder } from '../../../tools/harness/workflow-tests.js';

const TASK_QUEUE = 'orders-unit';
const FAILED_RUN = 'run-that-failed';

/** The transaction a step runs in; a database step handed it ran inside that transaction. */
const STEP_TRANSACTION = { transaction: 'the step' } as unknown as Tx;

/** A connection lost on the way to the database, as Prisma's pg adapter reports it. */
const connectionLost = () =>
  Object.assign(new Error('Invalid `prisma.$transaction()` invocation'), {
    code: 'P2010',
    meta: { driverAdapterError: Object.assign(new Error('adapter error'), { cause: { kind: 'ConnectionClosed' } }) },
  });

/** Answers as a database call does: on a later turn, with what `work` returns or throws. */
const later = <T>(work: () => T): Promise<T> => Promise.resolve().then(work);

/** Orders, the keys' records and the compensation records, as compensation's database steps see them. */
class CompensationTables {
  readonly orders = new Map<string, StoredOrder>();
  /** Each key's record: its status and the fingerprint of what its form mapped to, if anything. */
  readonly records = new Map<string, { status: OrderStatus; fingerprint: string | null }>();
  /** One compensation record per failed run, keyed `<key> <run>`; the first one recorded stays. */
  readonly compensations = new Map<string, CompensationRecord>();
  /** Every status change asked for, and whether it ran inside the step's transaction. */
  readonly statusChanges: {
    idempotencyKey: string;
    status: OrderStatus;
    details: StatusDetails;
    inTransaction: boolean;
  }[] = [];
  /** How often reconciliation already continued each key's landed order. */
  readonly continuations = new Map<string, number>();
  /** The failure the next database step ends in. */
  nextStepFails: Error | undefined;

  readonly prisma = {
    $transaction: async (work: (tx: Tx) => Promise<unknown>) => work(STEP_TRANSACTION),
  } as unknown as PrismaClient;

  /** Lands `order` as written by an earlier attempt. */
  land(order: { idempotencyKey: string; approvalNo: string }, fingerprint: string): StoredOrder {
    const stored: StoredOrder = {
      orderId: '1001',
      orderNo: `SO-${order.approvalNo}`,
      idempotencyKey: order.idempotencyKey,
      fingerprint,
      totalAmount: '20.0000',
      writtenAttempt: 1,
      createdAt: new Date('2025-03-01T09:30:01.000Z'),
      deliveryTargets: ['http'],
    };
    this.orders.set(order.idempotencyKey, stored);
    return stored;
  }

  private step() {
    const fault = this.nextStepFails;
    this.nextStepFails = undefined;
    if (fault) throw fault;
  }

  readonly database: typeof compensationDatabase = {
    findRecord: (_db, idempotencyKey) =>
      later(() => {
        this.step();
        const record = this.records.get(idempotencyKey);
        return record && ({ idempotencyKey, ...record } as unknown as IdempotencyRecord);
      }),
    findOrderByKey: (_db, idempotencyKey) =>
      later(() => {
        this.step();
        return this.orders.get(idempotencyKey);
      }),
    findCompensation: (_db, idempotencyKey, orderRunId) =>
      later(() => {
        this.step();
        return this.compensations.get(`${idempotencyKey} ${orderRunId}`);
      }),
    recordCompensation: (_db, record) =>
      later(() => {
        this.step();
        const id = `${record.idempotencyKey} ${record.orderRunId}`;
        if (this.compensations.has(id)) return;
        this.compensations.set(id, {
          ...record,
          id: BigInt(this.compensations.size + 1),
          decision: null,
          decidedBy: null,
          decidedAt: null,
          createdAt: new Date(),
        });
      }),
    recordCompensationDecision: (_db, request) =>
      later(() => {
        this.step();
        const record = this.compensations.get(`${request.idempotencyKey} ${request.orderRunId}`);
        if (!record || record.decision) return false;
        Object.assign(record, { decision: request.decision, decidedBy: request.decidedBy, decidedAt: new Date() });
        return true;
      }),
    continuationsSinceOperatorAction: (_db, idempotencyKey) =>
      later(() => {
        this.step();
        return this.continuations.get(idempotencyKey) ?? 0;
      }),
    transitionStatus: (db, idempotencyKey, status, details) =>
      later(() => {
        this.step();
        this.statusChanges.push({ idempotencyKey, status, details, inTransaction: db === STEP_TRANSACTION });
        const from = this.records.get(idempotencyKey)?.status;
        const record = this.records.get(idempotencyKey);
        if (record) record.status = status;
        return { applied: true, from: from ?? 'RECEIVED', acceptedAt: new Date() };
      }),
  };

  compensationOf(idempotencyKey: string, orderRunId = FAILED_RUN) {
    return this.compensations.get(`${idempotencyKey} ${orderRunId}`);
  }
}

/** Temporal as compensation calls it: starts recorded, the failed run closed when the test says so. */
class TemporalStandIn {
  readonly started: { workflowType: string; workflowId: string; args: unknown[]; reusePolicy: string }[] = [];
  /** The failed runs awaited to close, as `<workflow id> <run id>`. */
  readonly awaited: string[] = [];
  /** The failure the next start ends in. */
  nextStartFails: Error | undefined;
  private closeFailedRun: () => void = () => {};
  private failedRunClosed: Promise<never> = Promise.reject(
    new WorkflowFailedError('Workflow execution failed', undefined, 'NON_RETRYABLE_FAILURE'),
  );

  constructor() {
    this.failedRunClosed.catch(() => {});
  }

  /** Keeps the failed run open until `close()` is called. */
  holdFailedRunOpen(): { close: () => void } {
    this.failedRunClosed = new Promise<never>((_resolve, reject) => {
      this.closeFailedRun = () =>
        reject(new WorkflowFailedError('Workflow execution failed', undefined, 'NON_RETRYABLE_FAILURE'));
    });
    this.failedRunClosed.catch(() => {});
    return { close: () => this.closeFailedRun() };
  }

  readonly client = {
    workflow: {
      start: (workflowType: string, options: { workflowId: string; args: unknown[]; workflowIdReusePolicy: string }) =>
        later(() => {
          const fault = this.nextStartFails;
          this.nextStartFails = undefined;
          if (fault) throw fault;
          this.started.push({
            workflowType,
            workflowId: options.workflowId,
            args: options.args,
            reusePolicy: options.workflowIdReusePolicy,
          });
          return { workflowId: options.workflowId };
        }),
      getHandle: (workflowId: string, runId?: string) => ({
        describe: () => Promise.reject(new WorkflowNotFoundError('no such workflow', workflowId, runId)),
        result: async () => {
          this.awaited.push(`${workflowId} ${runId ?? ''}`);
          return this.failedRunClosed;
        },
      }),
    },
  } as unknown as Client;
}

function compensationSteps(tables = new CompensationTables(), temporal = new TemporalStandIn()) {
  const started: string[] = [];
  const metrics = { ...noProductMetrics(), compensationStarted: (reason: string) => started.push(reason) };
  const steps = createCompensationActivities({
    prisma: tables.prisma,
    temporal: temporal.client,
    taskQueue: TASK_QUEUE,
    metrics,
    database: tables.database,
  });
  return { ...steps, tables, temporal, counted: started };
}

const activityContext = () =>
  new MockActivityEnvironment({ attempt: 1 }, { logger: new DefaultLogger('ERROR', () => {}) });

/** One run of `step` in a mocked activity context; resolves with what it returned. */
const run = <A extends unknown[], R>(step: (...args: A) => Promise<R>, ...args: A): Promise<R> =>
  activityContext().run<A, R, typeof step>(step, ...args);

function failure(order: OrderWorkflowStart, overrides: Partial<CompensationInput> = {}): CompensationInput {
  return {
    order,
    orderRunId: FAILED_RUN,
    reasonType: 'InsufficientStock',
    reason: 'SKU-1: requested 2, available 1',
    attempts: 1,
    ...overrides,
  };
}

/** Runs `step` expecting it to throw; resolves with what it threw. */
async function thrownBy<A extends unknown[]>(step: (...args: A) => Promise<unknown>, ...args: A) {
  return activityContext()
    .run(step, ...args)
    .then(
      () => assert.fail('the step must fail'),
      (error: unknown) => error,
    );
}

describe('starting compensation', () => {
  it('starts compensation-<key> with the failure and counts it by its reason; a failed start counts nothing', async () => {
    const { startCompensation, temporal, counted } = compensationSteps();
    const input = failure(testOrder());
    const workflowId = await run(startCompensation, input);
    assert.equal(workflowId, compensationWorkflowIdFor(input.order.idempotencyKey));
    assert.deepEqual(temporal.started, [
      { workflowType: 'compensationWorkflow', workflowId, args: [input], reusePolicy: 'ALLOW_DUPLICATE' },
    ]);
    assert.deepEqual(counted, ['InsufficientStock']);

    const unreachable = new Error('14 UNAVAILABLE: No connection established');
    temporal.nextStartFails = unreachable;
    assert.equal(await thrownBy(startCompensation, failure(testOrder())), unreachable);
    assert.deepEqual(counted, ['InsufficientStock']);
  });
});

describe('reconciling a failed write', () => {
  it('finds no order, records the failure and moves the key to COMPENSATING with its reason, to wait for an operator', async () => {
    const { reconcileFailedWrite, tables } = compensationSteps();
    const input = failure(testOrder(), { attempts: 3 });
    const key = input.order.idempotencyKey;
    const found = await run(reconcileFailedWrite, input);
    assert.deepEqual(found, { orderLanded: false, releasedLines: 0 });
    assert.deepEqual(
      { ...tables.compensationOf(key), id: undefined, createdAt: undefined },
      {
        idempotencyKey: key,
        orderRunId: FAILED_RUN,
        reasonType: 'InsufficientStock',
        reason: 'SKU-1: requested 2, available 1',
        attempts: 3,
        orderLanded: false,
        releasedLines: 0,
        decision: null,
        decidedBy: null,
        decidedAt: null,
        id: undefined,
        createdAt: undefined,
      },
    );
    assert.deepEqual(tables.statusChanges, [
      {
        idempotencyKey: key,
        status: 'COMPENSATING',
        details: { attempts: 3, lastError: 'InsufficientStock: SKU-1: requested 2, available 1' },
        inTransaction: true,
      },
    ]);
    assert.equal(publicErrorOf(tables.statusChanges[0]?.details.lastError ?? '').code, 'insufficient-stock');
  });

  it('finds the order landed after all (a slow attempt committed), records that and moves the key back to SUBMITTED', async () => {
    const { reconcileFailedWrite, tables } = compensationSteps();
    const order = testOrder();
    const stored = tables.land(order, order.fingerprint);
    tables.continuations.set(order.idempotencyKey, 2);
    const found = await run(reconcileFailedWrite, failure(order, { attempts: 2 }));
    assert.deepEqual(found, { orderLanded: true, orderNo: stored.orderNo, releasedLines: 0, continuations: 2 });
    assert.equal(tables.compensationOf(order.idempotencyKey)?.orderLanded, true);
    assert.deepEqual(
      tables.statusChanges.map(({ status, details, inTransaction }) => ({ status, details, inTransaction })),
      [{ status: 'SUBMITTED', details: { attempts: 2 }, inTransaction: true }],
    );
  });

  it('does not take another order under the key (the conflict that failed the write) for this one landing', async () => {
    const { reconcileFailedWrite, tables } = compensationSteps();
    const order = testOrder();
    tables.land(order, 'e'.repeat(64));
    const found = await run(reconcileFailedWrite, failure(order, { reasonType: 'IdempotencyKeyConflict' }));
    assert.equal(found.orderLanded, false);
    assert.equal(tables.compensationOf(order.idempotencyKey)?.orderLanded, false);
    assert.deepEqual(
      tables.statusChanges.map((change) => change.status),
      ['COMPENSATING'],
    );
  });

  it("judges an order that failed in its approval form by what the key's record says the form mapped to", async () => {
    const mapped = compensationSteps();
    const form = testFormOrder();
    mapped.tables.records.set(form.idempotencyKey, { status: 'RECEIVED', fingerprint: 'a'.repeat(64) });
    mapped.tables.land(form, 'a'.repeat(64));
    const landed = await run(mapped.reconcileFailedWrite, failure(form));
    assert.equal(landed.orderLanded, true);

    // The form was never mapped: an order under the key is not this one.
    const unmapped = compensationSteps();
    unmapped.tables.records.set(form.idempotencyKey, { status: 'RECEIVED', fingerprint: null });
    unmapped.tables.land(form, 'a'.repeat(64));
    const notLanded = await run(unmapped.reconcileFailedWrite, failure(form));
    assert.equal(notLanded.orderLanded, false);
  });

  it('looks whether the order landed since, by the same fingerprint rule, and changes nothing', async () => {
    const { orderLandedSince, tables } = compensationSteps();
    const order = testOrder();
    assert.equal(await run(orderLandedSince, failure(order)), false);
    tables.land(order, 'e'.repeat(64));
    assert.equal(await run(orderLandedSince, failure(order)), false, 'another order under the key is not this one');
    const form = testFormOrder();
    tables.records.set(form.idempotencyKey, { status: 'SUBMITTED', fingerprint: 'a'.repeat(64) });
    tables.land(form, 'a'.repeat(64));
    assert.equal(await run(orderLandedSince, failure(form)), true);
    assert.deepEqual(tables.statusChanges, []);
    assert.equal(tables.compensationOf(form.idempotencyKey), undefined);
  });

  it("run again for a failure already decided, answers the decision and the key's status and changes nothing", async () => {
    const { reconcileFailedWrite, recordDecision, tables } = compensationSteps();
    const order = testOrder();
    const input = failure(order);
    const key = order.idempotencyKey;
    tables.records.set(key, { status: 'RECEIVED', fingerprint: order.fingerprint });
    await run(reconcileFailedWrite, input);
    await run(recordDecision, {
      idempotencyKey: key,
      orderRunId: FAILED_RUN,
      decision: 'abandon',
      decidedBy: 'operator@example.com',
    });
    const recorded = { ...tables.compensationOf(key) };
    const changes = tables.statusChanges.length;

    const again = await run(reconcileFailedWrite, input);
    assert.deepEqual(again, {
      orderLanded: false,
      releasedLines: 0,
      priorDecision: { decision: 'abandon', status: 'COMPENSATED' },
    });
    assert.deepEqual(tables.compensationOf(key), recorded);
    assert.equal(tables.statusChanges.length, changes);
  });

  it("hands a database failure to the steps' retry policy as it was thrown, whatever its class", async () => {
    const { reconcileFailedWrite, tables } = compensationSteps();
    for (const error of [connectionLost(), Object.assign(new Error('check violated'), { code: '23514' })]) {
      tables.nextStepFails = error;
      const thrown = await thrownBy(reconcileFailedWrite, failure(testOrder()));
      assert.equal(thrown, error);
      assert.ok(!(thrown instanceof ApplicationFailure), 'not turned into a failure that is never retried');
    }
    assert.equal(tables.compensations.size, 0);
    assert.deepEqual(tables.statusChanges, []);
  });
});

describe("recording an operator's decision", () => {
  /** A failure reconciled without its order, awaiting a decision. */
  async function awaitingDecision() {
    const steps = compensationSteps();
    const order = testOrder();
    await run(steps.reconcileFailedWrite, failure(order));
    return { ...steps, order, key: order.idempotencyKey };
  }
  const decision = (key: string, decided: CompensationDecision, fingerprint?: string) => ({
    idempotencyKey: key,
    orderRunId: FAILED_RUN,
    decision: decided,
    decidedBy: 'operator@example.com',
    ...(fingerprint ? { fingerprint } : {}),
  });

  it('abandons an order that did not land: the decision recorded and the key COMPENSATED', async () => {
    const { recordDecision, tables, key, order } = await awaitingDecision();
    const outcome = await run(recordDecision, decision(key, 'abandon', order.fingerprint));
    assert.deepEqual(outcome, { orderLanded: false });
    assert.equal(tables.compensationOf(key)?.decision, 'abandon');
    assert.equal(tables.compensationOf(key)?.decidedBy, 'operator@example.com');
    assert.deepEqual(tables.statusChanges.at(-1), {
      idempotencyKey: key,
      status: 'COMPENSATED',
      details: {},
      inTransaction: true,
    });
  });

  it('never abandons an order that landed meanwhile: nothing recorded, the key left as it is', async () => {
    const { recordDecision, tables, key, order } = await awaitingDecision();
    tables.land(order, order.fingerprint);
    const changes = tables.statusChanges.length;
    const outcome = await run(recordDecision, decision(key, 'abandon', order.fingerprint));
    assert.deepEqual(outcome, { orderLanded: true });
    assert.equal(tables.compensationOf(key)?.decision, null);
    assert.equal(tables.statusChanges.length, changes);

    // Without a fingerprint (an order still in its form), the key's record names what was mapped.
    tables.records.set(key, { status: 'COMPENSATING', fingerprint: order.fingerprint });
    assert.deepEqual(await run(recordDecision, decision(key, 'abandon')), { orderLanded: true });
    assert.equal(tables.compensationOf(key)?.decision, null);
  });

  it("records a resubmit decision without touching the key's status", async () => {
    const { recordDecision, tables, key } = await awaitingDecision();
    const changes = tables.statusChanges.length;
    assert.deepEqual(await run(recordDecision, decision(key, 'resubmit')), { orderLanded: false });
    assert.equal(tables.compensationOf(key)?.decision, 'resubmit');
    assert.equal(tables.statusChanges.length, changes);
  });
});

describe('resubmitting an order', () => {
  it('starts the new run with the same key only once the failed run closed, then records the decision and moves the key to RECEIVED', async () => {
    const { resubmitOrder, reconcileFailedWrite, tables, temporal } = compensationSteps();
    const order = testOrder();
    const key = order.idempotencyKey;
    await run(reconcileFailedWrite, failure(order));
    const failedRun = temporal.holdFailedRunOpen();

    const resubmitted = run(resubmitOrder, { order, orderRunId: FAILED_RUN, decidedBy: 'operator' });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(temporal.awaited, [`${orderWorkflowIdFor(key)} ${FAILED_RUN}`]);
    assert.deepEqual(temporal.started, [], 'nothing started while the failed run is open');
    assert.equal(tables.compensationOf(key)?.decision, null);

    failedRun.close();
    assert.equal(await resubmitted, orderWorkflowIdFor(key));
    // The same order under the same key; an input from before the local retry threshold gets the
    // default one, so the new run writes its order as a local activity.
    const startedWith = {
      ...order,
      policy: {
        ...order.policy,
        localRetryThresholdMs: order.policy.localRetryThresholdMs ?? DEFAULT_LOCAL_RETRY_THRESHOLD_MS,
      },
    };
    assert.deepEqual(temporal.started, [
      {
        workflowType: 'orderWorkflow',
        workflowId: orderWorkflowIdFor(key),
        args: [startedWith],
        reusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      },
    ]);
    assert.equal(tables.compensationOf(key)?.decision, 'resubmit');
    assert.equal(tables.compensationOf(key)?.decidedBy, 'operator');
    assert.deepEqual(tables.statusChanges.at(-1), {
      idempotencyKey: key,
      status: 'RECEIVED',
      details: { lastError: null },
      inTransaction: false,
    });
  });

  it('leaves the key undecided when the new run could not be started, so compensation run again still waits for a decision', async () => {
    const { resubmitOrder, reconcileFailedWrite, tables, temporal } = compensationSteps();
    const order = testOrder();
    await run(reconcileFailedWrite, failure(order));
    const changes = tables.statusChanges.length;
    const unreachable = new Error('14 UNAVAILABLE: No connection established');
    temporal.nextStartFails = unreachable;
    const thrown = await thrownBy(resubmitOrder, { order, orderRunId: FAILED_RUN, decidedBy: 'operator' });
    assert.equal(thrown, unreachable);
    assert.equal(tables.compensationOf(order.idempotencyKey)?.decision, null);
    assert.equal(tables.statusChanges.length, changes);
  });
});

describe('ending compensation without a decision', () => {
  it('records FAILED with a reason told as compensation-ended, and says whether the order had landed', async () => {
    const { markCompensationFailed, tables } = compensationSteps();
    const key = testOrder().idempotencyKey;
    await run(markCompensationFailed, {
      idempotencyKey: key,
      orderRunId: FAILED_RUN,
      reason: 'the decision window ran out',
    });
    await run(markCompensationFailed, {
      idempotencyKey: key,
      orderRunId: FAILED_RUN,
      reason: 'delivery keeps failing',
      landed: true,
    });
    assert.deepEqual(
      tables.statusChanges.map(({ status, details, inTransaction }) => ({ status, details, inTransaction })),
      [
        {
          status: 'FAILED',
          details: { lastError: 'CompensationEnded: the decision window ran out', orderLanded: false },
          inTransaction: false,
        },
        {
          status: 'FAILED',
          details: { lastError: 'CompensationEnded: delivery keeps failing', orderLanded: true },
          inTransaction: false,
        },
      ],
    );
    assert.equal(publicErrorOf(tables.statusChanges[0]?.details.lastError ?? '').code, 'compensation-ended');
  });
});
