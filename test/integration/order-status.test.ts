// The one status writer against the real PostgreSQL: every change the transition table lists moves
// a record, every other pair is refused — the row as it was, a log line naming the key and both
// statuses — and the same checks fail against the writer with its guard removed.
import assert, { AssertionError } from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import {
  canTransition,
  ORDER_STATUSES,
  type OrderStatus,
  STATUS_TRANSITIONS,
  type TransitionFacts,
} from '../../domain/order-status.js';
import { claimRecord } from '../../services/db/idempotency-records.js';
import { findOrderByKey, insertOrderWithReservation } from '../../services/db/order-repository.js';
import {
  type StatusDetails,
  type Transition,
  transitionFrom,
  type TransitionLog,
  transitionStatus,
} from '../../services/db/order-status-writer.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { statementsFor } from '../../services/db/stores/store.js';
import { createSku, stackEnv, uniqueApprovalNo } from '../../tools/harness/service.js';

type Writer = (key: string, to: OrderStatus, details: StatusDetails, log: TransitionLog) => Promise<Transition>;

interface LogLine {
  message: string;
  idempotencyKey?: unknown;
  from?: unknown;
  to?: unknown;
}

function capturingLog(): TransitionLog & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  return { lines, info: (message, attributes) => lines.push({ message, ...attributes }) };
}

