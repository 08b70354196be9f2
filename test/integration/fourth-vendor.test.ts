// A fourth OA vendor is its folder and a registration: Acme (tools/harness/fourth-vendor/), with
// its own settings, signed callback and open-API reader, registered here the way a product vendor is
// one line of vendors/registry.ts. No other file knows it, and yet its settings are read, production
// guards its secrets and its API's address, its callback door opens, and one signed approval
// through it becomes exactly one order — through the real start path, a real worker, Temporal and
// PostgreSQL; its open API and its callbacks are the fake's (fake-acme.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../app/env.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { ConfigError } from '../../services/config/environment.js';
import { registerOaVendor } from '../../vendors/registry.js';
import { connectorStates } from '../../vendors/settings.js';
import type { FakeOaApi } from '../../tools/harness/fake-oa-api.js';
import { acmeCallback, type AcmeInstance, startFakeAcme } from '../../tools/harness/fourth-vendor/fake-acme.js';
import { acme } from '../../tools/harness/fourth-vendor/index.js';
import {
  createSku,
  startTestService,
  statusReaches,
  testConfig,
  testEnv,
  type TestService,
} from '../../tools/harness/service.js';

// Before the settings are loaded and the app is built: both read the registry's list each time.
registerOaVendor(acme);

const MAPPING = fileURLToPath(new URL('../../examples/oa-form-mapping.json', import.meta.url));
const APP_SECRET = `acme-app-${randomBytes(8).toString('hex')}`;
const SIGNING_SECRET = `acme-signing-${randomBytes(8).toString('hex')}`;
/** Feishu's callback on too, for the answer another door gives a forgery. */
const FEISHU = {
  FEISHU_APP_ID: 'cli_a1b2c3',
  FEISHU_APP_SECRET: 'feishu-secret-0123456789',
  FEISHU_ENCRYPT_KEY: 'feishu-encrypt-key-0123456789',
  FEISHU_VERIFICATION_TOKEN: 'feishu-token-0123456789',
};

