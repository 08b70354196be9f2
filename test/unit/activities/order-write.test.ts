// The order write in a mocked activity context, its database steps stood in by an in-memory order
// table: what a committed write returns, that a retry after a lost commit answer returns the order
// already written instead of writing it again, and which failure each kind of database error ends
// in (retried or not). The statements themselves run against PostgreSQL and MySQL in
// test/integration/exactly-once.test.ts and test/integration/local-write.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type LogEntry } from '@temporalio/worker';
import {
  createOrderWriteActivities,
  type orderWriteDatabase,
  transactionTimers,
} from '../../../activities/order-write.js';
import { InsufficientStockError, UnknownSkuError } from '../../../domain/errors.js';
import type { StoredOrder } from '../../../services/db/order-repository.js';
import type { StatusChange } from '../../../services/db/order-status-writer.js';
import type { PrismaClient, Tx } from '../../../services/db/prisma-client.js';
import { noProductMetrics } from '../../../services/metrics/product-metrics.js';
import type { DeliveryTarget, OrderWorkflowInput, OrderWriteResult } from '../../../workflows/definitions.js';
import { testOrder, testPolicy } from '../../../tools/harness/workflow-tests.js';

/** When the edge first accepted every key of this file. */
const ACCEPTED_AT = new Date('2025-03-01T09:30:00.500Z');

/** The transaction the write runs its insert in; any step handed it ran inside that transaction. */
const WRITE_TRANSACTION = { transaction: 'the write' } as unknown as Tx;

/** How Prisma's pg adapter wraps a driver error: the SQLSTATE or kind sits in meta.driverAdapterError.cause. */
const prismaWrapped = (cause: Record<string, unknown>, code = 'P2010') =>
  Object.assign(new Error('Invalid `prisma.$executeRaw()` invocation'), {
    name: 'PrismaClientKnownRequestError',
    code,
    meta: { driverAdapterError: Object.assign(new Error('adapter error'), { name: 'DriverAdapterError', cause }) },
  });
const postgresError = (code: string) => prismaWrapped({ kind: 'postgres', code, message: `postgres error ${code}` });
/** The unique violation of an index: `uk_order_idempotent` is the key already written. */
const uniqueViolation = (index: string) => prismaWrapped({ kind: 'UniqueConstraintViolation', constraint: { index } });

/** Answers as a database call does: on a later turn, with what `work` returns or throws. */
const later = <T>(work: () => T): Promise<T> => Promise.resolve().then(work);

/**
 * The order table, the keys' status changes and the operator alerts as the write's database steps
 * see them. A second insert of a key fails on its unique index, as the real one does.
 */
class OrderTables {
  readonly orders = new Map<string, StoredOrder>();
  /** Every status change asked for, and whether it ran inside the write's transaction. */
  readonly statusChanges: { idempotencyKey: string; change: StatusChange; inTransaction: boolean }[] = [];
  /** Reads of a written order, and whether each ran inside the write's transaction (aborted on PostgreSQL). */
  readonly reads: { inTransaction: boolean }[] = [];
  /** Keys whose approval its OA revoked. */
  readonly revoked = new Set<string>();
  readonly alerts = new Set<string>();
  /** The transaction options each write asked for. */
  readonly transactions: unknown[] = [];
  /** Where the keys came from: `webhook`, `mcp`, or an OA vendor. */
  source = 'webhook';
  /** The failure the next insert ends in: before anything is kept, or after its commit (the answer lost). */
  nextInsertFails: { error: Error; afterCommit?: boolean } | undefined;
  /** The failure the next read of a written order ends in. */
  nextReadFails: Error | undefined;
  private nextOrderId = 1001;

  readonly prisma = {
    $transaction: async (work: (tx: Tx) => Promise<unknown>, options: unknown) => {
      this.transactions.push(options);
      return work(WRITE_TRANSACTION);
    },
  } as unknown as PrismaClient;