describe('the guarded status writer', () => {
  let prisma: PrismaClient;
  before(() => {
    prisma = createPrismaClient({ databaseUrl: stackEnv().databaseUrl, poolSize: 4, statementTimeoutMs: 5_000 });
  });
  after(() => prisma.$disconnect());

  const guarded: Writer = (key, to, details, log) => transitionStatus(prisma, key, to, details, log);

  /** A claimed key put in `status`, as a workflow left it an hour ago. */
  async function recordIn(status: OrderStatus): Promise<string> {
    const approvalNo = uniqueApprovalNo('ST');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    await claimRecord(prisma, {
      idempotencyKey: key,
      approvalNo,
      operation: 'MAIN',
      fingerprint: 'a'.repeat(64),
      request: {
        approvedAt: '2026-11-30T08:00:00Z',
        order: { customerId: 'C', currency: 'CNY', lines: [] },
        totalAmount: '0',
      },
      source: 'webhook',
      workflowId: `order-${key}`,
    });
    await prisma.$executeRaw`
      UPDATE idempotency_record SET status = ${status}, last_error = 'before', attempts = 1,
        workflow_started_at = now() - interval '1 hour', updated_at = now() - interval '1 hour'
      WHERE idempotent_key = ${key}`;
    return key;
  }

  const rowOf = (key: string) => prisma.idempotencyRecord.findUniqueOrThrow({ where: { idempotentKey: key } });

  /** Every pair the table does not list (given no facts) is refused: row unchanged, one log line. */
  async function checkRefusals(write: Writer, pairs: [OrderStatus, OrderStatus][]): Promise<void> {
    for (const [from, to] of pairs) {
      const key = await recordIn(from);
      const before = await rowOf(key);
      const log = capturingLog();
      const result = await write(key, to, { lastError: 'after' }, log);
      assert.deepEqual([result.applied, result.from], [false, from], `${from}->${to} is refused`);
      assert.deepEqual(await rowOf(key), before, `${from}->${to} leaves the row as it was`);
      assert.deepEqual(
        log.lines.map(({ idempotencyKey, from: logged, to: asked }) => ({ idempotencyKey, from: logged, to: asked })),
        [{ idempotencyKey: key, from, to }],
        `${from}->${to} is logged once, naming the key and both statuses`,
      );
    }
  }

  const refusedPairs = ORDER_STATUSES.flatMap((from) =>
    ORDER_STATUSES.filter((to) => !canTransition(from, to)).map((to): [OrderStatus, OrderStatus] => [from, to]),
  );

  it('applies every transition the table lists, with its details', async () => {
    assert.equal(STATUS_TRANSITIONS.length + refusedPairs.length, 7 * 7 + 1, 'one pair needs a stated fact');
    for (const row of STATUS_TRANSITIONS) {
      const key = await recordIn(row.from);
      const before = await rowOf(key);
      const facts: TransitionFacts = row.onlyIf ? { [row.onlyIf]: true } : {};
      const log = capturingLog();
      const result = await guarded(key, row.to, { ...facts, lastError: 'after', attempts: 3 }, log);
      assert.deepEqual([result.applied, result.from], [true, row.from], `${row.from}->${row.to} applies`);
      const moved = await rowOf(key);
      assert.deepEqual(
        [moved.status, moved.lastError, moved.attempts, moved.createdAt],
        [row.to, 'after', 3, before.createdAt],
        `${row.from}->${row.to}`,
      );
      assert.ok(moved.updatedAt > before.updatedAt, `${row.from}->${row.to} moves updated_at`);
      assert.deepEqual(log.lines, [], `${row.from}->${row.to} logs no refusal`);
    }
  });

  it('refuses every pair the table does not list, and leaves the row as it was', async () => {
    assert.ok(
      refusedPairs.some(([from, to]) => from === 'SUBMITTED' && to === 'FAILED'),
      'without the fact',
    );
    await checkRefusals(guarded, refusedPairs);
  });

  it('the same checks fail against the writer with its guard removed', async () => {
    // The store's own statement with the allowed predecessors widened to every status.
    const unguarded: Writer = async (key, to, details, log) => {
      const row = await statementsFor(prisma).changeStatus(prisma, key, { ...details, status: to }, [
        ...ORDER_STATUSES,
      ]);
      return transitionFrom(row, key, to, log);
    };
    await assert.rejects(
      checkRefusals(unguarded, [
        ['DELIVERED', 'SUBMITTED'],
        ['COMPENSATED', 'COMPENSATING'],
      ]),
      (error: unknown) =>
        error instanceof AssertionError && error.message.startsWith('DELIVERED->SUBMITTED is refused'),
    );
  });

  it('marks the workflow started on every call, refused or not, and answers for a key without a record', async () => {
    const key = await recordIn('DELIVERED');
    await prisma.$executeRaw`UPDATE idempotency_record SET workflow_started_at = NULL WHERE idempotent_key = ${key}`;
    const refused = await guarded(key, 'SUBMITTED', {}, capturingLog());
    assert.equal(refused.applied, false);
    assert.ok((await rowOf(key)).workflowStartedAt, 'a call comes from a running workflow');

    const log = capturingLog();
    const missing = await guarded(`${key}-gone`, 'DELIVERED', {}, log);
    assert.deepEqual([missing.applied, missing.from, missing.acceptedAt], [false, undefined, undefined]);
    assert.deepEqual(
      log.lines.map((line) => [line.idempotencyKey, line.from, line.to]),
      [[`${key}-gone`, undefined, 'DELIVERED']],
    );
  });

  it('judges a change against the status a concurrent transaction committed, not the one it first saw', async () => {
    // A resubmit (COMPENSATING -> RECEIVED) while the new run's write holds the row to make it SUBMITTED.
    const key = await recordIn('COMPENSATING');
    let rowHeld = () => {};
    const holding = new Promise<void>((resolve) => (rowHeld = resolve));
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const write = prisma.$transaction(
      async (tx) => {
        await tx.$executeRaw`UPDATE idempotency_record SET status = 'SUBMITTED' WHERE idempotent_key = ${key}`;
        rowHeld();
        await released;
      },
      { timeout: 30_000 },
    );
    await holding;
    const resubmit = guarded(key, 'RECEIVED', { lastError: null }, capturingLog());
    // Polled until the change is seen waiting, in this file's own database (others run beside it).
    for (const deadline = Date.now() + 60_000; ; ) {
      const [row] = await prisma.$queryRaw<{ waiting: number }[]>`
        SELECT count(*)::int AS waiting FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND datname = current_database() AND query LIKE '%AS before%'`;
      if ((row?.waiting ?? 0) > 0) break;
      assert.ok(Date.now() < deadline, 'the change waits for the row');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    release();
    await write;
    assert.deepEqual(await resubmit.then(({ applied, from }) => [applied, from]), [false, 'SUBMITTED']);
    assert.equal((await rowOf(key)).status, 'SUBMITTED', 'the written order is not dragged back');
  });

  it("guards the change made inside the order write's statement too: an abandoned key stays COMPENSATED", async () => {
    const key = await recordIn('COMPENSATED');
    const sku = await createSku(prisma, 1);
    const { recordChange } = await prisma.$transaction((tx) =>
      insertOrderWithReservation(
        tx,
        {
          idempotencyKey: key,
          approvalNo: key.split(':')[1] ?? key,
          operation: 'MAIN',
          approvedAt: '2026-11-30T08:00:00Z',
          fingerprint: 'a'.repeat(64),
          order: { customerId: 'C', currency: 'CNY', lines: [{ sku, quantity: 1, unitPrice: '1.0000' }] },
          totalAmount: '1.0000',
          writtenAttempt: 1,
        },
        { status: 'SUBMITTED', attempts: 1, lastError: null },
      ),
    );
    assert.ok(
      await findOrderByKey(prisma, key),
      'the order is written: the unique key judges the write, the table only the status',
    );
    const log = capturingLog();
    assert.deepEqual(transitionFrom(recordChange, key, 'SUBMITTED', log).applied, false);
    assert.deepEqual(
      log.lines.map((line) => [line.from, line.to]),
      [['COMPENSATED', 'SUBMITTED']],
    );
    assert.deepEqual([(await rowOf(key)).status, (await rowOf(key)).lastError], ['COMPENSATED', 'before']);
  });
});
