// The approval readers against fake Feishu, DingTalk and WeCom open APIs: real HTTP servers on
// 127.0.0.1 that issue expiring tokens and answer as each test scripts. No Temporal, no database.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { classifyError, requestedRetryDelayMs } from '../../domain/error-classification.js';
import { OaApiError } from '../../domain/errors.js';
import type { ApprovalReader } from '../../vendors/approval-reader.js';
import { createDingTalkReader } from '../../vendors/dingtalk/reader.js';
import { createFeishuReader } from '../../vendors/feishu/reader.js';
import { type FakeDingTalk, startFakeDingTalk } from '../../tools/harness/fake-dingtalk.js';
import { type FakeFeishu, startFakeFeishu } from '../../tools/harness/fake-feishu.js';
import {
  type FakeWeCom,
  startFakeWeCom,
  wecomMoney,
  wecomNumber,
  wecomTable,
  wecomText,
} from '../../tools/harness/fake-wecom.js';
import { createWeComReader } from '../../vendors/wecom/reader.js';
import type { FakeOaApi } from '../../tools/harness/fake-oa-api.js';

/** What a vendor's fake and reader share, so one set of tests covers both. */
interface Vendor {
  name: string;
  start: (tokenTtlSeconds?: number) => Promise<FakeOaApi<unknown>>;
  reader: (fake: FakeOaApi<unknown>, options?: { timeoutMs?: number; baseUrl?: string }) => ApprovalReader;
  /** Registers an approved instance whose form has Customer = ACME and a detail table Items with two rows. */
  registerApproved: (fake: FakeOaApi<unknown>, instanceId: string) => void;
  /** When registerApproved's instance was approved. */
  approvedAt: string;
}

const APPROVED_AT = '2026-11-29T10:00:00.000Z';

const feishu: Vendor = {
  name: 'feishu',
  start: async (tokenTtlSeconds) => (await startFakeFeishu({ tokenTtlSeconds })) as FakeOaApi<unknown>,
  reader: (fake, options) =>
    createFeishuReader({
      appId: (fake as FakeFeishu).appId,
      appSecret: (fake as FakeFeishu).appSecret,
      baseUrl: fake.url,
      timeoutMs: 2_000,
      ...options,
    }),
  registerApproved: (fake, instanceId) =>
    (fake as FakeFeishu).register(instanceId, {
      status: 'APPROVED',
      endTime: String(Date.parse(APPROVED_AT)),
      form: [
        { id: 'w1', name: 'Customer', type: 'input', value: 'ACME' },
        { id: 'w2', name: 'Total', type: 'amount', value: 129.5 },
        {
          id: 'w3',
          name: 'Items',
          type: 'fieldList',
          value: [
            [
              { id: 'c1', name: 'SKU', type: 'input', value: 'SKU-1' },
              { id: 'c2', name: 'Quantity', type: 'number', value: 2 },
            ],
            [
              { id: 'c1', name: 'SKU', type: 'input', value: 'SKU-2' },
              { id: 'c2', name: 'Quantity', type: 'number', value: 5 },
            ],
          ],
        },
      ],
    }),
  approvedAt: APPROVED_AT,
};

const dingtalk: Vendor = {
  name: 'dingtalk',
  start: async (tokenTtlSeconds) => (await startFakeDingTalk({ tokenTtlSeconds })) as FakeOaApi<unknown>,
  reader: (fake, options) =>
    createDingTalkReader({
      appKey: (fake as FakeDingTalk).appKey,
      appSecret: (fake as FakeDingTalk).appSecret,
      baseUrl: fake.url,
      timeoutMs: 2_000,
      ...options,
    }),
  registerApproved: (fake, instanceId) =>
    (fake as FakeDingTalk).register(instanceId, {
      status: 'COMPLETED',
      result: 'agree',
      finishTime: '2026-11-29T10:00Z',
      formComponentValues: [
        { id: 'TextField-1', name: 'Customer', componentType: 'TextField', value: 'ACME' },
        { id: 'MoneyField-1', name: 'Total', componentType: 'MoneyField', value: '129.5' },
        {
          id: 'TableField-1',
          name: 'Items',
          componentType: 'TableField',
          value: JSON.stringify([
            {
              rowValue: [
                { label: 'SKU', value: 'SKU-1', key: 'TextField-2' },
                { label: 'Quantity', value: '2', key: 'NumberField-1' },
              ],
            },
            {
              rowValue: [
                { label: 'SKU', value: 'SKU-2', key: 'TextField-2' },
                { label: 'Quantity', value: '5', key: 'NumberField-1' },
              ],
            },
          ]),
        },
      ],
    }),
  approvedAt: APPROVED_AT,
};