  readonly database: typeof orderWriteDatabase = {
    insertOrderWithReservation: (tx, order, recordChange) =>
      later(() => {
        const fault = this.nextInsertFails;
        this.nextInsertFails = undefined;
        if (fault && !fault.afterCommit) throw fault.error;
        if (this.orders.has(order.idempotencyKey)) throw uniqueViolation('uk_order_idempotent');
        const stored: StoredOrder = {
          orderId: String(this.nextOrderId++),
          orderNo: `SO-${order.approvalNo}`,
          idempotencyKey: order.idempotencyKey,
          fingerprint: order.fingerprint,
          totalAmount: order.totalAmount,
          writtenAttempt: order.writtenAttempt,
          createdAt: new Date('2025-03-01T09:30:01.000Z'),
          deliveryTargets: [...(order.deliveryTargets ?? [])],
        };
        this.orders.set(order.idempotencyKey, stored);
        if (recordChange) {
          this.statusChanges.push({
            idempotencyKey: order.idempotencyKey,
            change: recordChange,
            inTransaction: tx === WRITE_TRANSACTION,
          });
        }
        if (fault) throw fault.error;
        const row = recordChange && {
          from_status: 'RECEIVED',
          applied: true,
          created_at: ACCEPTED_AT,
          source: this.source,
        };
        return { order: stored, acceptedAt: row?.created_at, recordChange: row };
      }),
    findOrderByKey: (db, idempotencyKey) =>
      later(() => {
        this.reads.push({ inTransaction: db === WRITE_TRANSACTION });
        const fault = this.nextReadFails;
        this.nextReadFails = undefined;
        if (fault) throw fault;
        return this.orders.get(idempotencyKey);
      }),
    transitionStatus: (db, idempotencyKey, status, details) =>
      later(() => {
        this.statusChanges.push({
          idempotencyKey,
          change: { ...details, status },
          inTransaction: db === WRITE_TRANSACTION,
        });
        return { applied: true as const, from: 'SUBMITTED' as const, acceptedAt: ACCEPTED_AT };
      }),
    recordRevocationAlert: (_db, idempotencyKey) =>
      later(() => {
        if (!this.revoked.has(idempotencyKey) || !this.orders.has(idempotencyKey) || this.alerts.has(idempotencyKey)) {
          return undefined;
        }
        this.alerts.add(idempotencyKey);
        return {
          change: 'new',
          alertId: String(this.alerts.size),
          kind: 'REVOKED_AFTER_ORDER',
          orderCount: 1,
          detail: `approval of ${idempotencyKey} revoked after its order was written`,
        };
      }),
  };
}

/** What the write told the metrics. */
interface Counted {
  written: (number | undefined)[];
  absorbed: string[];
  alerts: string[];
}

/** The write activity of a worker delivering to `deliveryTargets`, on `tables`. */
function writeActivity(tables: OrderTables, deliveryTargets: DeliveryTarget[] = ['http']) {
  const counted: Counted = { written: [], absorbed: [], alerts: [] };
  const metrics = {
    ...noProductMetrics(),
    orderWritten: (latencyMs: number | undefined) => counted.written.push(latencyMs),
    duplicateAbsorbed: (at: string) => counted.absorbed.push(at),
    alertRecorded: (kind: string, change: string) => counted.alerts.push(`${kind} ${change}`),
  };
  const { writeOrder } = createOrderWriteActivities({
    prisma: tables.prisma,
    metrics,
    deliveryTargets,
    database: tables.database,
  });
  return { writeOrder, counted };
}

const logged: LogEntry[] = [];
const activityContext = (attempt: number) =>
  new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('TRACE', (entry) => logged.push(entry)) });

/** One attempt of `writeOrder` that must succeed; resolves with what it returned. */
const written = (
  writeOrder: (order: OrderWorkflowInput) => Promise<OrderWriteResult>,
  order: OrderWorkflowInput,
  attempt: number,
) => activityContext(attempt).run<[OrderWorkflowInput], OrderWriteResult, typeof writeOrder>(writeOrder, order);

/** One attempt of `writeOrder` that must fail; resolves with the ApplicationFailure it ended in. */
async function failedWrite(
  writeOrder: ReturnType<typeof writeActivity>['writeOrder'],
  order: OrderWorkflowInput,
  attempt = 1,
) {
  const failure = await activityContext(attempt)
    .run(writeOrder, order)
    .then(
      () => assert.fail('the write must fail'),
      (error: unknown) => error,
    );
  assert.ok(failure instanceof ApplicationFailure, `an ApplicationFailure, not ${String(failure)}`);
  return failure;
}

const attemptOf = (failure: ApplicationFailure) => (failure.details?.[0] as { attempt: number }).attempt;

