// The OA connectors with every part real except the vendors themselves: callbacks encrypted and
// signed as Feishu and DingTalk build them, the service's own connectors and readers wired from
// the FEISHU_* / DINGTALK_* settings, and fake vendor open APIs (tokens, instances, scripted
// failures) started by the test — through the real start path, worker, Temporal and PostgreSQL.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { connectorsFromConfig } from '../../edges/connectors/from-config.js';
import { scanForDuplicates } from '../../services/db/duplicate-scan.js';
import type { TcpProxy } from '../../tools/harness/tcp-proxy.js';
import { sleep } from '../../tools/harness/time.js';
import {
  dingtalkApprovalPayload,
  dingtalkCallback,
  dingtalkDecrypt,
  dingtalkSignature,
  type FakeDingTalk,
  randomDingTalkAesKey,
  startFakeDingTalk,
} from '../../tools/harness/fake-dingtalk.js';
import {
  approvedFeishuOrder,
  feishuApprovalPayload,
  feishuCallback,
  type FakeFeishu,
  startFakeFeishu,
} from '../../tools/harness/fake-feishu.js';
import { createSku, startTestService, statusReaches, testConfig, type TestService } from '../support/service.js';
import { type ProxiedEdge, startProxiedEdge } from '../support/proxied-edge.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE_MAPPING = path.join(ROOT, 'examples/oa-form-mapping.json');
/** The purchase-order definitions; every other definition of the OA is not an order. */
const FEISHU_PURCHASE = 'PURCHASE-ORDER-APPROVAL';
const DINGTALK_PURCHASE = 'PROC-FAKE';
const FEISHU_TOKEN = 'feishu-verification-token';
const FEISHU_ENCRYPT_KEY = 'feishu-encrypt-key-0123456789';
const DINGTALK_TOKEN = 'dingtalk-token';
const DINGTALK_AES_KEY = randomDingTalkAesKey();
const WEBHOOK_START_TIMEOUT_MS = 2_000;

const instanceId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;

