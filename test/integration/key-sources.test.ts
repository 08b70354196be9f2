// A key belongs to the door that claimed it (docs/architecture.md, decision 38). Generated pairs of
// doors — the signed webhook, MCP over HTTP, the Feishu, DingTalk and WeCom callbacks — deliver one
// approval, the second with the first's order or another: the first claim stands, a delivery
// through another door is refused with that door's usual conflict answer, counted for that door and
// listed by `awaiting`, and the first's order is the one order (none when it is short of stock).
// The webhook and MCP with the same order are one approval: a duplicate. And the squat the decision is about, step by step through the real
// CLI: a webhook claim of a WeCom approval number, then the real approval, which is not silent.
// Real routes, start path, worker, Temporal and PostgreSQL; only the vendors' open APIs are fakes.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client as McpClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import fc from 'fast-check';
import { ORDER_NAMING_DOORS } from '../../domain/door.js';
import { idempotencyKeyFor, type KeySource } from '../../domain/idempotency-key.js';
import { purgeExpiredRecords } from '../../services/db/retention.js';
import { noProductMetrics, type ProductMetrics } from '../../services/metrics/product-metrics.js';
import { type AwaitingDecision, listOrdersAwaitingDecision } from '../../submission/operator-decisions/awaiting.js';
import { oaVendorIds } from '../../vendors/registry.js';
import { approvedDingTalkOrder, dingtalkApprovalPayload, dingtalkCallback } from '../../tools/harness/fake-dingtalk.js';
import { approvedFeishuOrder, feishuApprovalPayload, feishuCallback } from '../../tools/harness/fake-feishu.js';
import { approvedWeComOrder, wecomApprovalXml, wecomCallback } from '../../tools/harness/fake-wecom.js';
import { assertDoorShapeChecked } from '../../tools/harness/door-shape.js';
import { type FakeVendors, startFakeVendors } from '../../tools/harness/fake-vendors.js';
import { answerOf } from '../../tools/harness/mcp-clients.js';
import { cliInProcess } from '../../tools/harness/operator-cli.js';
import {
  approval,
  createSku,
  eventually,
  orderCount,
  orderedQuantities,
  postApproval,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  until,
} from '../../tools/harness/service.js';

const MAPPING = fileURLToPath(new URL('../../examples/oa-form-mapping.json', import.meta.url));
const MCP_TOKEN = 'key-sources-mcp-token-0123456789abcdef';
/** Feishu's form of the example mapping names this customer; the other doors are given it too. */
const CUSTOMER = 'CUST-FS-1';
const UNIT_PRICE = 10.5;

/** What a door answered, in the webhook's terms; an OA connector always acknowledges (200). */
interface Answer {
  status: number;
  body: string;
}

