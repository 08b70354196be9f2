// One approval → exactly one order, however often it is delivered and however the write's
// answer is lost. Real Temporal dev server, real PostgreSQL, real worker.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import type { OrderResult } from '../../workflows/definitions.js';
import { FaultPlan, startServiceWithFaults } from '../../tools/harness/faults.js';
import {
  approval,
  createSku,
  statusReaches,
  orderCount,
  postApproval,
  stockOf,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

interface Accepted {
  idempotencyKey: string;
  workflowId: string;
  duplicate: boolean;
  status: string;
}

describe('exactly one order per approval', () => {
  const faults = new FaultPlan();
  let service: TestService;

  before(async () => {
    service = await startServiceWithFaults(faults);
  });
  after(() => service.stop());

  it('a webhook delivered five times concurrently creates one order and reserves stock once', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo();
    const body = approval(approvalNo, sku, {
      order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku, quantity: 7, unitPrice: '3.20' }] },
    });
    const responses = await Promise.all(Array.from({ length: 5 }, () => postApproval(service, body)));
    const answers = responses.map((response) => response.json<Accepted>());

    assert.deepEqual(responses.map((response) => response.statusCode).sort(), [200, 200, 200, 200, 202]);
    assert.equal(answers.filter((answer) => !answer.duplicate).length, 1, 'exactly one first delivery');
    assert.equal(new Set(answers.map((answer) => answer.workflowId)).size, 1, 'one workflowId for all');

    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 100, reserved: 7 });

    // A late redelivery, after the order is written, starts nothing either.
    const late = await postApproval(service, body);
    assert.equal(late.statusCode, 200);
    assert.equal(late.json<Accepted>().duplicate, true);
    assert.equal(late.json<Accepted>().status, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 100, reserved: 7 });
  });

  it('a commit whose answer never reaches Temporal is found by the retry, not written again', async () => {
    const sku = await createSku(service.prisma, 50);
    const approvalNo = uniqueApprovalNo('LOST');
    faults.set(approvalNo, { kind: 'lost-response' });
    const response = await postApproval(service, approval(approvalNo, sku));
    assert.equal(response.statusCode, 202);

    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const view = await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 50, reserved: 2 });
    // The row was committed by attempt 1; attempt 2 found it and returned it.
    const row = await service.prisma.orderMain.findUniqueOrThrow({ where: { idempotentKey: key } });
    assert.equal(row.writtenAttempt, 1);
    assert.equal(view.orderNo, row.orderNo);
    const result = (await service.temporal.workflow.getHandle(`order-${key}`).result()) as OrderResult;
    assert.deepEqual(
      { attempt: result.attempt, alreadyWritten: result.alreadyWritten, orderNo: result.orderNo },
      { attempt: 2, alreadyWritten: true, orderNo: row.orderNo },
    );
    // Without DOWNSTREAM_URL there is no delivery step: the order ends SUBMITTED.
    assert.deepEqual([result.deliveryConfigured, result.finalStatus], [false, 'SUBMITTED']);
  });

  it('a database that is down for two attempts is retried, and the third attempt writes the order', async () => {
    const sku = await createSku(service.prisma, 10);
    const approvalNo = uniqueApprovalNo('FLAKY');
    faults.set(approvalNo, { kind: 'database-down', attempts: 2 });
    const response = await postApproval(service, approval(approvalNo, sku));
    assert.equal(response.statusCode, 202);

    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const view = await statusReaches(service, key, 'SUBMITTED');
    assert.equal(view.attempts, 3, 'the attempt count is visible in the status');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 10, reserved: 2 });
  });

  it('MAIN and SUPPLEMENT of one approval are two orders, each written once', async () => {
    const sku = await createSku(service.prisma, 20);
    const approvalNo = uniqueApprovalNo();
    const main = approval(approvalNo, sku);
    const supplement = approval(approvalNo, sku, { operation: 'SUPPLEMENT' });
    const responses = await Promise.all(
      [main, supplement, main, supplement].map((body) => postApproval(service, body)),
    );
    assert.deepEqual(responses.map((response) => response.statusCode).sort(), [200, 200, 202, 202]);

    await statusReaches(service, idempotencyKeyFor(approvalNo, 'MAIN'), 'SUBMITTED');
    await statusReaches(service, idempotencyKeyFor(approvalNo, 'SUPPLEMENT'), 'SUBMITTED');
    assert.equal(await service.prisma.orderMain.count({ where: { approvalNo } }), 2);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 20, reserved: 4 });
  });

  it('a redelivery that spells prices differently or reorders lines is the same order', async () => {
    const [skuA, skuB] = [await createSku(service.prisma, 9), await createSku(service.prisma, 9)];
    const approvalNo = uniqueApprovalNo();
    const first = approval(approvalNo, skuA, {
      order: {
        customerId: 'CUST-1',
        currency: 'CNY',
        lines: [
          { sku: skuA, quantity: 1, unitPrice: '10.0' },
          { sku: skuB, quantity: 2, unitPrice: '5' },
        ],
      },
    });
    const respelled = {
      ...first,
      approvedAt: '2026-11-29T02:00:00Z',
      order: {
        ...first.order,
        lines: [
          { sku: skuB, quantity: 2, unitPrice: '5.0000' },
          { sku: skuA, quantity: 1, unitPrice: '10.00' },
        ],
      },
    };
    assert.equal((await postApproval(service, first)).statusCode, 202);
    const again = await postApproval(service, respelled);
    assert.equal(again.statusCode, 200);
    assert.equal(again.json<Accepted>().duplicate, true);
    await statusReaches(service, idempotencyKeyFor(approvalNo, 'MAIN'), 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, idempotencyKeyFor(approvalNo, 'MAIN')), 1);
  });
});
