// The OA connectors with every part real except the vendors themselves: callbacks encrypted and
// signed as Feishu, DingTalk and WeCom build them, the service's own connectors and readers wired
// from the FEISHU_* / DINGTALK_* / WECOM_* settings, and fake vendor open APIs (tokens, instances, scripted
// failures) started by the test — through the real start path, worker, Temporal and PostgreSQL.
// This file owns what is each vendor's own: its crypto and replies, its form through its open API,
// its deadline. The start path the connectors share is oa-connectors.test.ts's; the refusals of a
// forged callback and a genuine one replayed are door-refusals.test.ts's.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { pino } from 'pino';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { connectorsFromConfig } from '../../vendors/registry.js';
import { scanForDuplicates } from '../../services/db/duplicate-scan.js';
import type { TcpProxy } from '../../tools/harness/tcp-proxy.js';
import { sleep } from '../../tools/harness/time.js';
import {
  approvedDingTalkOrder,
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
import {
  createSku,
  startTestService,
  statusReaches,
  testConfig,
  postVendorCallback,
  type TestService,
  until,
  visibleRuns,
} from '../../tools/harness/service.js';
import { type ProxiedEdge, startProxiedEdge } from '../../tools/harness/proxied-edge.js';
import {
  approvedWeComOrder,
  type FakeWeCom,
  randomWeComAesKey,
  startFakeWeCom,
  wecomApprovalXml,
  wecomCallback,
  type WeComRequest,
  wecomUrlCheck,
} from '../../tools/harness/fake-wecom.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE_MAPPING = path.join(ROOT, 'examples/oa-form-mapping.json');
/** The purchase-order definitions; every other definition of the OA is not an order. */
const FEISHU_PURCHASE = 'PURCHASE-ORDER-APPROVAL';
const DINGTALK_PURCHASE = 'PROC-FAKE';
const FEISHU_TOKEN = 'feishu-verification-token';
const FEISHU_ENCRYPT_KEY = 'feishu-encrypt-key-0123456789';
const DINGTALK_TOKEN = 'dingtalk-token';
const DINGTALK_AES_KEY = randomDingTalkAesKey();
const WECOM_PURCHASE = 'TEMPLATE-PURCHASE';
const WECOM_TOKEN = 'wecom-token';
const WECOM_ENCODING_AES_KEY = randomWeComAesKey();
/** WeCom resends a callback it saw no answer to; the test sends the same one again this much later. */
const WECOM_REDELIVERY_AFTER_MS = 15_000;
const WEBHOOK_START_TIMEOUT_MS = 2_000;

const instanceId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;

describe('OA connectors against the vendors’ protocols and fake open APIs', () => {
  let feishu: FakeFeishu;
  let dingtalk: FakeDingTalk;
  let wecom: FakeWeCom;
  let service: TestService;

  before(async () => {
    // The example mapping, limited to the purchase-order definitions of each OA.
    const mapping = JSON.parse(readFileSync(EXAMPLE_MAPPING, 'utf8')) as {
      default: Record<string, unknown>;
      vendors: { feishu?: Record<string, unknown>; dingtalk: Record<string, unknown>; wecom: Record<string, unknown> };
    };
    mapping.vendors.feishu = { ...mapping.vendors.feishu, definitions: [FEISHU_PURCHASE] };
    mapping.vendors.dingtalk.definitions = [DINGTALK_PURCHASE];
    mapping.vendors.wecom.definitions = [WECOM_PURCHASE];
    const mappingFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'oa-mapping-')), 'mapping.json');
    writeFileSync(mappingFile, JSON.stringify(mapping));
    feishu = await startFakeFeishu();
    dingtalk = await startFakeDingTalk();
    wecom = await startFakeWeCom();
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
        WECOM_CORP_ID: wecom.corpId,
        WECOM_AGENT_SECRET: wecom.agentSecret,
        WECOM_TOKEN,
        WECOM_ENCODING_AES_KEY,
        WECOM_API_BASE_URL: wecom.url,
      }),
    });
  });
  after(async () => {
    await service.stop();
    await feishu.close();
    await dingtalk.close();
    await wecom.close();
  });

  const post = (
    vendor: 'feishu' | 'dingtalk' | 'wecom',
    callback: ReturnType<typeof feishuCallback> | WeComRequest,
    app = service.app,
  ) => postVendorCallback({ app }, vendor, callback);
  /**
   * Delivers as the vendor does: a 503 (the claim not made within the reply budget, which a fresh
   * service on a loaded machine may miss) is sent again, the same bytes, up to five times.
   */
  const delivered = async (vendor: 'feishu' | 'dingtalk', callback: ReturnType<typeof feishuCallback>) => {
    let answer = await post(vendor, callback);
    for (let sent = 1; answer.statusCode === 503 && sent < 5; sent++) answer = await post(vendor, callback);
    return answer;
  };
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
  const wecomCrypto = () => ({ token: WECOM_TOKEN, encodingAesKey: WECOM_ENCODING_AES_KEY, corpId: wecom.corpId });
  const wecomEvent = (spNo: string, spStatus = 2, templateId = WECOM_PURCHASE) =>
    wecomCallback(wecomApprovalXml({ corpId: wecom.corpId, spNo, spStatus, templateId }), wecomCrypto());
  const ordersOf = (key: string) =>
    service.prisma.orderMain.findMany({ where: { idempotentKey: key }, include: { lines: true } });
  const eventsOf = (instance: string) => service.prisma.oaEvent.findMany({ where: { instanceId: instance } });

  function registerFeishuOrder(id: string, sku: string, quantity: number, unitPrice: number) {
    feishu.register(id, approvedFeishuOrder(sku, quantity, unitPrice));
  }

  function registerDingTalkOrder(id: string, sku: string, quantity: number, unitPrice: number, customer: string) {
    dingtalk.register(id, approvedDingTalkOrder(sku, quantity, unitPrice, customer));
  }

  it('Feishu: an encrypted, signed event is one order, its form read once through the open API', async () => {
    const sku = await createSku(service.prisma, 100);
    const id = instanceId('FS');
    const key = idempotencyKeyFor(id, 'MAIN');
    registerFeishuOrder(id, sku, 2, 10.5);

    assert.equal((await delivered('feishu', feishuEvent(id, 'APPROVED'))).statusCode, 200);
    const written = await statusReaches(service, key, 'SUBMITTED');

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
  });

  it('DingTalk: an encrypted callback and its redelivery each get the encrypted success, and make one order', async () => {
    const sku = await createSku(service.prisma, 100);
    const id = instanceId('DT');
    const key = idempotencyKeyFor(id, 'MAIN');
    registerDingTalkOrder(id, sku, 4, 2.5, 'CUST-DT-2');

    const first = await delivered('dingtalk', dingtalkEvent(id));
    await statusReaches(service, key, 'SUBMITTED');
    // A duplicate must hear the same success, or DingTalk keeps sending it.
    const again = await post('dingtalk', dingtalkEvent(id));
    for (const answer of [first, again]) {
      assert.equal(answer.statusCode, 200);
      const reply = answer.json<{ msg_signature: string; timeStamp: string; nonce: string; encrypt: string }>();
      assert.equal(
        reply.msg_signature,
        dingtalkSignature(DINGTALK_TOKEN, reply.timeStamp, reply.nonce, reply.encrypt),
        'the reply is signed with the token',
      );
      assert.deepEqual(dingtalkDecrypt(DINGTALK_AES_KEY, reply.encrypt), { message: 'success', key: dingtalk.appKey });
    }
    const orders = await ordersOf(key);
    assert.equal(orders.length, 1);
    assert.deepEqual(
      [orders[0]?.customerId, orders[0]?.currency, orders[0]?.totalAmount.toString()],
      ['CUST-DT-2', 'CNY', '10'],
    );
    assert.equal(dingtalk.reads(id), 1, 'the form was read once through the open API');
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

  describe('WeCom', () => {
    const ACK = { status: 200, contentType: 'text/plain; charset=utf-8', body: '' };
    const answerOf = (answer: Awaited<ReturnType<typeof post>>) => ({
      status: answer.statusCode,
      contentType: String(answer.headers['content-type']),
      body: answer.body,
    });

    it('the URL check, a GET whose echostr is encrypted and signed, is answered with its plaintext', async () => {
      const answer = await post('wecom', wecomUrlCheck('echo-20261201', wecomCrypto()));
      assert.deepEqual(answerOf(answer), { ...ACK, body: 'echo-20261201' });
    });

    it('an approved sys_approval_change delivered 5× at once and again 15 s later is one order with the mapped lines: one detail read, one oa_event', async () => {
      const [apple, pear] = [await createSku(service.prisma, 100), await createSku(service.prisma, 100)];
      const id = instanceId('WC');
      const key = idempotencyKeyFor(id, 'MAIN');
      const order = approvedWeComOrder(apple, 2, 10.5, 'CUST-WC-5');
      const table = order.contents[1];
      assert.ok(table);
      (table.value.children as Array<{ list: unknown[] }>).push({
        list: [
          { control: 'Text', title: [{ text: '物料编码', lang: 'zh_CN' }], value: { text: pear } },
          { control: 'Number', title: [{ text: '数量', lang: 'zh_CN' }], value: { new_number: '3' } },
          { control: 'Money', title: [{ text: '单价', lang: 'zh_CN' }], value: { new_money: '4.5' } },
        ],
      });
      wecom.register(id, order);

      // WeCom resends the same message: the same plaintext, encrypted and signed anew each time.
      const message = wecomApprovalXml({ corpId: wecom.corpId, spNo: id, spStatus: 2, templateId: WECOM_PURCHASE });
      const firstAt = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => post('wecom', wecomCallback(message, wecomCrypto()))),
      );
      assert.deepEqual(
        answers.map(answerOf),
        Array.from({ length: 5 }, () => ACK),
      );
      const written = await statusReaches(service, key, 'SUBMITTED');

      await sleep(Math.max(0, firstAt + WECOM_REDELIVERY_AFTER_MS - Date.now()));
      assert.deepEqual(answerOf(await post('wecom', wecomCallback(message, wecomCrypto()))), ACK);
      assert.equal(await visibleRuns(service.temporal, `order-${key}`), 1, 'one run of order-<key>');

      const orders = await ordersOf(key);
      assert.equal(orders.length, 1, 'one order for the approval');
      assert.equal(orders[0]?.orderNo, written.orderNo);
      assert.deepEqual(
        [orders[0]?.customerId, orders[0]?.currency, orders[0]?.totalAmount.toString()],
        ['CUST-WC-5', 'CNY', '34.5'],
      );
      assert.deepEqual(
        orders[0]?.lines
          .map((line) => [line.sku, line.quantity, line.unitPrice.toFixed(2)])
          .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
        [
          [apple, 2, '10.50'],
          [pear, 3, '4.50'],
        ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      );
      assert.equal(wecom.reads(id), 1, 'the detail was read once');
      const events = await eventsOf(id);
      assert.deepEqual(
        events.map((event) => [event.vendor, event.eventType, event.status, event.idempotentKey]),
        [['wecom', 'sys_approval_change', 'APPROVED', key]],
        'one oa_event for the six deliveries',
      );
      const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
      assert.equal(record?.source, 'wecom');
    });

    it('withdrawn after the order (SpStatus 6), then deleted (7), raises the one alert; the order stands', async () => {
      const sku = await createSku(service.prisma, 100);
      const id = instanceId('WCREV');
      const key = idempotencyKeyFor(id, 'MAIN');
      wecom.register(id, approvedWeComOrder(sku, 1, 5));
      assert.equal((await post('wecom', wecomEvent(id))).statusCode, 200);
      const written = await statusReaches(service, key, 'SUBMITTED');

      // The withdrawal twice, as WeCom resends it: the same message (its CreateTime included),
      // encrypted and signed anew; then the deletion.
      const withdrawal = wecomApprovalXml({ corpId: wecom.corpId, spNo: id, spStatus: 6, templateId: WECOM_PURCHASE });
      for (const message of [withdrawal, withdrawal]) {
        assert.deepEqual(answerOf(await post('wecom', wecomCallback(message, wecomCrypto()))), ACK);
      }
      assert.deepEqual(answerOf(await post('wecom', wecomEvent(id, 7))), ACK);
      const alerts = await service.prisma.duplicateAlert.findMany({ where: { clusterKey: key } });
      assert.deepEqual(
        alerts.map((alert) => [alert.kind, alert.orderNos]),
        [['REVOKED_AFTER_ORDER', [written.orderNo]]],
        'one alert, however many withdrawals',
      );
      assert.match(alerts[0]?.detail ?? '', new RegExp(`approval ${id} was REVOKED in wecom`));
      assert.equal((await ordersOf(key)).length, 1, 'the order stands');
      assert.deepEqual(
        (await eventsOf(id)).map((event) => event.status).sort(),
        ['APPROVED', 'DELETED', 'REVOKED'],
        'each distinct event recorded once',
      );
    });

    it('a 5xx from getapprovaldetail is retried, and an invalid-token errcode refreshes the token once: one order', async () => {
      const sku = await createSku(service.prisma, 100);
      const id = instanceId('WCRETRY');
      const key = idempotencyKeyFor(id, 'MAIN');
      wecom.register(id, approvedWeComOrder(sku, 2, 3));
      // A token is held once the worker has read any WeCom approval; else the first read asks for one.
      const tokensBefore = wecom.tokenRequests();
      const held = tokensBefore > 0 ? 0 : 1;
      wecom.script(id, [{ kind: 'status', status: 502 }, { kind: 'token-invalid' }]);
      assert.equal((await post('wecom', wecomEvent(id))).statusCode, 200);
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal(wecom.reads(id), 3, 'the 502, the refused token, the read with the fresh one');
      assert.equal(wecom.tokenRequests() - tokensBefore, held + 1, 'one refresh');
      assert.equal((await ordersOf(key)).length, 1);
    });

    it('the acknowledgement stays inside the 5 s deadline while the WeCom API hangs; the read is retried into the order', async () => {
      const sku = await createSku(service.prisma, 100);
      const id = instanceId('WCHANG');
      const key = idempotencyKeyFor(id, 'MAIN');
      wecom.register(id, approvedWeComOrder(sku, 1, 2));
      wecom.script(id, [{ kind: 'hang' }]);
      const startedAt = Date.now();
      const answer = await post('wecom', wecomEvent(id));
      const tookMs = Date.now() - startedAt;
      assert.deepEqual(answerOf(answer), ACK);
      assert.ok(tookMs < 5_000, `answered after ${tookMs} ms`);
      const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
      assert.equal(record?.source, 'wecom', 'the key is claimed before the answer');
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal(wecom.reads(id), 2, 'the hung read, then the retry');
      assert.equal((await ordersOf(key)).length, 1);
    });

    it('an approved instance of another template (a leave request) is acknowledged and ignored', async () => {
      const id = instanceId('WCLEAVE');
      assert.deepEqual(answerOf(await post('wecom', wecomEvent(id, 2, 'TEMPLATE-LEAVE'))), ACK);
      assert.equal((await eventsOf(id)).length, 0);
      assert.equal(wecom.reads(id), 0);
    });
  });

  describe('while Temporal does not answer the start', () => {
    let proxied: ProxiedEdge;
    let proxy: TcpProxy;
    let proxiedTemporal: Client;
    let edge: ProxiedEdge['edge'];

    // The edge's log: what became of the work that went on after its reply.
    type LogLine = { msg: string; idempotencyKey?: string };
    const logged: LogLine[] = [];
    const loggedFor = (key: string, msg: string) =>
      logged.some((line) => line.idempotencyKey === key && line.msg === msg);
    /** Resolves once the edge has logged one of `msgs` for `key`. */
    const logReaches = (what: string, key: string, ...msgs: string[]) =>
      until(what, () => msgs.some((msg) => loggedFor(key, msg)));
    /** Keys whose start outlives its reply: each must settle before the edge closes. */
    const goingOnAfterReply = new Set<string>();

    before(async () => {
      const logger = pino(
        { level: 'info' },
        { write: (line: string) => void logged.push(JSON.parse(line) as LogLine) },
      );
      proxied = await startProxiedEdge(service, { connectors: connectorsFromConfig(service.config), logger });
      ({ proxy, temporal: proxiedTemporal, edge } = proxied);
    });
    after(async () => {
      // A start whose answer was swallowed ends at its own deadline and is then started again: let
      // each settle before closing.
      try {
        for (const key of goingOnAfterReply) {
          await logReaches(
            `the start of ${key} settled after its reply`,
            key,
            'approval event started after its reply',
            'approval event finished after its reply',
            'approval event not started; its claim waits in `orders-cli awaiting`',
          );
        }
      } finally {
        await proxied.close();
      }
    });

    it('Feishu gets its 200 within 3 s and DingTalk its encrypted success within 1.5 s, the claim kept; each is then one order, and a redelivery a duplicate', async () => {
      const sku = await createSku(service.prisma, 100);
      const fs = instanceId('FSHANG');
      const dt = instanceId('DTHANG');
      registerFeishuOrder(fs, sku, 1, 2);
      registerDingTalkOrder(dt, sku, 1, 2, 'CUST-DT-3');
      await proxiedTemporal.workflowService.getSystemInfo({}); // the connection is up before the fault
      await proxy.setMode({ kind: 'swallow-replies' });

      for (const [vendor, id, callback, deadlineMs] of [
        ['feishu', fs, feishuEvent(fs, 'APPROVED'), 3_000],
        ['dingtalk', dt, dingtalkEvent(dt), 1_500],
      ] as const) {
        const startedAt = Date.now();
        const answer = await post(vendor, callback, edge);
        const tookMs = Date.now() - startedAt;
        assert.equal(answer.statusCode, 200, answer.body);
        assert.ok(tookMs < deadlineMs, `${vendor} answered after ${tookMs} ms, past its ${deadlineMs} ms`);
        if (vendor === 'dingtalk') {
          const reply = answer.json<{ encrypt: string }>();
          assert.deepEqual(dingtalkDecrypt(DINGTALK_AES_KEY, reply.encrypt), {
            message: 'success',
            key: dingtalk.appKey,
          });
        }
        const record = await service.prisma.idempotencyRecord.findUnique({
          where: { idempotentKey: idempotencyKeyFor(id, 'MAIN') },
        });
        assert.equal(record?.source, vendor, 'the key is claimed before the reply');
        goingOnAfterReply.add(idempotencyKeyFor(id, 'MAIN'));
      }
      await proxy.setMode({ kind: 'pass' });
      for (const [vendor, id] of [
        ['feishu', fs],
        ['dingtalk', dt],
      ] as const) {
        const key = idempotencyKeyFor(id, 'MAIN');
        // The start reached Temporal (only its answer was lost): the order is written from the form.
        const written = await statusReaches(service, key, 'SUBMITTED');
        assert.deepEqual(
          (await ordersOf(key)).map((order) => order.orderNo),
          [written.orderNo],
        );
        const again = await post(vendor, vendor === 'feishu' ? feishuEvent(id, 'APPROVED') : dingtalkEvent(id), edge);
        assert.equal(again.statusCode, 200, again.body);
        assert.equal(await visibleRuns(service.temporal, `order-${key}`), 1, 'one run of order-<key>');
        assert.equal((await ordersOf(key)).length, 1);
      }
    });

    it('WeCom hears within its 5 s with the claim kept: a start failing inside the reply budget is a 503 WeCom resends, and the resent event is the one order', async () => {
      const sku = await createSku(service.prisma, 100);
      const id = instanceId('WCTEMP');
      const key = idempotencyKeyFor(id, 'MAIN');
      wecom.register(id, approvedWeComOrder(sku, 1, 2));
      await proxiedTemporal.workflowService.getSystemInfo({});
      await proxy.setMode({ kind: 'swallow-replies' });
      // WeCom's reply budget (3.3 s of its 5 s) outlasts this test's WEBHOOK_START_TIMEOUT_MS (2 s):
      // the start fails first, and the answer asks WeCom to send the event again.
      const startedAt = Date.now();
      const answer = await post('wecom', wecomEvent(id), edge);
      const tookMs = Date.now() - startedAt;
      assert.equal(answer.statusCode, 503, answer.body);
      assert.ok(tookMs < 5_000, `answered after ${tookMs} ms`);
      const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
      assert.equal(record?.source, 'wecom', 'the key is claimed before the answer');
      await proxy.setMode({ kind: 'pass' });
      const again = await post('wecom', wecomEvent(id), edge);
      assert.equal(again.statusCode, 200, again.body);
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal(await visibleRuns(service.temporal, `order-${key}`), 1, 'one run of order-<key>');
      assert.equal((await ordersOf(key)).length, 1);
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
      goingOnAfterReply.add(key);
      await logReaches('the start failed after the reply', key, 'approval event failed after its reply');
      await proxy.setMode({ kind: 'pass' });
      await statusReaches(service, key, 'SUBMITTED');
      await logReaches('the edge itself started it again', key, 'approval event started after its reply');
      assert.equal((await ordersOf(key)).length, 1);
    });
  });
});
