// Orders from OA approvals, end to end through the real start path, a real worker, Temporal and
// PostgreSQL. Only the vendor seams are stand-ins: a connector that reads plaintext
// `{eventId, instanceId, status}` and an approval reader whose answers each test scripts. This file
// owns the start path every connector shares (concurrent deliveries → one order, a read retried or
// compensated by its error); the vendors' crypto, replies and deadlines are oa-vendors.test.ts's.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import type { Connector, InboundCallback } from '../../vendors/connector.js';
import { OaApiError } from '../../domain/errors.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import type { OaInstanceStatus, OaVendor } from '../../domain/oa-approval.js';
import type { ApprovalInstance, ApprovalReader } from '../../vendors/approval-reader.js';
import {
  createSku,
  recordedLastError,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  visibleRuns,
} from '../../tools/harness/service.js';
import { sleep } from '../../tools/harness/time.js';
import { cliInProcess } from '../../tools/harness/operator-cli.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAPPING = path.join(ROOT, 'examples/oa-form-mapping.json');

/** A Feishu-like connector without the crypto: the body is `{eventId, instanceId, status}` as JSON. */
function plaintextConnector(vendor: OaVendor, vendorDeadlineMs: number): Connector {
  return {
    vendor,
    vendorDeadlineMs,
    read(request): InboundCallback {
      let body: { eventId?: string; instanceId?: string; status?: OaInstanceStatus; challenge?: string };
      try {
        body = JSON.parse(request.rawBody.toString('utf8')) as typeof body;
      } catch {
        return { kind: 'refused', reason: 'not JSON' };
      }
      if (body.challenge) return { kind: 'challenge', reply: { status: 200, body: { challenge: body.challenge } } };
      if (!body.eventId || !body.instanceId || !body.status) {
        return { kind: 'other', eventType: 'something_else', ack: { status: 200, body: { ok: true } } };
      }
      return {
        kind: 'event',
        event: {
          vendor,
          eventId: body.eventId,
          eventType: 'approval_instance',
          instanceId: body.instanceId,
          status: body.status,
          definitionCode: undefined,
        },
        ack: { status: 200, body: { ok: true } },
      };
    },
  };
}

type ScriptedAnswer = ApprovalInstance | Error | Promise<ApprovalInstance>;

/**
 * An approval reader whose answers the test scripts per instance: each read takes the next one. A
 * promise is an answer the test gives when it is ready.
 */
class ScriptedReader implements ApprovalReader {
  readonly reads = new Map<string, number>();
  private readonly answers = new Map<string, ScriptedAnswer[]>();
  constructor(readonly vendor: OaVendor) {}

  script(instanceId: string, ...answers: ScriptedAnswer[]): void {
    this.answers.set(instanceId, answers);
  }

  readInstance(instanceId: string): Promise<ApprovalInstance> {
    this.reads.set(instanceId, (this.reads.get(instanceId) ?? 0) + 1);
    const answers = this.answers.get(instanceId) ?? [];
    // The last answer stays: a vendor keeps answering the same once it settled.
    const answer = answers.length > 1 ? answers.shift() : answers[0];
    if (!answer) return Promise.reject(new OaApiError(this.vendor, 404, undefined, `no such instance ${instanceId}`));
    if (answer instanceof Promise) return answer;
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  }
}

/** A form as the example mapping reads it (Feishu: currency is a field). */
function approvedInstance(
  instanceId: string,
  lines: { sku: string; quantity: string; unitPrice: string }[],
  overrides: Partial<ApprovalInstance> = {},
): ApprovalInstance {
  return {
    vendor: 'feishu',
    instanceId,
    status: 'APPROVED',
    approvedAt: '2026-12-01T09:30:00+08:00',
    form: {
      fields: { 'Customer ID': 'CUST-OA-1', Currency: 'CNY', Reason: 'restock' },
      tables: {
        Items: lines.map((line) => ({ SKU: line.sku, Quantity: line.quantity, 'Unit price': line.unitPrice })),
      },
    },
    ...overrides,
  };
}

const instanceId = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
const eventId = () => `ev-${randomBytes(6).toString('hex')}`;

