// The webhook's HTTP contract: every refusal is precise, in problem+json, and leaves nothing
// behind — no workflow, no record, no order row.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { buildApp } from '../../edges/http/app.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { signBody } from '../../domain-node/signature.js';
import { freePort } from '../../tools/harness/ports.js';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { createLazyClient } from '../../services/temporal/connection.js';
import {
  approval,
  createSku,
  eventually,
  getOrder,
  orderCount,
  orderedQuantities,
  postApproval,
  startTestService,
  type TestService,
  uniqueApprovalNo,
  workflowExists,
} from '../../tools/harness/service.js';
import { signedHeaders, TEST_WEBHOOK_SECRET } from '../../tools/harness/signed-webhook.js';

interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: { pointer: string; message: string }[];
  differences?: string[];
}

describe('OA webhook HTTP contract', () => {
  let service: TestService;
  let sku: string;

  before(async () => {
    service = await startTestService();
    sku = await createSku(service.prisma, 1000);
  });
  after(() => service.stop());

  async function assertNothingStarted(approvalNo: string) {
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false, 'no workflow');
    assert.equal(await service.prisma.idempotencyRecord.count({ where: { approvalNo } }), 0, 'no record');
    assert.equal(await orderCount(service.prisma, key), 0, 'no order row');
  }

  function assertProblem(
    response: { statusCode: number; headers: Record<string, unknown>; json: () => unknown },
    status: number,
  ) {
    assert.equal(response.statusCode, status);
    assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
    const body = response.json() as ProblemBody;
    assert.equal(body.status, status);
    assert.ok(body.type && body.title && body.detail, 'type, title and detail are present');
    return body;
  }

  it('answers 413 to a body over 256 KiB, before anything else', async () => {
    const approvalNo = uniqueApprovalNo();
    const payload = JSON.stringify({ ...approval(approvalNo, sku), padding: 'x'.repeat(300 * 1024) });
    const response = await service.app.inject({
      method: 'POST',
      url: '/webhooks/oa/approvals',
      headers: { 'content-type': 'text/plain' },
      payload,
    });
    assertProblem(response, 413);
    await assertNothingStarted(approvalNo);
  });

  it('answers 413 to a body over 256 KiB with no, an empty or a malformed Content-Type, before 415', async () => {
    const approvalNo = uniqueApprovalNo();
    const payload = JSON.stringify({ ...approval(approvalNo, sku), padding: 'x'.repeat(300 * 1024) });
    for (const headers of [{}, { 'content-type': '' }, { 'content-type': 'json' }, { 'content-type': 'a b/c' }]) {
      const response = await service.app.inject({ method: 'POST', url: '/webhooks/oa/approvals', headers, payload });
      const problem = assertProblem(response, 413);
      assert.match(problem.type, /payload-too-large$/, JSON.stringify(headers));
    }
    await assertNothingStarted(approvalNo);
  });

  it('answers 415 as unsupported-media-type to a small body with an empty or malformed Content-Type', async () => {
    const approvalNo = uniqueApprovalNo();
    const payload = JSON.stringify(approval(approvalNo, sku));
    for (const contentType of ['', 'json', 'a b/c']) {
      const response = await service.app.inject({
        method: 'POST',
        url: '/webhooks/oa/approvals',
        headers: { ...signedHeaders(payload), 'content-type': contentType },
        payload,
      });
      const problem = assertProblem(response, 415);
      assert.match(problem.type, /unsupported-media-type$/, JSON.stringify(contentType));
    }
    await assertNothingStarted(approvalNo);
  });

  it('answers 415 to a body that is not JSON', async () => {
    const approvalNo = uniqueApprovalNo();
    const payload = JSON.stringify(approval(approvalNo, sku));
    const response = await service.app.inject({
      method: 'POST',
      url: '/webhooks/oa/approvals',
      headers: { ...signedHeaders(payload), 'content-type': 'text/plain' },
      payload,
    });
    assertProblem(response, 415);
    await assertNothingStarted(approvalNo);
  });

  it('answers 401 to a missing signature, a wrong secret and a stale timestamp', async () => {
    const approvalNo = uniqueApprovalNo();
    const payload = JSON.stringify(approval(approvalNo, sku));
    const stale = Math.floor(Date.now() / 1000) - 6 * 60;
    const cases = [
      { 'content-type': 'application/json' },
      signedHeaders(payload, 'another-secret-0123456789'),
      signedHeaders(payload, TEST_WEBHOOK_SECRET, stale),
      { ...signedHeaders(payload), 'x-oa-signature': signBody(TEST_WEBHOOK_SECRET, '1', payload) },
    ];
    for (const headers of cases) {
      const response = await service.app.inject({ method: 'POST', url: '/webhooks/oa/approvals', headers, payload });
      assertProblem(response, 401);
    }
    await assertNothingStarted(approvalNo);
  });

  it('answers 400 to malformed JSON', async () => {
    const payload = '{"approvalNo": "AP-1",';
    const response = await service.app.inject({
      method: 'POST',
      url: '/webhooks/oa/approvals',
      headers: signedHeaders(payload),
      payload,
    });
    assertProblem(response, 400);
  });

  it('answers 400 naming each bad field with a JSON pointer', async () => {
    const approvalNo = uniqueApprovalNo();
    const body = approval(approvalNo, sku);
    body.order.lines = [
      { sku, quantity: 0, unitPrice: '1.5' },
      { sku, quantity: 1, unitPrice: '1.23456' },
    ];
    const problem = assertProblem(await postApproval(service, { ...body, operation: 'REFUND', extra: true }), 400);
    const pointers = (problem.errors ?? []).map((error) => error.pointer).sort();
    assert.deepEqual(pointers, ['/extra', '/operation', '/order/lines/0/quantity', '/order/lines/1/unitPrice']);
    await assertNothingStarted(approvalNo);
  });

  it('answers 400 pointing at the unit price for every malformed price, never 500', async () => {
    const approvalNo = uniqueApprovalNo();
    for (const unitPrice of ['12,50', '1e3', '-1', '', '1.23456', ' 1.00', '０.５']) {
      const body = approval(approvalNo, sku);
      body.order.lines = [{ sku, quantity: 1, unitPrice }];
      const problem = assertProblem(await postApproval(service, body), 400);
      assert.match(problem.type, /validation-failed$/, JSON.stringify(unitPrice));
      assert.deepEqual(
        (problem.errors ?? []).map((error) => error.pointer),
        ['/order/lines/0/unitPrice'],
        JSON.stringify(unitPrice),
      );
    }
    await assertNothingStarted(approvalNo);
  });

  it('refuses an approval number in another character set instead of guessing (the seed’s charset pitfall)', async () => {
    const approvalNo = `ＡＰ-${Date.now()}`; // full-width letters look like "AP" but are not ASCII
    const problem = assertProblem(await postApproval(service, approval(approvalNo, sku)), 400);
    assert.deepEqual(
      (problem.errors ?? []).map((error) => error.pointer),
      ['/approvalNo'],
    );
    assert.equal(await service.prisma.idempotencyRecord.count({ where: { approvalNo } }), 0);
  });

  it('answers 422 to the same key with a different order, naming what differs, and starts nothing new', async () => {
    const approvalNo = uniqueApprovalNo();
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const first = approval(approvalNo, sku);
    assert.equal((await postApproval(service, first)).statusCode, 202);
    const changed = { ...first, order: { ...first.order, lines: [{ sku, quantity: 3, unitPrice: '10.50' }] } };

    const problem = assertProblem(await postApproval(service, changed), 422);
    assert.match(problem.type, /idempotency-key-conflict$/);
    assert.deepEqual(problem.differences, ['order.lines (sorted) [0].quantity']);

    await eventually('the first order', async () => ((await orderCount(service.prisma, key)) === 1 ? true : undefined));
    assert.deepEqual(await orderedQuantities(service.prisma, key), [2], 'the first order is the one written');
  });

  it('GET /orders answers 404 for an unknown key and 400 for something that is not a key', async () => {
    assertProblem(await getOrder(service, idempotencyKeyFor(uniqueApprovalNo(), 'MAIN')), 404);
    assertProblem(await getOrder(service, 'not-a-key'), 400);
  });

  it('/healthz is 200 while Temporal and PostgreSQL answer, /livez always', async () => {
    const health = await service.app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(health.statusCode, 200);
    assert.deepEqual(health.json(), { status: 'ok', database: 'ok', temporal: 'ok' });
    assert.equal((await service.app.inject({ method: 'GET', url: '/livez' })).statusCode, 200);
  });

  describe('when Temporal cannot be reached', () => {
    let unreachable: ReturnType<typeof buildApp>;
    let temporal: ReturnType<typeof createLazyClient>;

    before(async () => {
      temporal = createLazyClient({ address: `127.0.0.1:${await freePort()}`, namespace: 'default' });
      unreachable = buildApp({ config: service.config, prisma: service.prisma, temporal });
      await unreachable.ready();
    });
    after(async () => {
      await unreachable.close();
    });

    it('answers 503 with Retry-After, keeps the claim unstarted, and a redelivery later is the first delivery', async () => {
      const approvalNo = uniqueApprovalNo();
      const body = approval(approvalNo, sku);
      const response = await postApproval({ app: unreachable }, body);
      assertProblem(response, 503);
      assert.ok(Number(response.headers['retry-after']) > 0, 'Retry-After is set');
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false, 'no workflow');
      assert.equal(await orderCount(service.prisma, key), 0, 'no order row');
      // The claim stays (a start that did reach Temporal would record its statuses on it), unstarted.
      const claim = await service.prisma.idempotencyRecord.findUniqueOrThrow({ where: { idempotentKey: key } });
      assert.deepEqual([claim.status, claim.workflowStartedAt, claim.firstDeliveryAt], ['RECEIVED', null, null]);

      const redelivery = await postApproval(service, body);
      assert.equal(redelivery.statusCode, 202, 'the OA side’s redelivery is the first delivery');
      assert.equal(redelivery.json<{ duplicate: boolean }>().duplicate, false);
    });

    it('/healthz answers 503 and names Temporal; /livez stays 200', async () => {
      const health = await unreachable.inject({ method: 'GET', url: '/healthz' });
      assert.equal(health.statusCode, 503);
      assert.deepEqual(health.json(), { status: 'unavailable', database: 'ok', temporal: 'unreachable' });
      assert.equal((await unreachable.inject({ method: 'GET', url: '/livez' })).statusCode, 200);
    });
  });

  describe('when PostgreSQL cannot be reached', () => {
    let app: ReturnType<typeof buildApp>;
    let prisma: PrismaClient;
    const logLines: { level: number; msg: string; err?: { message?: string } }[] = [];

    before(async () => {
      prisma = createPrismaClient({
        databaseUrl: `postgresql://orders:secret@127.0.0.1:${await freePort()}/orders`,
        poolSize: 1,
        statementTimeoutMs: 1_000,
      });
      const logger = pino(
        { level: 'warn' },
        { write: (line: string) => void logLines.push(JSON.parse(line) as (typeof logLines)[number]) },
      );
      app = buildApp({ config: service.config, prisma, temporal: service.temporal, logger });
      await app.ready();
    });
    after(async () => {
      await app.close();
      await prisma.$disconnect();
    });

    it('/healthz answers 503 naming the database, without the driver’s message, and logs that at warn', async () => {
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(health.statusCode, 503);
      assert.deepEqual(health.json(), { status: 'unavailable', database: 'unreachable', temporal: 'ok' });
      const warning = logLines.find((line) => line.level === 40 && /database/.test(line.msg));
      assert.ok(warning, `a warning was logged: ${JSON.stringify(logLines)}`);
      assert.ok(warning.err?.message, 'with the raw error');
    });
  });
});
