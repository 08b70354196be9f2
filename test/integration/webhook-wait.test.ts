// The webhook's synchronous answer: a sender that asks to wait (`Prefer: wait=<seconds>`) hears 201
// with the order number when the order is written within the wait, and otherwise what it hears
// today; whatever the wait, exactly one delivery per key is the first and one order is written.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { findRecord } from '../../services/db/idempotency-records.js';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { FaultPlan, startServiceWithFaults } from '../../tools/harness/faults.js';
import { type ProxiedEdge, startProxiedEdge } from '../../tools/harness/proxied-edge.js';
import {
  approval,
  createSku,
  eventually,
  orderCount,
  postApproval,
  statusReaches,
  type TestService,
  uniqueApprovalNo,
  type WebhookAnswer,
} from '../../tools/harness/service.js';

// The longest wait honoured here (WEBHOOK_MAX_WAIT_MS less the start deadline), many times the second
// a write takes on a loaded machine: a test that expects the order number asks for all of it, and
// is answered as soon as the write is done.
const WAIT_FOR_WRITE = 'wait=20';

describe('webhook with Prefer: wait', () => {
  const plan = new FaultPlan();
  let service: TestService;
  let proxied: ProxiedEdge;

  before(async () => {
    // WEBHOOK_MAX_WAIT_MS 25 s less the 5 s start deadline: waits are honoured up to 20 s.
    service = await startServiceWithFaults(plan, { WEBHOOK_MAX_WAIT_MS: '25000', WEBHOOK_START_TIMEOUT_MS: '5000' });
    proxied = await startProxiedEdge(service);
  });
  after(async () => {
    await proxied.close();
    await service.stop();
  });
  beforeEach(() => proxied.proxy.setMode({ kind: 'pass' }));

  async function orderNoOf(key: string): Promise<string | undefined> {
    const row = await service.prisma.orderMain.findUnique({ where: { idempotentKey: key } });
    return row?.orderNo;
  }

  it('answers 201 with the written order number and Preference-Applied when the order is written within the wait', async () => {
    const approvalNo = uniqueApprovalNo('WAIT');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const response = await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)), {
      prefer: WAIT_FOR_WRITE,
    });

    assert.equal(response.statusCode, 201, response.body);
    assert.equal(response.headers['preference-applied'], WAIT_FOR_WRITE);
    const orderNo = await orderNoOf(key);
    assert.ok(orderNo, 'the order is written');
    assert.deepEqual(response.json<WebhookAnswer>(), {
      idempotencyKey: key,
      workflowId: orderWorkflowIdFor(key),
      duplicate: false,
      status: 'SUBMITTED',
      orderNo,
    });
  });

  it('answers a redelivery of a written key 200 with its order number at once; without Prefer, as before', async () => {
    const approvalNo = uniqueApprovalNo('WAITDUP');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, await createSku(service.prisma, 10));
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'SUBMITTED');

    const waited = await postApproval(service, body, { prefer: 'respond-async, wait=10' });
    assert.equal(waited.statusCode, 200, waited.body);
    assert.equal(waited.headers['preference-applied'], 'wait=10');
    assert.deepEqual(waited.json<WebhookAnswer>(), {
      idempotencyKey: key,
      workflowId: orderWorkflowIdFor(key),
      duplicate: true,
      status: 'SUBMITTED',
      orderNo: await orderNoOf(key),
    });

    const plain = await postApproval(service, body);
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['preference-applied'], undefined);
    assert.equal(plain.json<WebhookAnswer>().orderNo, undefined, 'no order number unless asked to wait');
  });

  it('answers five concurrent deliveries of a fresh key with exactly one first (201) and one order', async () => {
    const approvalNo = uniqueApprovalNo('WAIT5');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, await createSku(service.prisma, 10));

    const responses = await Promise.all(
      Array.from({ length: 5 }, () => postApproval(service, body, { prefer: WAIT_FOR_WRITE })),
    );

    const codes = responses.map((response) => response.statusCode).sort();
    assert.deepEqual(codes, [200, 200, 200, 200, 201], responses.map((response) => response.body).join('\n'));
    const orderNo = await orderNoOf(key);
    for (const response of responses) assert.equal(response.json<WebhookAnswer>().orderNo, orderNo);
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('answers 202 when the wait runs out before the write, and the order is then written once', async () => {
    const approvalNo = uniqueApprovalNo('WAITSLOW');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    // Each attempt takes 3 s before it writes (start-to-close is 4 s); the sender waits 1 s.
    plan.set(approvalNo, { kind: 'slow', ms: 3_000 });

    const response = await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)), {
      prefer: 'wait=1',
    });

    assert.equal(response.statusCode, 202, response.body);
    assert.equal(response.headers['preference-applied'], 'wait=1');
    assert.deepEqual(
      [
        response.json<WebhookAnswer>().status,
        response.json<WebhookAnswer>().orderNo,
        response.json<WebhookAnswer>().duplicate,
      ],
      ['RECEIVED', undefined, false],
    );
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    plan.clear(approvalNo);
  });

  it('answers a write that fails for good 202 with COMPENSATING, never 201', async () => {
    const approvalNo = uniqueApprovalNo('WAITFAIL');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const sku = await createSku(service.prisma, 1);
    // More than the stock: the write is refused for good and compensation takes the key.
    const body = approval(approvalNo, sku, {
      order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku, quantity: 5, unitPrice: '1.00' }] },
    });

    const response = await postApproval(service, body, { prefer: WAIT_FOR_WRITE });

    assert.equal(response.statusCode, 202, response.body);
    assert.deepEqual(
      [response.json<WebhookAnswer>().status, response.json<WebhookAnswer>().orderNo],
      ['COMPENSATING', undefined],
    );
    await statusReaches(service, key, 'COMPENSATING');
    assert.equal(await orderCount(service.prisma, key), 0);
  });

  it('caps a longer wait at what WEBHOOK_MAX_WAIT_MS leaves and ignores a malformed one', async () => {
    const sku = await createSku(service.prisma, 100);
    const capped = await postApproval(service, approval(uniqueApprovalNo('WAITCAP'), sku), { prefer: 'wait=600' });
    assert.equal(capped.statusCode, 201, capped.body);
    assert.equal(capped.headers['preference-applied'], 'wait=20');

    for (const prefer of ['wait=abc', 'wait=0', 'wait=-1', 'wait=1.5', 'wait', 'return=minimal']) {
      const response = await postApproval(service, approval(uniqueApprovalNo('WAITBAD'), sku), { prefer });
      assert.equal(response.statusCode, 202, `${prefer}: ${response.body}`);
      assert.equal(response.headers['preference-applied'], undefined, prefer);
      assert.equal(response.json<WebhookAnswer>().orderNo, undefined, prefer);
    }
  });

  it('answers 503 as without a wait when Temporal cannot be reached, and keeps the claim', async () => {
    const approvalNo = uniqueApprovalNo('WAITDOWN');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, await createSku(service.prisma, 10));
    await proxied.proxy.setMode({ kind: 'refuse' });

    const response = await postApproval({ app: proxied.edge }, body, { prefer: 'wait=2' });

    assert.equal(response.statusCode, 503, response.body);
    assert.equal(response.json<{ type: string }>().type, '/problems/temporal-unavailable');
    assert.equal(response.headers['preference-applied'], undefined);
    assert.ok(await findRecord(service.prisma, key), 'the claim is kept');

    // The sender's redelivery once Temporal is back starts the order and hears 201. Back means back
    // for the edge's own client: after the refused connects, gRPC reconnects on a backoff (seconds,
    // growing with the outage), and until it does a delivery is answered 503, or 202 when its wait
    // runs out first. Only the edge's health check says when its client reaches Temporal again.
    await proxied.proxy.setMode({ kind: 'pass' });
    await eventually('the edge to reach Temporal again', async () => {
      const health = await proxied.edge.inject({ method: 'GET', url: '/healthz' });
      if (health.json<{ temporal: string }>().temporal === 'ok') return true;
      throw new Error(`/healthz answered ${health.statusCode} ${health.body}`);
    });
    const again = await postApproval({ app: proxied.edge }, body, { prefer: WAIT_FOR_WRITE });
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.json<WebhookAnswer>().duplicate, false, 'the redelivery is the first delivery answered');
    assert.equal(await orderCount(service.prisma, key), 1);
  });
});