const instanceId = () => `ACME-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;

describe('a fourth OA vendor, registered from a folder of its own', () => {
  let service: TestService;
  let fake: FakeOaApi<AcmeInstance>;
  const acmeEnv = () => ({
    ACME_APP_SECRET: APP_SECRET,
    ACME_SIGNING_SECRET: SIGNING_SECRET,
    ACME_API_BASE_URL: fake.url,
  });

  before(async () => {
    fake = await startFakeAcme(APP_SECRET);
    service = await startTestService({
      config: testConfig({ OA_FORM_MAPPING: MAPPING, ...acmeEnv(), ...FEISHU }),
    });
  });
  after(async () => {
    await service?.stop();
    await fake?.close();
  });

  const deliver = (callback: { headers: Record<string, string>; payload: string }, vendor = 'acme') =>
    service.app.inject({
      method: 'POST',
      url: `/webhooks/${vendor}`,
      headers: callback.headers,
      payload: callback.payload,
    });

  it('takes one signed approval through its callback door, delivered twice, to exactly one order', async () => {
    const [apple, pear] = [await createSku(service.prisma, 100), await createSku(service.prisma, 100)];
    const id = instanceId();
    const key = idempotencyKeyFor(id, 'MAIN');
    fake.register(id, {
      status: 'approved',
      approved_at: '2026-12-01T09:30:00+08:00',
      fields: { 'Customer ID': 'CUST-ACME-1', Currency: 'CNY' },
      items: [
        { SKU: apple, Quantity: '2', 'Unit price': '10.00' },
        { SKU: pear, Quantity: '3', 'Unit price': '4.5' },
      ],
    });

    const first = await deliver(acmeCallback(SIGNING_SECRET, id, 'approved'));
    assert.deepEqual([first.statusCode, first.json<unknown>()], [200, { received: true }], 'Acme hears its ack');
    const view = await statusReaches(service, key, 'SUBMITTED');
    // Acme sends the event again, as a vendor does: the same order, nothing new.
    const again = await deliver(acmeCallback(SIGNING_SECRET, id, 'approved'));
    assert.equal(again.statusCode, 200);

    const orders = await service.prisma.orderMain.findMany({ where: { idempotentKey: key }, include: { lines: true } });
    assert.equal(orders.length, 1, 'one order for the instance');
    const [order] = orders;
    assert.equal(order?.orderNo, view.orderNo, 'the order is the one GET /orders/<key> names');
    assert.equal(order?.customerId, 'CUST-ACME-1');
    assert.equal(order?.currency, 'CNY');
    assert.equal(order?.totalAmount.toString(), '33.5');
    assert.deepEqual(
      order?.lines.map((line) => [line.sku, line.quantity, line.unitPrice.toFixed(2)]).sort(),
      [
        [apple, 2, '10.00'],
        [pear, 3, '4.50'],
      ].sort(),
    );
    const record = await service.prisma.idempotencyRecord.findUniqueOrThrow({ where: { idempotentKey: key } });
    assert.equal(record.source, 'acme', "the key belongs to Acme's door");
    const events = await service.prisma.oaEvent.findMany({ where: { instanceId: id } });
    assert.equal(events.length, 2, 'one oa_event row per event Acme sent');
    assert.ok(events.every((event) => event.vendor === 'acme' && event.idempotentKey === key));
    assert.equal(fake.reads(id), 1, 'the form was read once, from Acme’s open API');
  });

  it('refuses a callback whose signature does not match with the answer every door gives, and records nothing', async () => {
    const id = instanceId();
    const genuine = acmeCallback(SIGNING_SECRET, id, 'approved');
    const forged = acmeCallback(`not-${SIGNING_SECRET}`, id, 'approved');
    const tampered = { ...genuine, payload: genuine.payload.replace('approved', 'pending') };
    const unsigned = { headers: { 'content-type': 'application/json' }, payload: genuine.payload };
    const feishuForgery = await deliver(unsigned, 'feishu');
    assert.equal(feishuForgery.statusCode, 401);
    for (const attempt of [forged, tampered, unsigned]) {
      const answer = await deliver(attempt);
      assert.deepEqual(
        [answer.statusCode, answer.headers['content-type'], answer.body],
        [feishuForgery.statusCode, feishuForgery.headers['content-type'], feishuForgery.body],
        "Acme's refusal is Feishu's, byte for byte",
      );
    }
    assert.equal(await service.prisma.oaEvent.count({ where: { instanceId: id } }), 0, 'nothing recorded');
    const key = idempotencyKeyFor(id, 'MAIN');
    assert.equal(await service.prisma.idempotencyRecord.count({ where: { idempotentKey: key } }), 0, 'no key claimed');
    assert.equal(fake.reads(id), 0, 'no form read');
  });

  it('is configured from its own settings: the start-up log names it, and production guards its secrets and API', () => {
    assert.deepEqual(connectorStates(service.config).vendors.acme, ['callback']);
    const off = loadConfig(testEnv({ OA_FORM_MAPPING: MAPPING }));
    assert.equal(connectorStates(off).vendors.acme, 'off', 'without its settings it is off');
    assert.throws(
      () => loadConfig(testEnv({ OA_FORM_MAPPING: MAPPING, ACME_APP_SECRET: APP_SECRET })),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.includes(
          'ACME_SIGNING_SECRET: required with ACME_APP_SECRET (the acme connector is partly configured)',
        ),
    );
    const inProduction = (overrides: Record<string, string>) => {
      try {
        loadConfig({ ...testEnv({ OA_FORM_MAPPING: MAPPING, ...acmeEnv(), ...overrides }), NODE_ENV: 'production' });
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        return error.problems;
      }
      return [];
    };
    const refused = inProduction({ ACME_SIGNING_SECRET: 'replace-me', ACME_API_BASE_URL: 'http://oa.acme.example' });
    assert.ok(
      refused.some((problem) => problem.startsWith('ACME_API_BASE_URL: must be an https:// URL in production')),
    );
    assert.ok(refused.some((problem) => problem.startsWith('ACME_SIGNING_SECRET: holds a placeholder')));
    assert.ok(!refused.join('\n').includes('oa.acme.example'), 'the refusal names the setting, not its value');
  });
});