const wecom: Vendor = {
  name: 'wecom',
  start: async (tokenTtlSeconds) => (await startFakeWeCom({ tokenTtlSeconds })) as FakeOaApi<unknown>,
  reader: (fake, options) =>
    createWeComReader({
      corpId: (fake as FakeWeCom).corpId,
      agentSecret: (fake as FakeWeCom).agentSecret,
      baseUrl: fake.url,
      timeoutMs: 2_000,
      ...options,
    }),
  registerApproved: (fake, instanceId) =>
    (fake as FakeWeCom).register(instanceId, {
      spStatus: 2,
      decidedAt: Date.parse(APPROVED_AT) / 1000,
      contents: [
        wecomText('Customer', 'ACME'),
        wecomMoney('Total', '129.5'),
        wecomTable('Items', [
          [wecomText('SKU', 'SKU-1'), wecomNumber('Quantity', 2)],
          [wecomText('SKU', 'SKU-2'), wecomNumber('Quantity', 5)],
        ]),
      ],
    }),
  approvedAt: APPROVED_AT,
};

async function rejection(promise: Promise<unknown>): Promise<OaApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof OaApiError, `an OaApiError, not ${String(error)}`);
    return error;
  }
  return assert.fail('the read succeeded');
}

for (const vendor of [feishu, dingtalk, wecom]) {
  describe(`${vendor.name} reader`, () => {
    let fake: FakeOaApi<unknown>;
    before(async () => {
      fake = await vendor.start();
    });
    after(async () => {
      await fake.close();
    });

    it('reads an approved instance and normalises its form, detail table included', async () => {
      vendor.registerApproved(fake, 'A-1');
      const instance = await vendor.reader(fake).readInstance('A-1');
      assert.deepEqual(instance, {
        vendor: vendor.name,
        instanceId: 'A-1',
        status: 'APPROVED',
        approvedAt: vendor.approvedAt,
        form: {
          fields: { Customer: 'ACME', Total: '129.5' },
          tables: {
            Items: [
              { SKU: 'SKU-1', Quantity: '2' },
              { SKU: 'SKU-2', Quantity: '5' },
            ],
          },
        },
      });
    });

    it('asks for one token for many reads, concurrent ones included', async () => {
      vendor.registerApproved(fake, 'A-2');
      const reader = vendor.reader(fake);
      const tokensBefore = fake.tokenRequests();
      await Promise.all(Array.from({ length: 5 }, () => reader.readInstance('A-2')));
      for (let i = 0; i < 5; i += 1) await reader.readInstance('A-2');
      assert.equal(fake.tokenRequests() - tokensBefore, 1);
      assert.equal(fake.reads('A-2'), 10);
    });

    it('gets a new token when the old one was revoked, and the read succeeds', async () => {
      vendor.registerApproved(fake, 'A-3');
      const reader = vendor.reader(fake);
      await reader.readInstance('A-3');
      const tokensBefore = fake.tokenRequests();
      fake.revokeTokens();
      assert.equal((await reader.readInstance('A-3')).status, 'APPROVED');
      assert.equal(fake.tokenRequests() - tokensBefore, 1);
      assert.equal(fake.reads('A-3'), 3, 'the refused read, then the one read again');
    });

    it('refreshes the token once on 403, reads once more, then fails for good with 403', async () => {
      vendor.registerApproved(fake, 'A-4');
      const reader = vendor.reader(fake);
      const tokensBefore = fake.tokenRequests();
      fake.script('A-4', [
        { kind: 'status', status: 403 },
        { kind: 'status', status: 403 },
      ]);
      const error = await rejection(reader.readInstance('A-4'));
      assert.equal(error.status, 403);
      assert.equal(error.vendor, vendor.name);
      assert.equal(fake.reads('A-4'), 2, 'one read and one retry, no more');
      assert.equal(fake.tokenRequests() - tokensBefore, 2, 'the first token and one refresh');
      assert.deepEqual(
        { errorClass: classifyError(error).errorClass, retryable: classifyError(error).retryable },
        { errorClass: 'OaApiRefused', retryable: false },
      );
    });

    it('reports 500 once, retryable by the table, without looping itself', async () => {
      vendor.registerApproved(fake, 'A-5');
      fake.script('A-5', [{ kind: 'status', status: 500 }]);
      const error = await rejection(vendor.reader(fake).readInstance('A-5'));
      assert.equal(error.status, 500);
      assert.equal(fake.reads('A-5'), 1);
      assert.equal(classifyError(error).retryable, true);
      assert.equal(classifyError(error).errorClass, 'OaApiUnavailable');
      // The next attempt (the caller's retry) reads the instance.
      assert.equal((await vendor.reader(fake).readInstance('A-5')).status, 'APPROVED');
    });

    it('carries 429 Retry-After to the retry policy', async () => {
      vendor.registerApproved(fake, 'A-6');
      fake.script('A-6', [{ kind: 'status', status: 429, retryAfter: '7' }]);
      const error = await rejection(vendor.reader(fake).readInstance('A-6'));
      assert.equal(error.status, 429);
      assert.equal(error.retryAfterMs, 7_000);
      assert.equal(classifyError(error).errorClass, 'OaApiRateLimited');
      assert.equal(requestedRetryDelayMs(error), 7_000);
    });

    it('gives up on a hanging read after the per-request timeout, retryable', async () => {
      vendor.registerApproved(fake, 'A-7');
      fake.script('A-7', [{ kind: 'hang' }]);
      const reader = vendor.reader(fake, { timeoutMs: 300 });
      await reader.readInstance('A-2'); // the token, so the clock below times the read alone
      const started = Date.now();
      const error = await rejection(reader.readInstance('A-7'));
      const elapsed = Date.now() - started;
      assert.equal(error.status, undefined);
      assert.match(error.message, /no answer within 300 ms/);
      assert.ok(elapsed >= 250 && elapsed < 2_000, `gave up after ${elapsed} ms`);
      assert.equal(classifyError(error).retryable, true);
    });

    it('reports a refused connection without a status, retryable', async () => {
      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const error = await rejection(vendor.reader(fake, { baseUrl: `http://127.0.0.1:${port}` }).readInstance('A-1'));
      assert.equal(error.status, undefined);
      assert.equal(classifyError(error).errorClass, 'OaApiUnavailable');
    });

    it('refuses an unknown instance for good', async () => {
      const error = await rejection(vendor.reader(fake).readInstance('does-not-exist'));
      assert.equal(error.status, 400);
      assert.equal(classifyError(error).retryable, false);
    });

    it('refreshes a short-lived token before it expires', async () => {
      const shortLived = await vendor.start(1);
      try {
        vendor.registerApproved(shortLived, 'A-8');
        const reader = vendor.reader(shortLived);
        await reader.readInstance('A-8');
        await reader.readInstance('A-8');
        assert.equal(shortLived.tokenRequests(), 1);
        await new Promise((resolve) => setTimeout(resolve, 600));
        await reader.readInstance('A-8');
        assert.equal(shortLived.tokenRequests(), 2, 'a new token past half its lifetime');
        assert.equal(shortLived.reads('A-8'), 3, 'no read was refused for an expired token');
      } finally {
        await shortLived.close();
      }
    });
  });
}

