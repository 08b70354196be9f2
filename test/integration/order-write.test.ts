// The order write on its own, against the real PostgreSQL: header, lines and the stock reservation
// of every SKU land together or not at all, and concurrent orders sharing SKUs do not deadlock.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InsufficientStockError, UnknownSkuError } from '../../domain/errors.js';
import type { CanonicalLine } from '../../domain/canonical-order.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { claimRecord, findRecord } from '../../services/db/idempotency-records.js';
import type { StatusChange } from '../../services/db/order-status-writer.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import {
  findOrderByKey,
  insertOrderWithReservation,
  isIdempotencyKeyViolation,
  type NewOrder,
} from '../../services/db/order-repository.js';
import { createSku, stackEnv, stockOf, uniqueApprovalNo } from '../../tools/harness/service.js';

function newOrder(lines: CanonicalLine[]): NewOrder {
  const approvalNo = uniqueApprovalNo('W');
  return {
    idempotencyKey: idempotencyKeyFor(approvalNo, 'MAIN'),
    approvalNo,
    operation: 'MAIN',
    approvedAt: '2026-11-30T08:00:00Z',
    fingerprint: 'f'.repeat(64),
    order: { customerId: 'CUST-W', currency: 'CNY', lines },
    totalAmount: '0.0000',
    writtenAttempt: 1,
  };
}

