// An OA connector's reply needs the claim only (docs/architecture.md, decisions 17 and 34): a start
// still running when the reply is due goes on after it, and DingTalk, answered success, never sends
// the event again. An API that dies before that start is confirmed leaves a claim that no delivery
// will start; any API with a connector on starts it once it is OA_UNSTARTED_CLAIM_AFTER_MS old.
// Here an API process whose starts cannot reach Temporal replies and is killed, and another one
// starts the claim; then claims left by dead instances are found by two APIs at once, and each key
// is still one run and one order. Real Temporal, real PostgreSQL, the real API entry point.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { claimRecord } from '../../services/db/idempotency-records.js';
import {
  approvedDingTalkOrder,
  dingtalkApprovalPayload,
  dingtalkCallback,
  dingtalkSettings,
  type FakeDingTalk,
  randomDingTalkAesKey,
  startFakeDingTalk,
} from '../../tools/harness/fake-dingtalk.js';
import { startTcpProxy, type TcpProxy } from '../../tools/harness/tcp-proxy.js';
import { type ApiProcess, apiProcess, processEnv } from '../../tools/harness/processes.js';
import {
  createSku,
  orderCount,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  until,
  visibleRuns,
  workflowExists,
} from '../../tools/harness/service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAPPING = path.join(ROOT, 'examples/oa-form-mapping.json');
const DINGTALK_TOKEN = 'unstarted-claims-test-token';
const DINGTALK_AES_KEY = randomDingTalkAesKey();
/** How many times the test sends the approval, as DingTalk would, before it gives up. */
const SENDS = 5;
/** Claims left by the dead instances of the second case. */
const LEFT_CLAIMS = 6;

describe('an OA approval answered before its start, and the start left undone by a crash', () => {
  let fake: FakeDingTalk;
  let service: TestService;
  let temporalProxy: TcpProxy;
  let settings: Record<string, string>;
  const apis: ApiProcess[] = [];

  before(async () => {
    fake = await startFakeDingTalk();
    settings = {
      ...dingtalkSettings(fake, { aesKey: DINGTALK_AES_KEY, token: DINGTALK_TOKEN }, MAPPING),
      WEBHOOK_START_TIMEOUT_MS: '3000',
    };
    // The worker in this process; the callbacks in API processes.
    service = await startTestService({ config: testConfig(settings) });
    temporalProxy = await startTcpProxy(service.config.temporal.address as string);
  });
  after(async () => {
    for (const api of apis) await api.kill();
    await temporalProxy?.close();
    await service?.stop();
    await fake?.close();
  });

  /** An API process on this test's stack; `sweepAfterMs`: its OA_UNSTARTED_CLAIM_AFTER_MS. */
  async function startedApi(name: string, sweepAfterMs: number, extra: Record<string, string> = {}) {
    const api = await apiProcess(
      name,
      processEnv(service.config, { ...settings, OA_UNSTARTED_CLAIM_AFTER_MS: String(sweepAfterMs), ...extra }),
    );
    apis.push(api);
    await api.start();
    return api;
  }

  /** A new approved instance on a SKU of its own, registered with the fake open API. */
  async function approvedInstance(prefix: string) {
    const instanceId = uniqueApprovalNo(prefix);
    fake.register(instanceId, approvedDingTalkOrder(await createSku(service.prisma, 100), 1, 4, 'CUST-DT-LEFT'));
    return { instanceId, key: idempotencyKeyFor(instanceId, 'MAIN') };
  }

  async function postDingTalkApproval(api: ApiProcess, instanceId: string) {
    const callback = dingtalkCallback(
      dingtalkApprovalPayload({ processInstanceId: instanceId, type: 'finish', result: 'agree' }),
      { aesKey: DINGTALK_AES_KEY, token: DINGTALK_TOKEN, appKey: fake.appKey },
    );
    const response = await fetch(`${api.url}/webhooks/dingtalk?${new URLSearchParams(callback.query).toString()}`, {
      method: 'POST',
      headers: callback.headers,
      body: callback.rawBody,
    });
    return { status: response.status, body: await response.text() };
  }

  const recordOf = (key: string) => service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });

  it('the vendor hears success while the start hangs, the instance dies, and another instance starts the claim: one order', async () => {
    const { instanceId, key } = await approvedInstance('LEFT-CRASH');
    // Nothing this instance sends reaches Temporal: its start hangs past the reply (DingTalk's 1 s
    // budget), and it is killed meanwhile.
    await temporalProxy.setMode({ kind: 'blackhole' });
    // It would start the claim itself only after an hour: what starts it below is the other one.
    const dying = await startedApi('api-dies', 3_600_000, { TEMPORAL_ADDRESS: temporalProxy.address });

    // Sent again after a 503, as DingTalk does: on a loaded machine a fresh process may not claim
    // within its 1 s budget, and then the resend finds the claim made.
    let answer = await postDingTalkApproval(dying, instanceId);
    for (let sent = 1; answer.status === 503 && sent < SENDS; sent++)
      answer = await postDingTalkApproval(dying, instanceId);
    assert.equal(answer.status, 200, answer.body);
    const claimed = await recordOf(key);
    assert.deepEqual(
      { source: claimed?.source, status: claimed?.status, started: claimed?.workflowStartedAt ?? null },
      { source: 'dingtalk', status: 'RECEIVED', started: null },
      'answered once claimed, before any start',
    );
    await dying.kill('SIGKILL');
    assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false, 'no start reached Temporal');
    assert.equal(await orderCount(service.prisma, key), 0);

    const sweeper = await startedApi('api-sweeps', 1_000);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.equal(await visibleRuns(service.temporal, orderWorkflowIdFor(key)), 1, 'one run of order-<key>');
    await until('the sweeper says it started the claim', () =>
      sweeper.output().includes('claimed approval started: no start was confirmed'),
    );
  });

  it('claims left by dead instances, found by two instances at once: one run and one order per key', async () => {
    await startedApi('api-sweeps-too', 1_000);
    const left = [];
    for (let i = 0; i < LEFT_CLAIMS; i++) left.push(await approvedInstance('LEFT-MANY'));
    // Each key as the claim of a delivery whose process died before it started anything.
    for (const { instanceId, key } of left) {
      await claimRecord(service.prisma, {
        idempotencyKey: key,
        approvalNo: instanceId,
        operation: 'MAIN',
        workflowId: orderWorkflowIdFor(key),
        fingerprint: null,
        request: null,
        source: 'dingtalk',
      });
    }
    for (const { key } of left) await statusReaches(service, key, 'SUBMITTED');
    for (const { key } of left) {
      assert.equal(await orderCount(service.prisma, key), 1, `one order of ${key}`);
      assert.equal(await visibleRuns(service.temporal, orderWorkflowIdFor(key)), 1, `one run of ${key}`);
    }
  });
});