describe('the order write', () => {
  it('commits the order with its delivery targets and the move to SUBMITTED in one transaction, timed inside the attempt, and returns it as written by this attempt', async () => {
    const tables = new OrderTables();
    const { writeOrder, counted } = writeActivity(tables, ['http', 'broker']);
    const order = testOrder({ policy: testPolicy({ startToCloseMs: 5_000 }) });
    const result = await written(writeOrder, order, 2);
    const stored = tables.orders.get(order.idempotencyKey);
    assert.ok(stored);
    assert.deepEqual(result, {
      orderId: stored.orderId,
      orderNo: stored.orderNo,
      totalAmount: order.totalAmount,
      writtenAttempt: 2,
      attempt: 2,
      alreadyWritten: false,
      createdAt: '2025-03-01T09:30:01.000Z',
      deliveryConfigured: true,
      deliveryTargets: ['http', 'broker'],
    });
    assert.deepEqual(stored.deliveryTargets, ['http', 'broker']);
    assert.equal(stored.writtenAttempt, 2);
    assert.deepEqual(tables.statusChanges, [
      {
        idempotencyKey: order.idempotencyKey,
        change: { status: 'SUBMITTED', attempts: 2, lastError: null },
        inTransaction: true,
      },
    ]);
    assert.deepEqual(tables.transactions, [transactionTimers(5_000)]);
    assert.equal(counted.written.length, 1);
    assert.ok((counted.written[0] ?? -1) >= 0, "the latency from the key's acceptance");
    assert.deepEqual(counted.absorbed, []);
  });

  it('tells the delivery there is nothing to deliver when the writing worker has no downstream', async () => {
    const tables = new OrderTables();
    const { writeOrder } = writeActivity(tables, []);
    const result = await written(writeOrder, testOrder(), 1);
    assert.equal(result.deliveryConfigured, false);
    assert.deepEqual(result.deliveryTargets, []);
  });

  it('answers the retry after a commit whose answer was lost with the order already written, written once and counted once', async () => {
    const tables = new OrderTables();
    const { writeOrder, counted } = writeActivity(tables);
    const order = testOrder();
    tables.nextInsertFails = { error: prismaWrapped({ kind: 'ConnectionClosed' }), afterCommit: true };
    const lost = await failedWrite(writeOrder, order, 1);
    assert.equal(lost.type, 'ConnectionLost');
    assert.equal(lost.nonRetryable, false);
    assert.equal(attemptOf(lost), 1);

    const retried = await written(writeOrder, order, 2);
    const stored = tables.orders.get(order.idempotencyKey);
    assert.ok(stored);
    assert.equal(tables.orders.size, 1);
    assert.equal(retried.alreadyWritten, true);
    assert.equal(retried.orderId, stored.orderId);
    assert.equal(retried.orderNo, stored.orderNo);
    assert.equal(retried.writtenAttempt, 1, 'the attempt that committed it');
    assert.equal(retried.attempt, 2);
    // The winner is read after the aborted transaction, and the key's record counts the run again.
    assert.deepEqual(tables.reads, [{ inTransaction: false }]);
    assert.deepEqual(tables.statusChanges.at(-1), {
      idempotencyKey: order.idempotencyKey,
      change: { status: 'SUBMITTED', attempts: 2, ranAgain: true },
      inTransaction: false,
    });
    assert.deepEqual(counted.written, [], 'the lost attempt never reached its count; the retry wrote nothing new');
    assert.deepEqual(counted.absorbed, ['unique_index']);

    const third = await written(writeOrder, order, 3);
    assert.equal(third.orderId, stored.orderId);
    assert.equal(tables.orders.size, 1);
    assert.deepEqual(counted.absorbed, ['unique_index', 'unique_index']);
  });

  it('answers a retry with the delivery targets its order was written with, not those of the worker it runs on', async () => {
    const tables = new OrderTables();
    const order = testOrder();
    await written(writeActivity(tables, ['http']).writeOrder, order, 1);
    const elsewhere = await written(writeActivity(tables, ['broker']).writeOrder, order, 2);
    assert.deepEqual(elsewhere.deliveryTargets, ['http']);
    assert.equal(elsewhere.deliveryConfigured, true);

    // An order written before targets were recorded: the retry's worker decides.
    const older = testOrder();
    await written(writeActivity(tables, []).writeOrder, older, 1);
    const again = await written(writeActivity(tables, ['broker']).writeOrder, older, 2);
    assert.deepEqual(again.deliveryTargets, ['broker']);
    assert.equal(again.deliveryConfigured, true);
  });

  it('refuses a key already written for a different order as IdempotencyKeyConflict, never retried, and leaves its record alone', async () => {
    const tables = new OrderTables();
    const { writeOrder, counted } = writeActivity(tables);
    const first = testOrder();
    await written(writeOrder, first, 1);
    const changesBefore = tables.statusChanges.length;
    const other = { ...first, fingerprint: 'e'.repeat(64), totalAmount: '30.0000' };
    const failure = await failedWrite(writeOrder, other, 1);
    assert.equal(failure.type, 'IdempotencyKeyConflict');
    assert.equal(failure.nonRetryable, true);
    assert.equal(tables.orders.get(first.idempotencyKey)?.fingerprint, first.fingerprint);
    assert.equal(tables.statusChanges.length, changesBefore);
    assert.deepEqual(counted.absorbed, []);
  });

  it('raises each kind of database failure as the class the table gives it: retried after a jittered backoff, or not at all', async () => {
    const policy = testPolicy({ initialIntervalMs: 100, maxIntervalMs: 2_000 });
    const cases: [what: string, error: Error, type: string, retryable: boolean][] = [
      [
        'connection refused',
        Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
        'ConnectionLost',
        true,
      ],
      [
        'database not reachable (P1001)',
        Object.assign(new Error("Can't reach database server"), { code: 'P1001' }),
        'ConnectionLost',
        true,
      ],
      ['statement timeout (57014)', postgresError('57014'), 'StatementTimeout', true],
      ['lock timeout (55P03)', postgresError('55P03'), 'LockTimeout', true],
      ['deadlock (40P01)', postgresError('40P01'), 'Deadlock', true],
      [
        'write conflict (P2034)',
        Object.assign(new Error('write conflict'), { code: 'P2034' }),
        'SerializationFailure',
        true,
      ],
      ['no connection free (P2024)', Object.assign(new Error('pool timeout'), { code: 'P2024' }), 'DatabaseBusy', true],
      ['password refused (28P01)', postgresError('28P01'), 'AuthFailed', false],
      ['check constraint (23514)', postgresError('23514'), 'ConstraintViolation', false],
      ['another unique index than the key', uniqueViolation('uk_order_no'), 'ConstraintViolation', false],
      ['value out of range (22003)', postgresError('22003'), 'InvalidData', false],
      ['short stock', new InsufficientStockError('SKU-1', 2, 1), 'InsufficientStock', false],
      ['unknown SKU', new UnknownSkuError('SKU-1'), 'UnknownSku', false],
      ['anything unnamed', new Error('something else'), 'Unclassified', false],
    ];
    for (const [what, error, type, retryable] of cases) {
      const tables = new OrderTables();
      const { writeOrder, counted } = writeActivity(tables);
      tables.nextInsertFails = { error };
      const failure = await failedWrite(writeOrder, testOrder({ policy }), 3);
      assert.equal(failure.type, type, what);
      assert.equal(failure.nonRetryable, !retryable, what);
      assert.equal(attemptOf(failure), 3, what);
      if (retryable) {
        const delay = Number(failure.nextRetryDelay);
        assert.ok(delay > 0 && delay <= 2_000, `${what}: ${delay} ms`);
      } else {
        assert.equal(failure.nextRetryDelay, undefined, what);
      }
      assert.equal(tables.orders.size, 0, `${what}: nothing kept`);
      assert.deepEqual(tables.reads, [], `${what}: not taken for the order already written`);
      assert.deepEqual(counted.written, [], what);
    }
  });

  it('retries when the order already written cannot be read just now, and fails for good when it is not there', async () => {
    const tables = new OrderTables();
    const { writeOrder } = writeActivity(tables);
    const order = testOrder();
    await written(writeOrder, order, 1);
    tables.nextReadFails = postgresError('57P01');
    const lost = await failedWrite(writeOrder, order, 2);
    assert.equal(lost.type, 'ConnectionLost');
    assert.equal(lost.nonRetryable, false);
    assert.equal(attemptOf(lost), 2);

    const vanished = new OrderTables();
    vanished.nextInsertFails = { error: uniqueViolation('uk_order_idempotent') };
    const missing = await failedWrite(writeActivity(vanished).writeOrder, order, 2);
    assert.equal(missing.nonRetryable, true);
    assert.match(missing.message, /reported as existing but not found/);
  });

  it('alerts an operator when the OA revoked the approval of the order it wrote, also when the attempt that committed ended first', async () => {
    const tables = new OrderTables();
    tables.source = 'feishu';
    const { writeOrder, counted } = writeActivity(tables);
    const revokedWhileWritten = testOrder();
    tables.revoked.add(revokedWhileWritten.idempotencyKey);
    await written(writeOrder, revokedWhileWritten, 1);
    assert.deepEqual(counted.alerts, ['REVOKED_AFTER_ORDER new']);

    const committedThenLost = testOrder();
    tables.revoked.add(committedThenLost.idempotencyKey);
    tables.nextInsertFails = { error: postgresError('57P01'), afterCommit: true };
    await failedWrite(writeOrder, committedThenLost, 1);
    assert.deepEqual(counted.alerts, ['REVOKED_AFTER_ORDER new'], 'the lost attempt never looked');
    await written(writeOrder, committedThenLost, 2);
    assert.deepEqual(counted.alerts, ['REVOKED_AFTER_ORDER new', 'REVOKED_AFTER_ORDER new']);
    const warned = logged.filter((entry) => entry.level === 'WARN' && entry.message.includes('REVOKED_AFTER_ORDER'));
    assert.equal(warned.length, 2);

    // A webhook's order has no OA approval to revoke: the commit asks nothing more.
    const webhook = new OrderTables();
    const fromWebhook = testOrder();
    webhook.revoked.add(fromWebhook.idempotencyKey);
    const { writeOrder: webhookWrite, counted: webhookCounted } = writeActivity(webhook);
    await written(webhookWrite, fromWebhook, 1);
    assert.deepEqual(webhookCounted.alerts, []);
  });
});