describe('the order write (one statement in one transaction)', () => {
  let prisma: PrismaClient;

  before(() => {
    prisma = createPrismaClient({ databaseUrl: stackEnv().databaseUrl, poolSize: 10, statementTimeoutMs: 5_000 });
  });
  after(() => prisma.$disconnect());

  const write = (order: NewOrder, recordChange?: StatusChange) =>
    prisma.$transaction((tx) => insertOrderWithReservation(tx, order, recordChange));

  it('writes the header, every line in order and one reservation per SKU (repeated SKUs summed)', async () => {
    const [a, b] = [await createSku(prisma, 100), await createSku(prisma, 100)];
    const order = newOrder([
      { sku: a, quantity: 2, unitPrice: '1.5000' },
      { sku: b, quantity: 3, unitPrice: '2.0000' },
      { sku: a, quantity: 4, unitPrice: '0.2500' },
    ]);
    const { order: written, acceptedAt } = await write(order);

    assert.equal(acceptedAt, undefined, 'no record change was asked for');
    assert.match(written.orderNo, /^SO-\d{8}-\d{8}$/);
    assert.deepEqual(await findOrderByKey(prisma, order.idempotencyKey), written);
    const lines = await prisma.orderLine.findMany({
      where: { orderId: BigInt(written.orderId) },
      orderBy: { lineNo: 'asc' },
    });
    assert.deepEqual(
      lines.map((line) => [line.lineNo, line.sku, line.quantity, line.unitPrice.toFixed(4)]),
      [
        [1, a, 2, '1.5000'],
        [2, b, 3, '2.0000'],
        [3, a, 4, '0.2500'],
      ],
    );
    const reservations = await prisma.stockReservation.findMany({ where: { idempotentKey: order.idempotencyKey } });
    assert.deepEqual(Object.fromEntries(reservations.map((reservation) => [reservation.sku, reservation.quantity])), {
      [a]: 6,
      [b]: 3,
    });
    assert.deepEqual(await stockOf(prisma, a), { onHand: 100, reserved: 6 });
    assert.deepEqual(await stockOf(prisma, b), { onHand: 100, reserved: 3 });
  });

  it('a second write of the key is the idempotency key violation, and changes nothing', async () => {
    const sku = await createSku(prisma, 10);
    const order = newOrder([{ sku, quantity: 1, unitPrice: '1.0000' }]);
    await write(order);
    const error = await write({ ...order, writtenAttempt: 2 }).catch((caught: unknown) => caught);
    assert.ok(isIdempotencyKeyViolation(error), `expected the key violation, got ${String(error)}`);
    assert.equal((await findOrderByKey(prisma, order.idempotencyKey))?.writtenAttempt, 1);
    assert.deepEqual(await stockOf(prisma, sku), { onHand: 10, reserved: 1 });
  });

  it('a short or unknown SKU names itself and leaves no header, line or reservation behind', async () => {
    const plenty = await createSku(prisma, 100);
    const scarce = await createSku(prisma, 2);
    const cases = [
      { sku: scarce, expected: new InsufficientStockError(scarce, 3, 2) },
      { sku: 'SKU-T-DOES-NOT-EXIST', expected: new UnknownSkuError('SKU-T-DOES-NOT-EXIST') },
    ];
    for (const { sku, expected } of cases) {
      const order = newOrder([
        { sku: plenty, quantity: 5, unitPrice: '1.0000' },
        { sku, quantity: 3, unitPrice: '1.0000' },
      ]);
      await assert.rejects(write(order), (error: Error) => {
        assert.equal(error.constructor, expected.constructor);
        assert.equal(error.message, expected.message);
        return true;
      });
      assert.equal(await findOrderByKey(prisma, order.idempotencyKey), undefined);
      assert.equal(await prisma.stockReservation.count({ where: { idempotentKey: order.idempotencyKey } }), 0);
    }
    assert.deepEqual(await stockOf(prisma, plenty), { onHand: 100, reserved: 0 });
    assert.deepEqual(await stockOf(prisma, scarce), { onHand: 2, reserved: 0 });
  });

  it('refuses to run outside a transaction, where a shortfall would be found after the commit', async () => {
    const sku = await createSku(prisma, 1);
    const order = newOrder([{ sku, quantity: 1, unitPrice: '1.0000' }]);
    await assert.rejects(insertOrderWithReservation(prisma, order), /must run inside a transaction/);
    assert.equal(await findOrderByKey(prisma, order.idempotencyKey), undefined);
    assert.deepEqual(await stockOf(prisma, sku), { onHand: 1, reserved: 0 });
  });

  it("moves the key's record in the same statement, and a failed write leaves the record as it was", async () => {
    const sku = await createSku(prisma, 5);
    const claimOf = async (order: NewOrder) => {
      const claim = await claimRecord(prisma, {
        idempotencyKey: order.idempotencyKey,
        approvalNo: order.approvalNo,
        operation: order.operation,
        fingerprint: order.fingerprint,
        request: { approvedAt: order.approvedAt, order: order.order, totalAmount: order.totalAmount },
        source: 'webhook',
        workflowId: `order-${order.idempotencyKey}`,
      });
      assert.ok(claim.record, 'a new key is claimed');
      return claim.record;
    };
    const submitted = { status: 'SUBMITTED', attempts: 2, lastError: null } as const;

    const fits = newOrder([{ sku, quantity: 5, unitPrice: '1.0000' }]);
    const claimed = await claimOf(fits);
    const { acceptedAt } = await write(fits, submitted);
    assert.deepEqual(acceptedAt, claimed.createdAt, 'the write reports when the key was accepted');
    const after = await findRecord(prisma, fits.idempotencyKey);
    assert.deepEqual([after?.status, after?.attempts], ['SUBMITTED', 2]);

    const tooMuch = newOrder([{ sku, quantity: 1, unitPrice: '1.0000' }]);
    await claimOf(tooMuch);
    await assert.rejects(write(tooMuch, submitted), InsufficientStockError);
    const untouched = await findRecord(prisma, tooMuch.idempotencyKey);
    assert.deepEqual([untouched?.status, untouched?.attempts], ['RECEIVED', 0]);
  });

  it('orders naming shared SKUs in opposite orders do not deadlock: rows are locked in SKU order', async () => {
    const [first, second] = [await createSku(prisma, 100), await createSku(prisma, 100)].sort() as [string, string];
    const waitingWrites = async () => {
      const [row] = await prisma.$queryRaw<{ waiting: number }[]>`
        SELECT count(*)::int AS waiting FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND query LIKE '%WITH header AS%'`;
      return row?.waiting ?? 0;
    };
    const waitFor = async (count: number) => {
      for (let tries = 0; (await waitingWrites()) < count; tries += 1) {
        assert.ok(tries < 200, `expected ${count} writes waiting for a row lock`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    };
    // Another transaction holds the first SKU. Order one ([first, second]) waits for it; order two
    // names the SKUs the other way round. Locking in line order, it would take `second` and wait
    // for `first` — and once released, order one would wait for `second`: a deadlock, one aborted.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const blocker = prisma.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT sku FROM inventory WHERE sku = ${first} FOR UPDATE`;
        await held;
      },
      { timeout: 30_000 },
    );
    const line = (sku: string) => ({ sku, quantity: 1, unitPrice: '1.0000' });
    const one = write(newOrder([line(first), line(second)]));
    await waitFor(1);
    const two = write(newOrder([line(second), line(first)]));
    await waitFor(2);
    release();
    await blocker;
    const outcomes = await Promise.allSettled([one, two]);
    assert.deepEqual(
      outcomes.map((outcome) => (outcome.status === 'rejected' ? String(outcome.reason).slice(-160) : 'committed')),
      ['committed', 'committed'],
    );
    assert.deepEqual(await stockOf(prisma, first), { onHand: 100, reserved: 2 });
    assert.deepEqual(await stockOf(prisma, second), { onHand: 100, reserved: 2 });
  });
});