describe('OA connectors against the vendors’ protocols and fake open APIs', () => {
  let feishu: FakeFeishu;
  let dingtalk: FakeDingTalk;
  let service: TestService;

  before(async () => {
    // The example mapping, limited to the purchase-order definitions of each OA.
    const mapping = JSON.parse(readFileSync(EXAMPLE_MAPPING, 'utf8')) as {
      default: Record<string, unknown>;
      vendors: { feishu?: Record<string, unknown>; dingtalk: Record<string, unknown> };
    };
    mapping.vendors.feishu = { ...mapping.vendors.feishu, definitions: [FEISHU_PURCHASE] };
    mapping.vendors.dingtalk.definitions = [DINGTALK_PURCHASE];
    const mappingFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'oa-mapping-')), 'mapping.json');
    writeFileSync(mappingFile, JSON.stringify(mapping));
    feishu = await startFakeFeishu();
    dingtalk = await startFakeDingTalk();
    service = await startTestService({
      config: testConfig({
        OA_FORM_MAPPING: mappingFile,
        WEBHOOK_START_TIMEOUT_MS: String(WEBHOOK_START_TIMEOUT_MS),
        FEISHU_APP_ID: feishu.appId,
        FEISHU_APP_SECRET: feishu.appSecret,
        FEISHU_ENCRYPT_KEY,
        FEISHU_VERIFICATION_TOKEN: FEISHU_TOKEN,
        FEISHU_API_BASE_URL: feishu.url,
        DINGTALK_APP_KEY: dingtalk.appKey,
        DINGTALK_APP_SECRET: dingtalk.appSecret,
        DINGTALK_AES_KEY,
        DINGTALK_TOKEN,
        DINGTALK_API_BASE_URL: dingtalk.url,
      }),
    });
  });
  after(async () => {
    await service.stop();
    await feishu.close();
    await dingtalk.close();
  });

  const post = (vendor: 'feishu' | 'dingtalk', callback: ReturnType<typeof feishuCallback>, app = service.app) =>
    app.inject({
      method: 'POST',
      url: `/webhooks/${vendor}`,
      headers: callback.headers,
      query: callback.query,
      payload: callback.rawBody,
    });
  const feishuEvent = (instanceCode: string, status: string, uuid?: string, approvalCode = FEISHU_PURCHASE) =>
    feishuCallback(feishuApprovalPayload({ instanceCode, status, approvalCode, ...(uuid ? { uuid } : {}) }), {
      encryptKey: FEISHU_ENCRYPT_KEY,
      token: FEISHU_TOKEN,
      sign: true,
    });
  const dingtalkEvent = (processInstanceId: string) =>
    dingtalkCallback(dingtalkApprovalPayload({ processInstanceId, type: 'finish', result: 'agree' }), {
      aesKey: DINGTALK_AES_KEY,
      token: DINGTALK_TOKEN,
      appKey: dingtalk.appKey,
    });
  const ordersOf = (key: string) =>
    service.prisma.orderMain.findMany({ where: { idempotentKey: key }, include: { lines: true } });
  const eventsOf = (instance: string) => service.prisma.oaEvent.findMany({ where: { instanceId: instance } });

  function registerFeishuOrder(id: string, sku: string, quantity: number, unitPrice: number) {
    feishu.register(id, approvedFeishuOrder(sku, quantity, unitPrice));
  }

  function registerDingTalkOrder(id: string, sku: string, quantity: number, unitPrice: number, customer: string) {
    dingtalk.register(id, {
      status: 'COMPLETED',
      result: 'agree',
      finishTime: new Date().toISOString(),
      formComponentValues: [
        { name: 'Customer ID', componentType: 'TextField', value: customer },
        {
          name: '明细',
          componentType: 'TableField',
          value: JSON.stringify([
            {
              rowValue: [
                { label: '物料编码', value: sku },
                { label: '数量', value: String(quantity) },
                { label: '单价', value: String(unitPrice) },
              ],
            },
          ]),
        },
      ],
    });
  }

  it('Feishu: an encrypted, signed event 5× at once, answered within 3 s, and again 15 s later is one order', async () => {
    const sku = await createSku(service.prisma, 100);
    const id = instanceId('FS');
    const key = idempotencyKeyFor(id, 'MAIN');
    registerFeishuOrder(id, sku, 2, 10.5);
    const uuid = randomBytes(16).toString('hex');

    const startedAt = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => post('feishu', feishuEvent(id, 'APPROVED', uuid))),
    );
    const tookMs = Date.now() - startedAt;
    assert.deepEqual(
      answers.map((answer) => answer.statusCode),
      [200, 200, 200, 200, 200],
    );
    assert.ok(tookMs < 3_000, `the five deliveries were answered after ${tookMs} ms, past Feishu's 3 s`);
    const written = await statusReaches(service, key, 'SUBMITTED');

    // Feishu redelivers an unanswered event after 15 s; the same event, once more.
    await sleep(15_000);
    assert.equal((await post('feishu', feishuEvent(id, 'APPROVED', uuid))).statusCode, 200);

    const orders = await ordersOf(key);
    assert.equal(orders.length, 1, 'one order for the instance');
    assert.equal(orders[0]?.orderNo, written.orderNo);
    assert.deepEqual(
      [orders[0]?.customerId, orders[0]?.currency, orders[0]?.totalAmount.toString()],
      ['CUST-FS-1', 'CNY', '21'],
    );
    assert.deepEqual(
      orders[0]?.lines.map((line) => [line.sku, line.quantity, line.unitPrice.toFixed(2)]),
      [[sku, 2, '10.50']],
    );
    assert.equal(feishu.reads(id), 1, 'the form was read once through the open API');
    assert.equal((await eventsOf(id)).length, 1, 'the redelivered event is recorded once');
  });

  it('Feishu: the URL check is answered; a wrong token or signature is refused with nothing recorded', async () => {
    const challenge = await post(
      'feishu',
      feishuCallback(
        { type: 'url_verification', challenge: 'ch-123' },
        { encryptKey: FEISHU_ENCRYPT_KEY, token: FEISHU_TOKEN },
      ),
    );
    assert.deepEqual([challenge.statusCode, challenge.json<unknown>()], [200, { challenge: 'ch-123' }]);

    const id = instanceId('FSBAD');
    const wrongToken = feishuCallback(feishuApprovalPayload({ instanceCode: id, status: 'APPROVED' }), {
      encryptKey: FEISHU_ENCRYPT_KEY,
      token: 'not-the-token',
      sign: true,
    });
    const badSignature = feishuEvent(id, 'APPROVED');
    badSignature.headers['x-lark-signature'] = '0'.repeat(64);
    for (const callback of [wrongToken, badSignature]) {
      const answer = await post('feishu', callback);
      assert.equal(answer.statusCode, 401, answer.body);
      assert.equal(answer.headers['content-type'], 'application/problem+json; charset=utf-8');
    }
    assert.equal((await eventsOf(id)).length, 0, 'nothing recorded');
    const key = idempotencyKeyFor(id, 'MAIN');
    assert.equal(await service.prisma.idempotencyRecord.count({ where: { idempotentKey: key } }), 0);
    assert.equal(feishu.reads(id), 0);
  });

  it('Feishu: the open API answering 500 is retried into one order; a 403 after one token refresh is compensation', async () => {
    const sku = await createSku(service.prisma, 100);
    const flaky = instanceId('FS500');
    registerFeishuOrder(flaky, sku, 1, 3);
    feishu.script(flaky, [{ kind: 'status', status: 500 }]);
    assert.equal((await post('feishu', feishuEvent(flaky, 'APPROVED'))).statusCode, 200);
    await statusReaches(service, idempotencyKeyFor(flaky, 'MAIN'), 'SUBMITTED');
    assert.equal((await ordersOf(idempotencyKeyFor(flaky, 'MAIN'))).length, 1);
    assert.equal(feishu.reads(flaky), 2, 'the 500, then the read that succeeded');

    const refused = instanceId('FS403');
    registerFeishuOrder(refused, sku, 1, 3);
    feishu.script(refused, [
      { kind: 'status', status: 403 },
      { kind: 'status', status: 403 },
    ]);
    assert.equal((await post('feishu', feishuEvent(refused, 'APPROVED'))).statusCode, 200);
    const view = await statusReaches(service, idempotencyKeyFor(refused, 'MAIN'), 'COMPENSATING');
    assert.match(view.lastError ?? '', /OaApiRefused|403/);
    assert.equal(feishu.reads(refused), 2, 'one read, one more after the token refresh, and no retry');
    assert.equal((await ordersOf(idempotencyKeyFor(refused, 'MAIN'))).length, 0);
  });

  it('DingTalk: an encrypted callback 5× at once gets the encrypted success and makes one order; a wrong signature is refused', async () => {
    const sku = await createSku(service.prisma, 100);
    const id = instanceId('DT');
    const key = idempotencyKeyFor(id, 'MAIN');
    registerDingTalkOrder(id, sku, 4, 2.5, 'CUST-DT-2');

    const startedAt = Date.now();
    const answers = await Promise.all(Array.from({ length: 5 }, () => post('dingtalk', dingtalkEvent(id))));
    const tookMs = Date.now() - startedAt;
    assert.ok(tookMs < 1_500, `answered after ${tookMs} ms, past DingTalk's 1.5 s`);
    for (const answer of answers) {
      assert.equal(answer.statusCode, 200);
      const reply = answer.json<{ msg_signature: string; timeStamp: string; nonce: string; encrypt: string }>();
      assert.equal(
        reply.msg_signature,
        dingtalkSignature(DINGTALK_TOKEN, reply.timeStamp, reply.nonce, reply.encrypt),
        'the reply is signed with the token',
      );
      assert.deepEqual(dingtalkDecrypt(DINGTALK_AES_KEY, reply.encrypt), { message: 'success', key: dingtalk.appKey });
    }
    await statusReaches(service, key, 'SUBMITTED');
    const orders = await ordersOf(key);
    assert.equal(orders.length, 1);
    assert.deepEqual(
      [orders[0]?.customerId, orders[0]?.currency, orders[0]?.totalAmount.toString()],
      ['CUST-DT-2', 'CNY', '10'],
    );

    const other = instanceId('DTBAD');
    const forged = dingtalkEvent(other);
    forged.query.msg_signature = '0'.repeat(40);
    const refused = await post('dingtalk', forged);
    assert.equal(refused.statusCode, 401, refused.body);
    assert.equal((await eventsOf(other)).length, 0, 'nothing recorded');
    assert.equal(dingtalk.reads(other), 0);
  });

  it('the duplicate scan sees connector orders as it sees webhook orders: two approvals of one purchase are one alert', async () => {
    const sku = await createSku(service.prisma, 100);
    const [first, second] = [instanceId('FSDUP'), instanceId('FSDUP')];
    for (const id of [first, second]) {
      registerFeishuOrder(id, sku, 5, 7);
      assert.equal((await post('feishu', feishuEvent(id, 'APPROVED'))).statusCode, 200);
      await statusReaches(service, idempotencyKeyFor(id, 'MAIN'), 'SUBMITTED');
    }
    await scanForDuplicates(service.prisma, { lookbackMinutes: 60, nearWindowMinutes: 10 });
    const keys = [first, second].map((id) => idempotencyKeyFor(id, 'MAIN'));
    const alerts = await service.prisma.duplicateAlert.findMany({
      where: { kind: 'NEAR_IDENTICAL', idempotentKeys: { hasEvery: keys }, supersededBy: null },
    });
    assert.equal(alerts.length, 1, 'one near-identical alert names both approvals');
    assert.equal(alerts[0]?.orderCount, 2);
  });

  it('an approved instance of a definition the mapping does not list (a leave request) is acknowledged and ignored', async () => {
    const sku = await createSku(service.prisma, 100);
    const id = instanceId('FSLEAVE');
    registerFeishuOrder(id, sku, 1, 1);
    const answer = await post('feishu', feishuEvent(id, 'APPROVED', undefined, 'LEAVE-REQUEST'));
    assert.equal(answer.statusCode, 200);
    assert.equal((await eventsOf(id)).length, 0, 'not recorded: not an order');
    assert.equal(
      await service.prisma.idempotencyRecord.count({ where: { idempotentKey: idempotencyKeyFor(id, 'MAIN') } }),
      0,
      'no claim',
    );
    assert.equal(feishu.reads(id), 0);
  });

  it('an event whose key another source holds is acknowledged and does nothing: no form read, no order', async () => {
    const sku = await createSku(service.prisma, 100);
    const id = instanceId('FSX');
    const key = idempotencyKeyFor(id, 'MAIN');
    // A webhook approval numbered like the instance claimed the key; its start never got through.
    await service.prisma.idempotencyRecord.create({
      data: {
        idempotentKey: key,
        approvalNo: id,
        operation: 'MAIN',
        fingerprint: 'f'.repeat(64),
        request: {
          approvedAt: new Date().toISOString(),
          order: { customerId: 'CUST-W', currency: 'CNY', lines: [] },
          totalAmount: '0',
        },
        workflowId: `order-${key}`,
        status: 'RECEIVED',
        source: 'webhook',
      },
    });
    registerFeishuOrder(id, sku, 1, 1);
    const answer = await post('feishu', feishuEvent(id, 'APPROVED'));
    assert.equal(answer.statusCode, 200, 'acknowledged: an error would only be sent again');
    await sleep(1_000);
    assert.equal(feishu.reads(id), 0, 'the form is not read for a key another source holds');
    const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
    assert.deepEqual([record?.source, record?.workflowStartedAt, record?.status], ['webhook', null, 'RECEIVED']);
    assert.equal((await ordersOf(key)).length, 0, 'no order from the other source');
  });

  describe('while Temporal does not answer the start', () => {
    let proxied: ProxiedEdge;
    let proxy: TcpProxy;
    let proxiedTemporal: Client;
    let edge: ProxiedEdge['edge'];

    before(async () => {
      proxied = await startProxiedEdge(service, { connectors: connectorsFromConfig(service.config) });
      ({ proxy, temporal: proxiedTemporal, edge } = proxied);
    });
    after(async () => {
      // A start whose answer was swallowed ends at its own deadline: let it, before closing.
      await sleep(WEBHOOK_START_TIMEOUT_MS + 500);
      await proxied.close();
    });

    it('Feishu gets its 200 within 3 s and DingTalk its encrypted success within 1.5 s; each is then one order', async () => {
      const sku = await createSku(service.prisma, 100);
      const fs = instanceId('FSHANG');
      const dt = instanceId('DTHANG');
      registerFeishuOrder(fs, sku, 1, 2);
      registerDingTalkOrder(dt, sku, 1, 2, 'CUST-DT-3');
      await proxiedTemporal.workflowService.getSystemInfo({}); // the connection is up before the fault
      await proxy.setMode({ kind: 'swallow-replies' });

      for (const [vendor, callback, deadlineMs] of [
        ['feishu', feishuEvent(fs, 'APPROVED'), 3_000],
        ['dingtalk', dingtalkEvent(dt), 1_500],
      ] as const) {
        const startedAt = Date.now();
        const answer = await post(vendor, callback, edge);
        const tookMs = Date.now() - startedAt;
        assert.equal(answer.statusCode, 200, answer.body);
        assert.ok(tookMs < deadlineMs, `${vendor} answered after ${tookMs} ms, past its ${deadlineMs} ms`);
      }
      await proxy.setMode({ kind: 'pass' });
      for (const id of [fs, dt]) {
        const key = idempotencyKeyFor(id, 'MAIN');
        await statusReaches(service, key, 'SUBMITTED');
        assert.equal((await ordersOf(key)).length, 1);
      }
    });

    it('a start that fails after the reply is started again: the vendor, answered, never sends the event again', async () => {
      const sku = await createSku(service.prisma, 100);
      const id = instanceId('DTLOST');
      const key = idempotencyKeyFor(id, 'MAIN');
      registerDingTalkOrder(id, sku, 1, 3, 'CUST-DT-4');
      await proxiedTemporal.workflowService.getSystemInfo({});
      // Nothing reaches Temporal: the start hangs past the reply and fails at its own deadline.
      await proxy.setMode({ kind: 'blackhole' });
      const answer = await post('dingtalk', dingtalkEvent(id), edge);
      assert.equal(answer.statusCode, 200);
      const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
      assert.equal(record?.workflowStartedAt, null, 'claimed, not started');
      await sleep(WEBHOOK_START_TIMEOUT_MS + 300);
      await proxy.setMode({ kind: 'pass' });
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal((await ordersOf(key)).length, 1);
    });
  });
});