describe('orders from OA approvals (Feishu/DingTalk connectors)', () => {
  let service: TestService;
  const reader = new ScriptedReader('feishu');

  before(async () => {
    service = await startTestService({
      config: testConfig({ OA_FORM_MAPPING: MAPPING, WEBHOOK_START_TIMEOUT_MS: '2000' }),
      readers: { feishu: reader },
      // Feishu's own 3 s is oa-vendors.test.ts's to hold; here a deadline a loaded machine meets, so
      // five deliveries at once are never shed for its time (seen at 3 s with the machine busy).
      connectors: { feishu: plaintextConnector('feishu', 15_000) },
    });
  });
  after(async () => {
    await service.stop();
  });

  const deliver = (body: unknown, vendor: OaVendor = 'feishu') =>
    service.app.inject({
      method: 'POST',
      url: `/webhooks/${vendor}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });

  const oaEvents = (instance: string) =>
    service.prisma.oaEvent.findMany({ where: { instanceId: instance }, orderBy: { receivedAt: 'asc' } });
  const ordersOf = (key: string) =>
    service.prisma.orderMain.findMany({ where: { idempotentKey: key }, include: { lines: true } });

  it('an APPROVED event delivered 5× at once and again later is one order with the mapped lines', async () => {
    const [apple, pear] = [await createSku(service.prisma, 100), await createSku(service.prisma, 100)];
    const id = instanceId('FS');
    const key = idempotencyKeyFor(id, 'MAIN');
    reader.script(
      id,
      approvedInstance(id, [
        { sku: pear, quantity: '3', unitPrice: '4.5' },
        { sku: apple, quantity: '2', unitPrice: '10.00' },
      ]),
    );
    const first = eventId();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => deliver({ eventId: first, instanceId: id, status: 'APPROVED' })),
    );
    assert.deepEqual(
      answers.map((answer) => [answer.statusCode, answer.json<unknown>()]),
      Array.from({ length: 5 }, () => [200, { ok: true }]),
      'every delivery gets the connector ack',
    );
    const written = await statusReaches(service, key, 'SUBMITTED');
    // A second event of the same instance (Feishu sends one per status change): the same order.
    const later = await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' });
    assert.equal(later.statusCode, 200);

    const orders = await ordersOf(key);
    assert.equal(orders.length, 1, 'one order for the instance');
    const [order] = orders;
    assert.equal(order?.orderNo, written.orderNo, 'the order is the one the status names');
    assert.equal(order?.customerId, 'CUST-OA-1');
    assert.equal(order?.currency, 'CNY');
    assert.equal(order?.totalAmount.toString(), '33.5');
    const lineOf = (sku: string) => order?.lines.find((line) => line.sku === sku);
    assert.equal(order?.lines.length, 2);
    assert.deepEqual([lineOf(apple)?.quantity, lineOf(apple)?.unitPrice.toFixed(2)], [2, '10.00']);
    assert.deepEqual([lineOf(pear)?.quantity, lineOf(pear)?.unitPrice.toFixed(2)], [3, '4.50']);
    const events = await oaEvents(id);
    assert.equal(events.length, 2, 'one oa_event row per vendor event id');
    assert.ok(events.every((event) => event.idempotentKey === key && event.vendor === 'feishu'));
    const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
    assert.equal(record?.source, 'feishu');
    assert.equal(record?.fingerprint, order?.fingerprint, 'the record names the mapped order');
    assert.equal(reader.reads.get(id), 1, 'the form was read once');
  });

  it('an unmappable form goes to compensation with the reason, and waits in `orders-cli awaiting`', async () => {
    const sku = await createSku(service.prisma, 10);
    const id = instanceId('FSBAD');
    const key = idempotencyKeyFor(id, 'MAIN');
    reader.script(id, approvedInstance(id, [{ sku, quantity: 'two', unitPrice: '1.00' }]));
    assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' })).statusCode, 200);

    const view = await statusReaches(service, key, 'COMPENSATING');
    assert.equal(view.lastError?.code, 'unmappable-form');
    const recorded = await recordedLastError(service, key);
    assert.match(recorded, /^UnmappableForm: /);
    assert.match(recorded, /table "Items" row 1 column "Quantity": must be a whole number/);
    assert.equal(reader.reads.get(id), 1, 'a business failure is not retried');
    assert.equal((await ordersOf(key)).length, 0);

    const run = await cliInProcess(service, ['awaiting', '--json', '--limit', '1000']);
    assert.equal(run.code, 0, run.stderr);
    const row = (JSON.parse(run.stdout) as { idempotencyKey: string; status: string; reason: string }[]).find(
      (candidate) => candidate.idempotencyKey === key,
    );
    assert.equal(row?.status, 'COMPENSATING');
    assert.match(row?.reason ?? '', /must be a whole number/);
  });

  it('after an operator abandons an unmappable approval, its redelivered events start nothing', async () => {
    const sku = await createSku(service.prisma, 10);
    const id = instanceId('FSABAN');
    const key = idempotencyKeyFor(id, 'MAIN');
    reader.script(id, approvedInstance(id, [{ sku, quantity: 'two', unitPrice: '1.00' }]));
    assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' })).statusCode, 200);
    await statusReaches(service, key, 'COMPENSATING');
    const abandon = await cliInProcess(service, ['abandon', key]);
    assert.equal(abandon.code, 0, abandon.stderr);
    await statusReaches(service, key, 'COMPENSATED');

    // The form is fixed in the OA afterwards, and the vendor sends the event again: nothing starts.
    reader.script(id, approvedInstance(id, [{ sku, quantity: '2', unitPrice: '1.00' }]));
    for (let delivery = 0; delivery < 3; delivery += 1) {
      assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' })).statusCode, 200);
    }
    await sleep(1_000);
    assert.equal(await visibleRuns(service.temporal, `order-${key}`), 1, 'one run of order-<key>, the first');
    assert.equal(reader.reads.get(id), 1, 'the form was not read again');
    assert.equal((await statusReaches(service, key, 'COMPENSATED')).status, 'COMPENSATED');
    assert.equal((await ordersOf(key)).length, 0);
  });

  it('an OA API answering 500 and then the instance is retried into one order', async () => {
    const sku = await createSku(service.prisma, 10);
    const id = instanceId('FS500');
    const key = idempotencyKeyFor(id, 'MAIN');
    reader.script(
      id,
      new OaApiError('feishu', 500, undefined, 'feishu answered 500'),
      approvedInstance(id, [{ sku, quantity: '1', unitPrice: '2.00' }]),
    );
    assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' })).statusCode, 200);
    const view = await statusReaches(service, key, 'SUBMITTED');
    assert.equal(reader.reads.get(id), 2, 'read again after the 500');
    assert.equal((await ordersOf(key)).length, 1);
    assert.ok(view.orderNo);
  });

  it('an OA API refusing the read (403) is not retried: compensation with the reason', async () => {
    const id = instanceId('FS403');
    const key = idempotencyKeyFor(id, 'MAIN');
    reader.script(id, new OaApiError('feishu', 403, undefined, 'feishu refused the read: no permission (403)'));
    assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' })).statusCode, 200);
    const view = await statusReaches(service, key, 'COMPENSATING');
    assert.equal(view.lastError?.code, 'oa-refused');
    assert.match(await recordedLastError(service, key), /feishu refused the read: no permission \(403\)/);
    assert.equal(reader.reads.get(id), 1, 'a refused read is not retried');
    assert.equal((await ordersOf(key)).length, 0);
  });

  it('REVOKED after the order raises one operator alert and leaves the order untouched', async () => {
    const sku = await createSku(service.prisma, 10);
    const id = instanceId('FSREV');
    const key = idempotencyKeyFor(id, 'MAIN');
    reader.script(id, approvedInstance(id, [{ sku, quantity: '1', unitPrice: '5.00' }]));
    assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' })).statusCode, 200);
    const written = await statusReaches(service, key, 'SUBMITTED');

    const revoked = eventId();
    for (const body of [
      { eventId: revoked, instanceId: id, status: 'REVOKED' },
      { eventId: revoked, instanceId: id, status: 'REVOKED' },
      { eventId: eventId(), instanceId: id, status: 'CANCELED' },
    ]) {
      const answer = await deliver(body);
      assert.deepEqual([answer.statusCode, answer.json<unknown>()], [200, { ok: true }]);
    }
    const alerts = await service.prisma.duplicateAlert.findMany({ where: { clusterKey: key } });
    assert.equal(alerts.length, 1, 'one alert, however many revocations');
    assert.equal(alerts[0]?.kind, 'REVOKED_AFTER_ORDER');
    assert.deepEqual(alerts[0]?.orderNos, [written.orderNo]);
    assert.match(
      alerts[0]?.detail ?? '',
      new RegExp(`approval ${id} was REVOKED in feishu and its order ${written.orderNo} is written`),
    );

    const orders = await ordersOf(key);
    assert.equal(orders.length, 1, 'the order stands');
    assert.equal((await statusReaches(service, key, 'SUBMITTED')).orderNo, written.orderNo);
    assert.equal((await oaEvents(id)).length, 3, 'APPROVED, REVOKED (once) and CANCELED are recorded');

    const listed = await cliInProcess(service, ['alerts', '--json', '--limit', '1000']);
    assert.equal(listed.code, 0, listed.stderr);
    const shown = (JSON.parse(listed.stdout) as { alerts: { kind: string; idempotentKeys: string[] }[] }).alerts;
    assert.deepEqual(
      shown.filter((alert) => alert.idempotentKeys.includes(key)).map((alert) => alert.kind),
      ['REVOKED_AFTER_ORDER'],
      'orders-cli alerts lists it',
    );
  });

  it('a revocation that arrives while the form is read and the order written still raises the alert', async () => {
    const sku = await createSku(service.prisma, 10);
    const id = instanceId('FSRACE');
    const key = idempotencyKeyFor(id, 'MAIN');
    // The first read fails and is retried after its backoff; the retried read answers only once
    // the revocation has landed, when there is no order yet to alert about, and still sees the approval.
    let answerRetriedRead = () => {};
    const retriedRead = new Promise<ApprovalInstance>((resolve) => {
      answerRetriedRead = () => resolve(approvedInstance(id, [{ sku, quantity: '1', unitPrice: '5.00' }]));
    });
    reader.script(id, new OaApiError('feishu', 503, undefined, 'unavailable'), retriedRead);
    assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' })).statusCode, 200);
    assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'REVOKED' })).statusCode, 200);
    assert.equal(await service.prisma.duplicateAlert.count({ where: { clusterKey: key } }), 0, 'no order yet');
    answerRetriedRead();

    const written = await statusReaches(service, key, 'SUBMITTED');
    const alerts = await service.prisma.duplicateAlert.findMany({ where: { clusterKey: key } });
    assert.deepEqual(
      alerts.map((alert) => [alert.kind, alert.orderNos]),
      [['REVOKED_AFTER_ORDER', [written.orderNo]]],
      'the write raised the alert the revocation could not',
    );
    assert.equal(reader.reads.get(id), 2);
  });

  it('REJECTED is acknowledged and recorded, and starts nothing', async () => {
    const id = instanceId('FSREJ');
    const key = idempotencyKeyFor(id, 'MAIN');
    const answer = await deliver({ eventId: eventId(), instanceId: id, status: 'REJECTED' });
    assert.deepEqual([answer.statusCode, answer.json<unknown>()], [200, { ok: true }]);
    const events = await oaEvents(id);
    assert.deepEqual(
      events.map((event) => [event.status, event.idempotentKey]),
      [['REJECTED', key]],
    );
    assert.equal(await service.prisma.idempotencyRecord.count({ where: { idempotentKey: key } }), 0);
    assert.equal(await workflowExists(service.temporal, `order-${key}`), false);
    assert.equal(reader.reads.get(id), undefined, 'the form is not even read');
  });

  it('a connector that is off answers 404 problem+json; a refused callback records nothing', async () => {
    const off = await deliver({ eventId: eventId(), instanceId: instanceId('DT'), status: 'APPROVED' }, 'dingtalk');
    assert.equal(off.statusCode, 404);
    assert.match(String(off.headers['content-type']), /^application\/problem\+json/);
    assert.match(off.json<{ detail: string }>().detail, /dingtalk connector is off/);

    const before = await service.prisma.oaEvent.count();
    const refused = await service.app.inject({ method: 'POST', url: '/webhooks/feishu', payload: '{not json' });
    assert.equal(refused.statusCode, 401);
    assert.match(String(refused.headers['content-type']), /^application\/problem\+json/);
    assert.equal(await service.prisma.oaEvent.count(), before);

    const challenge = await deliver({ challenge: 'c-123' });
    assert.deepEqual([challenge.statusCode, challenge.json<unknown>()], [200, { challenge: 'c-123' }]);
  });

  it('`orders-cli status --approval-no <instance id>` shows the order', async () => {
    const sku = await createSku(service.prisma, 10);
    const id = instanceId('FSCLI');
    const key = idempotencyKeyFor(id, 'MAIN');
    reader.script(id, approvedInstance(id, [{ sku, quantity: '2', unitPrice: '3.00' }]));
    assert.equal((await deliver({ eventId: eventId(), instanceId: id, status: 'APPROVED' })).statusCode, 200);
    const written = await statusReaches(service, key, 'SUBMITTED');
    const run = await cliInProcess(service, ['status', '--approval-no', id, '--json']);
    assert.equal(run.code, 0, run.stderr);
    const shown = JSON.parse(run.stdout) as { idempotencyKey: string; status: string; orderNo?: string };
    assert.equal(shown.idempotencyKey, key);
    assert.equal(shown.status, 'SUBMITTED');
    assert.equal(shown.orderNo, written.orderNo);
  });
});

async function workflowExists(temporal: Client, workflowId: string): Promise<boolean> {
  try {
    await temporal.workflow.getHandle(workflowId).describe();
    return true;
  } catch {
    return false;
  }
}