describe('a key belongs to the door that claimed it', () => {
  let vendors: FakeVendors;
  let service: TestService;
  let mcp: McpClient;
  const refused = new Map<KeySource, number>();
  const metrics: ProductMetrics = {
    ...noProductMetrics(),
    keySourceConflict: (door) => refused.set(door, (refused.get(door) ?? 0) + 1),
  };

  before(async () => {
    vendors = await startFakeVendors();
    service = await startTestService({
      metrics,
      config: testConfig({ MCP_TOKEN, OA_FORM_MAPPING: MAPPING, ...vendors.settings }),
    });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    const address = service.app.server.address();
    assert.ok(address && typeof address === 'object');
    mcp = new McpClient({ name: 'key-sources-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${address.port}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${MCP_TOKEN}` } },
      }),
    );
  });
  after(async () => {
    await mcp.close();
    await service.stop();
    await vendors.close();
  });

  /** Delivers approval `approvalNo` (MAIN) of one line of `quantity` through `door`, as that door's sender does. */
  async function deliver(door: KeySource, approvalNo: string, sku: string, quantity: number): Promise<Answer> {
    const body = approval(approvalNo, sku, {
      order: { customerId: CUSTOMER, currency: 'CNY', lines: [{ sku, quantity, unitPrice: UNIT_PRICE.toFixed(2) }] },
    });
    switch (door) {
      case 'webhook': {
        const answer = await postApproval(service, body);
        return { status: answer.statusCode, body: answer.body };
      }
      case 'mcp': {
        const answer = await answerOf(mcp.callTool({ name: 'submit_approved_order', arguments: { ...body } }));
        const duplicate = answer.structured?.duplicate === true;
        return {
          status: answer.isError ? (/conflict/i.test(answer.text) ? 422 : 500) : duplicate ? 200 : 202,
          body: answer.text,
        };
      }
      case 'feishu': {
        vendors.feishu.register(approvalNo, approvedFeishuOrder(sku, quantity, UNIT_PRICE));
        const callback = feishuCallback(feishuApprovalPayload({ instanceCode: approvalNo, status: 'APPROVED' }), {
          encryptKey: vendors.secrets.feishuEncryptKey,
          token: vendors.secrets.feishuToken,
          sign: true,
        });
        return callbackAnswer('feishu', callback);
      }
      case 'dingtalk': {
        vendors.dingtalk.register(approvalNo, approvedDingTalkOrder(sku, quantity, UNIT_PRICE, CUSTOMER));
        const callback = dingtalkCallback(
          dingtalkApprovalPayload({ processInstanceId: approvalNo, type: 'finish', result: 'agree' }),
          {
            aesKey: vendors.secrets.dingtalkAesKey,
            token: vendors.secrets.dingtalkToken,
            appKey: vendors.dingtalk.appKey,
          },
        );
        return callbackAnswer('dingtalk', callback);
      }
      case 'wecom': {
        const { wecom, secrets } = vendors;
        wecom.register(approvalNo, approvedWeComOrder(sku, quantity, UNIT_PRICE, CUSTOMER));
        const crypto = { token: secrets.wecomToken, encodingAesKey: secrets.wecomAesKey, corpId: wecom.corpId };
        return callbackAnswer(
          'wecom',
          wecomCallback(wecomApprovalXml({ corpId: wecom.corpId, spNo: approvalNo, spStatus: 2 }), crypto),
        );
      }
      default:
        throw new Error(`no sender for the door ${door}`);
    }
  }

  /** A vendor callback, sent again on 503 as the vendor would (a fresh service on a loaded machine may shed it). */
  async function callbackAnswer(
    vendor: 'feishu' | 'dingtalk' | 'wecom',
    callback: { headers: Record<string, string>; query?: Record<string, string>; rawBody: string | Buffer },
  ): Promise<Answer> {
    const send = () =>
      service.app.inject({
        method: 'POST',
        url: `/webhooks/${vendor}`,
        headers: callback.headers,
        ...(callback.query ? { query: callback.query } : {}),
        payload: callback.rawBody,
      });
    let answer = await send();
    for (let sent = 1; answer.statusCode === 503 && sent < 5; sent++) answer = await send();
    return { status: answer.statusCode, body: answer.body };
  }

  const conflictsListed = async (key: string): Promise<AwaitingDecision[]> =>
    (await listOrdersAwaitingDecision(service.prisma, 1000)).filter(
      (entry) => entry.idempotencyKey === key && entry.status === 'KEY_SOURCE_CONFLICT',
    );

  /** The doors that name their order: the same order through either is one approval. */
  const ORDER_NAMING = new Set<KeySource>(['webhook', 'mcp']);

  it('a door is checked by its shape, not by a list: a name is taken where a door is named exactly when it fits (generated)', async () => {
    await assertDoorShapeChecked(service.prisma);
  });

  it('the first door keeps the key; another door is refused, counted for it and listed; only the first order can be written', async () => {
    const doors = fc.constantFrom(...ORDER_NAMING_DOORS, ...oaVendorIds());
    await fc.assert(
      fc.asyncProperty(doors, doors, fc.boolean(), fc.boolean(), async (first, second, sameOrder, inStock) => {
        const approvalNo = uniqueApprovalNo('KS');
        const key = idempotencyKeyFor(approvalNo, 'MAIN');
        // Short of stock, the first claim's order is never written: it waits in compensation.
        const sku = await createSku(service.prisma, inStock ? 100 : 1);
        const firstAnswer = await deliver(first, approvalNo, sku, 2);
        assert.ok([200, 202].includes(firstAnswer.status), `${first} first: ${firstAnswer.status} ${firstAnswer.body}`);
        await statusReaches(service, key, inStock ? 'SUBMITTED' : 'COMPENSATING');
        const before = refused.get(second) ?? 0;

        const answer = await deliver(second, approvalNo, sku, sameOrder ? 2 : 3);

        const where = `${first} then ${second}, ${sameOrder ? 'the same order' : 'another order'}${inStock ? '' : ', the first short of stock'}`;
        const anotherDoor = first !== second && !(sameOrder && ORDER_NAMING.has(first) && ORDER_NAMING.has(second));
        if (anotherDoor) {
          if (second === 'webhook') {
            assert.equal(answer.status, 422, where);
            const problem = JSON.parse(answer.body) as { type: string; detail: string; differences: string[] };
            assert.match(problem.type, /idempotency-key-conflict$/, where);
            assert.deepEqual(problem.differences, [], `${where}: the answer names no difference`);
            assert.doesNotMatch(problem.detail, new RegExp(first), `${where}: nor the door that holds the key`);
          } else if (second === 'mcp') {
            assert.equal(answer.status, 422, `${where}: ${answer.body}`);
            assert.doesNotMatch(
              answer.body,
              new RegExp(first),
              `${where}: the answer names not the door holding the key`,
            );
          } else assert.equal(answer.status, 200, `${where}: the vendor is acknowledged as always`);
          await until(`${where}: counted for ${second}`, () => refused.get(second) === before + 1);
          const listed = await eventually(`${where}: listed by awaiting`, async () => {
            const entries = await conflictsListed(key);
            return entries.length > 0 ? entries : undefined;
          });
          assert.equal(listed.length, 1, where);
          assert.match(listed[0]?.reason ?? '', new RegExp(`a ${second} delivery .* claimed through ${first}`), where);
          assert.deepEqual(listed[0]?.nextActions, ['clear-conflict'], where);
          const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
          assert.equal(record?.source, first, `${where}: the first claim stands`);
        } else {
          const expected =
            second === 'webhook'
              ? sameOrder || first !== second
                ? 200
                : 422
              : second === 'mcp'
                ? sameOrder
                  ? 200
                  : 422
                : 200;
          assert.equal(answer.status, expected, `${where}: ${answer.body}`);
          assert.equal(refused.get(second) ?? 0, before, `${where}: not counted`);
          assert.deepEqual(await conflictsListed(key), [], `${where}: not listed`);
        }
        if (inStock)
          assert.deepEqual(await orderedQuantities(service.prisma, key), [2], `${where}: one order, the first's`);
        else assert.equal(await orderCount(service.prisma, key), 0, `${where}: no order`);
      }),
      { numRuns: 40 },
    );
  });

  it('a webhook claim of a WeCom approval number before the approval: the real approval is counted, listed, and cleared by an operator', async () => {
    // WeCom's SpNo is a date and a sequence: whoever holds WEBHOOK_SECRET can guess tomorrow's.
    const spNo = `${new Date().toISOString().slice(0, 10).replaceAll('-', '')}${randomInt(1e9, 1e10)}`;
    const key = idempotencyKeyFor(spNo, 'MAIN');
    const sku = await createSku(service.prisma, 100);
    const squat = approval(spNo, sku, {
      order: { customerId: 'CUST-SQUAT', currency: 'CNY', lines: [{ sku, quantity: 1, unitPrice: '0.01' }] },
    });
    assert.equal((await postApproval(service, squat)).statusCode, 202);
    await statusReaches(service, key, 'SUBMITTED');
    const before = refused.get('wecom') ?? 0;

    const real = await deliver('wecom', spNo, sku, 5);
    assert.equal(real.status, 200, 'WeCom is acknowledged as always');
    await until('the refusal to be counted for wecom', () => refused.get('wecom') === before + 1);
    assert.equal(vendors.wecom.reads(spNo), 0, 'the form of an approval whose key another door holds is not read');
    assert.deepEqual(await orderedQuantities(service.prisma, key), [1], 'the squat is the one order');

    const awaiting = await cliInProcess(service, ['awaiting', '--json', '--limit', '1000', '--unconfirmed-after', '0']);
    assert.equal(awaiting.code, 0, awaiting.stderr);
    const entry = (JSON.parse(awaiting.stdout) as AwaitingDecision[]).find(
      (row) => row.idempotencyKey === key && row.status === 'KEY_SOURCE_CONFLICT',
    );
    assert.ok(entry, `awaiting lists the refused approval: ${awaiting.stdout.slice(0, 500)}`);
    assert.match(entry.reason, /a wecom delivery was refused: the key was claimed through webhook/);
    assert.deepEqual([entry.nextActions, entry.attempts, entry.customerId], [['clear-conflict'], 1, 'CUST-SQUAT']);
    const table = await cliInProcess(service, ['awaiting', '--limit', '1000', '--unconfirmed-after', '0']);
    assert.match(table.stdout, new RegExp(`${key}\\s+KEY_SOURCE_CONFLICT\\s+clear-conflict`));

    const cleared = await cliInProcess(service, ['clear-conflict', key, '--door', 'wecom', '--by', 'key-sources-test']);
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.deepEqual(await conflictsListed(key), [], 'cleared: no longer listed');
    const row = await service.prisma.keySourceConflict.findUnique({
      where: { idempotentKey_door: { idempotentKey: key, door: 'wecom' } },
    });
    assert.equal(row?.clearedBy, 'key-sources-test');
    assert.equal((await cliInProcess(service, ['clear-conflict', key])).code, 1, 'nothing left to clear');
    assert.equal(
      (await cliInProcess(service, ['clear-conflict', key, '--door', 'No_Where'])).code,
      2,
      "a name without a door's shape",
    );
    assert.equal(
      (await cliInProcess(service, ['clear-conflict', key, '--door', 'nowhere'])).code,
      1,
      'a door with nothing open through it',
    );

    // WeCom sends the event again (or a second one): listed again, a fresh count.
    assert.equal((await deliver('wecom', spNo, sku, 5)).status, 200);
    const again = await eventually('listed again', async () => {
      const entries = await conflictsListed(key);
      return entries.length > 0 ? entries : undefined;
    });
    assert.equal(again[0]?.attempts, 1);
    assert.deepEqual(await orderedQuantities(service.prisma, key), [1]);
  });

  it('the webhook after a connector claimed the key: a 422 that names neither the connector nor its order', async () => {
    const instance = uniqueApprovalNo('KSDT');
    const key = idempotencyKeyFor(instance, 'MAIN');
    const sku = await createSku(service.prisma, 100);
    assert.equal((await deliver('dingtalk', instance, sku, 2)).status, 200);
    await statusReaches(service, key, 'SUBMITTED');
    // The same order as the form's: a guess that is right still takes nothing.
    const answer = await postApproval(
      service,
      approval(instance, sku, {
        order: { customerId: CUSTOMER, currency: 'CNY', lines: [{ sku, quantity: 2, unitPrice: '10.50' }] },
      }),
    );
    assert.equal(answer.statusCode, 422);
    const problem = answer.json<{ type: string; detail: string; differences: string[] }>();
    assert.deepEqual([problem.type.endsWith('/idempotency-key-conflict'), problem.differences], [true, []]);
    assert.equal(problem.detail, `${key} is already taken by an earlier delivery`);
    assert.equal((await conflictsListed(key)).length, 1);
    assert.deepEqual(await orderedQuantities(service.prisma, key), [2]);
  });

  it('a conflicting delivery whose record failed to be written is counted once, when its retry is recorded', async () => {
    const instance = uniqueApprovalNo('KSRT');
    const key = idempotencyKeyFor(instance, 'MAIN');
    const sku = await createSku(service.prisma, 100);
    assert.equal((await deliver('dingtalk', instance, sku, 2)).status, 200);
    await statusReaches(service, key, 'SUBMITTED');
    // The database refuses the first write of this key's conflict row, once: a sequence, unlike a
    // row, is not rolled back with the failing statement.
    const suffix = instance.replace(/[^A-Za-z0-9]/g, '_').toLowerCase();
    await service.prisma.$executeRawUnsafe(`CREATE SEQUENCE fail_once_${suffix}`);
    await service.prisma.$executeRawUnsafe(`
      CREATE FUNCTION fail_once_${suffix}() RETURNS trigger AS $$
      BEGIN
        IF NEW.idempotent_key = '${key}' AND nextval('fail_once_${suffix}') = 1 THEN
          RAISE EXCEPTION 'the conflict row is not written this once';
        END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql`);
    await service.prisma.$executeRawUnsafe(
      `CREATE TRIGGER fail_once_${suffix} BEFORE INSERT ON key_source_conflict FOR EACH ROW EXECUTE FUNCTION fail_once_${suffix}()`,
    );
    try {
      const before = refused.get('webhook') ?? 0;
      const order = approval(instance, sku, {
        order: { customerId: CUSTOMER, currency: 'CNY', lines: [{ sku, quantity: 3, unitPrice: '10.50' }] },
      });
      const failed = await postApproval(service, order);
      assert.ok(failed.statusCode >= 500, `the failed write is the delivery's failure: ${failed.statusCode}`);
      assert.equal(refused.get('webhook') ?? 0, before, 'nothing counted for a refusal that was not recorded');

      assert.equal((await postApproval(service, order)).statusCode, 422, 'the sender retries: refused');
      assert.equal(refused.get('webhook') ?? 0, before + 1, 'the retried delivery counted once');
      const [row] = await conflictsListed(key);
      assert.equal(row?.attempts, 1, 'and recorded once');
    } finally {
      await service.prisma.$executeRawUnsafe(`DROP TRIGGER fail_once_${suffix} ON key_source_conflict`);
      await service.prisma.$executeRawUnsafe(`DROP FUNCTION fail_once_${suffix}()`);
      await service.prisma.$executeRawUnsafe(`DROP SEQUENCE fail_once_${suffix}`);
    }
  });

  it('a claim keeps its door after the retention purge: WeCom after an MCP claim is listed and counted, MCP again is a duplicate', async () => {
    const spNo = `${new Date().toISOString().slice(0, 10).replaceAll('-', '')}${randomInt(1e9, 1e10)}`;
    const key = idempotencyKeyFor(spNo, 'MAIN');
    const sku = await createSku(service.prisma, 100);
    assert.equal((await deliver('mcp', spNo, sku, 1)).status, 202);
    await statusReaches(service, key, 'SUBMITTED');
    // Retention zero: every settled, answered record goes now, this one among them.
    await purgeExpiredRecords(service.prisma, { retentionDays: 0, dryRun: false });
    assert.equal(await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } }), null);
    const before = refused.get('wecom') ?? 0;

    const real = await deliver('wecom', spNo, sku, 5);
    assert.equal(real.status, 200, 'WeCom is acknowledged as always');
    await until('the refusal to be counted for wecom', () => refused.get('wecom') === before + 1);
    const [listed] = await eventually('listed by awaiting', async () => {
      const entries = await conflictsListed(key);
      return entries.length > 0 ? entries : undefined;
    });
    assert.match(listed?.reason ?? '', /a wecom delivery was refused: the key was claimed through mcp/);
    assert.deepEqual(
      [listed?.customerId, listed?.totalAmount],
      [CUSTOMER, '10.5000'],
      'the holder read from its order',
    );
    assert.equal(vendors.wecom.reads(spNo), 0, 'the form of an approval whose key another door holds is not read');

    const mcpRefusals = refused.get('mcp') ?? 0;
    const again = await deliver('mcp', spNo, sku, 1);
    assert.equal(again.status, 200, `the holder's own door: a duplicate, as before the purge (${again.body})`);
    assert.equal(refused.get('mcp') ?? 0, mcpRefusals, 'not counted');
    assert.equal((await conflictsListed(key)).length, 1, 'nothing new listed for the holding door');
    assert.deepEqual(await orderedQuantities(service.prisma, key), [1], 'one order, the claim');
  });
});