describe('wecom reader: the errcodes WeCom answers under HTTP 200', () => {
  let fake: FakeWeCom;
  before(async () => {
    fake = await startFakeWeCom();
  });
  after(async () => {
    await fake.close();
  });
  const reader = () => createWeComReader({ corpId: fake.corpId, agentSecret: fake.agentSecret, baseUrl: fake.url });

  it('an invalid-token errcode (42001) refreshes the token once and the read succeeds', async () => {
    wecom.registerApproved(fake as FakeOaApi<unknown>, 'W-1');
    const read = reader();
    await read.readInstance('W-1');
    const tokensBefore = fake.tokenRequests();
    fake.script('W-1', [{ kind: 'token-invalid' }]);
    assert.equal((await read.readInstance('W-1')).status, 'APPROVED');
    assert.equal(fake.tokenRequests() - tokensBefore, 1, 'one refresh');
    assert.equal(fake.reads('W-1'), 3);
  });

  it('invalid twice is refused for good after one refresh (401), not retried', async () => {
    wecom.registerApproved(fake as FakeOaApi<unknown>, 'W-2');
    fake.script('W-2', [{ kind: 'token-invalid' }, { kind: 'token-invalid' }]);
    const error = await rejection(reader().readInstance('W-2'));
    assert.equal(error.status, 401);
    assert.match(error.message, /errcode 42001/);
    assert.equal(fake.reads('W-2'), 2);
    assert.equal(classifyError(error).retryable, false);
  });

  it('the frequency limit (errcode 45009 under HTTP 200) is rate-limited, and retried by the table', async () => {
    wecom.registerApproved(fake as FakeOaApi<unknown>, 'W-3');
    fake.script('W-3', [{ kind: 'status', status: 429 }]);
    const limited = await rejection(reader().readInstance('W-3'));
    assert.match(limited.message, /HTTP 200, errcode 45009/);
    assert.deepEqual([limited.status, classifyError(limited).errorClass], [429, 'OaApiRateLimited']);
    assert.equal(classifyError(limited).retryable, true);
  });

  it('a wrong secret is refused at the token for good (401), and the secret is in no message', async () => {
    const error = await rejection(
      createWeComReader({ corpId: fake.corpId, agentSecret: 'not-the-secret', baseUrl: fake.url }).readInstance('W-4'),
    );
    assert.equal(error.status, 401);
    assert.match(error.message, /errcode 40001/);
    assert.doesNotMatch(error.message, /not-the-secret|corpsecret/);
    assert.equal(classifyError(error).retryable, false);
  });
});
