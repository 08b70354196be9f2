// Standard Webhooks in and out, and rotating a secret without a gap, on the real stack: the OA
// webhook in either scheme, the order event verified by the `standardwebhooks` library in the
// reference consumer, and a rotation's two phases — both secrets while the previous one is set,
// only the new one once it is unset.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { buildApp } from '../../edges/http/app.js';
import { EVENT_HEADERS, verifySignature } from '../../domain-node/signature.js';
import { eventIdFor } from '../../domain-node/order-event.js';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { type DownstreamService, startDownstreamService } from '../../tools/harness/downstream-service.js';
import {
  approval,
  createSku,
  orderCount,
  postApproval,
  recordedLastError,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  workflowExists,
} from '../../tools/harness/service.js';
import { signedHeaders, standardSignedHeaders } from '../../tools/harness/signed-webhook.js';

const WEBHOOK_NEW = 'webhook-secret-new-0123456789';
const WEBHOOK_OLD = 'webhook-secret-old-0123456789';
// The new downstream secret in the Standard Webhooks format, read by the library itself.
const DOWNSTREAM_NEW = 'whsec_' + randomBytes(24).toString('base64');
const DOWNSTREAM_OLD = 'downstream-secret-old-0123456789';

interface ProblemBody {
  type: string;
  status: number;
  detail: string;
}

type App = ReturnType<typeof buildApp>;

describe('signature schemes and secret rotation', () => {
  /** The downstream's consumer holds only the previous downstream secret. */
  let stack: DownstreamService;
  let service: TestService;
  let sku: string;
  const apps: App[] = [];
  /** What the edges below logged: the reason of each refusal is there, not in its answer. */
  const logged: { level: number; msg: string; reason?: string }[] = [];

  before(async () => {
    stack = await startDownstreamService(DOWNSTREAM_OLD, (url) => ({
      WEBHOOK_SECRET: WEBHOOK_NEW,
      DOWNSTREAM_URL: url,
      DOWNSTREAM_SECRET: DOWNSTREAM_NEW,
      DOWNSTREAM_SECRET_PREVIOUS: DOWNSTREAM_OLD,
    }));
    service = stack.service;
    sku = await createSku(service.prisma, 1000);
  });
  after(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await stack.stop();
  });

  /** The HTTP edge as it starts with these settings, on the service's database, Temporal and worker. */
  async function appWith(settings: Record<string, string>): Promise<App> {
    const app = buildApp({
      config: testConfig({ TEMPORAL_TASK_QUEUE: service.config.temporal.taskQueue, ...settings }),
      prisma: service.prisma,
      temporal: service.temporal,
      logger: pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line) as never) }),
    });
    await app.ready();
    apps.push(app);
    return app;
  }

  function newApproval(prefix: string) {
    const approvalNo = uniqueApprovalNo(prefix);
    const body = JSON.stringify(approval(approvalNo, sku));
    return { approvalNo, key: idempotencyKeyFor(approvalNo, 'MAIN'), body };
  }

  async function post(app: App, body: string, headers: Record<string, string>) {
    return app.inject({ method: 'POST', url: '/webhooks/oa/approvals', headers, payload: body });
  }

  async function assertNothingRecorded(approvalNo: string, key: string) {
    assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false, 'no workflow');
    assert.equal(await service.prisma.idempotencyRecord.count({ where: { approvalNo } }), 0, 'no record');
    assert.equal(await orderCount(service.prisma, key), 0, 'no order row');
  }

  /** The door's one refusal, whatever failed; the reason is only in the log, at warn. */
  function assertRefused(response: { statusCode: number; json: () => unknown }, reason: RegExp) {
    assert.equal(response.statusCode, 401);
    const problem = response.json() as ProblemBody;
    assert.equal(problem.type, '/problems/invalid-signature');
    assert.equal(problem.detail, 'the request could not be authenticated');
    const line = logged.findLast((entry) => entry.msg === 'webhook refused: not authenticated');
    assert.equal(line?.level, 40);
    assert.match(line?.reason ?? '', reason);
  }

  it('accepts an approval signed with Standard Webhooks headers, and refuses it tampered, recording nothing', async () => {
    const app = await appWith({ WEBHOOK_SIGNATURE_SCHEME: 'standard', WEBHOOK_SECRET: WEBHOOK_NEW });
    const signed = newApproval('SWIN');
    assert.equal((await post(app, signed.body, standardSignedHeaders(signed.body, WEBHOOK_NEW))).statusCode, 202);

    const tampered = newApproval('SWTAMPER');
    const headers = standardSignedHeaders(tampered.body, WEBHOOK_NEW);
    const changedBody = tampered.body.replace('"quantity":2', '"quantity":20');
    assert.notEqual(changedBody, tampered.body);
    assertRefused(await post(app, changedBody, headers), /no webhook-signature entry matches/);
    assertRefused(
      await post(app, tampered.body, { ...headers, 'webhook-id': 'msg_another' }),
      /no webhook-signature entry matches/,
    );
    await assertNothingRecorded(tampered.approvalNo, tampered.key);
  });

  it('refuses a request signed in the other scheme, and logs the headers the endpoint expects', async () => {
    const standard = await appWith({ WEBHOOK_SIGNATURE_SCHEME: 'standard', WEBHOOK_SECRET: WEBHOOK_NEW });
    const oa = await appWith({ WEBHOOK_SECRET: WEBHOOK_NEW });
    const { approvalNo, key, body } = newApproval('SWOTHER');
    assertRefused(
      await post(standard, body, signedHeaders(body, WEBHOOK_NEW)),
      /takes Standard Webhooks signatures \(webhook-id, webhook-timestamp, webhook-signature\)/,
    );
    assertRefused(
      await post(oa, body, standardSignedHeaders(body, WEBHOOK_NEW)),
      /takes X-OA-Timestamp and X-OA-Signature/,
    );
    await assertNothingRecorded(approvalNo, key);
  });

  for (const [scheme, sign] of [
    ['oa', signedHeaders],
    ['standard', standardSignedHeaders],
  ] as const) {
    it(`${scheme} scheme: while WEBHOOK_SECRET_PREVIOUS is set both secrets are accepted; after it is unset the old one is refused`, async () => {
      const during = await appWith({
        WEBHOOK_SIGNATURE_SCHEME: scheme,
        WEBHOOK_SECRET: WEBHOOK_NEW,
        WEBHOOK_SECRET_PREVIOUS: WEBHOOK_OLD,
      });
      for (const secret of [WEBHOOK_OLD, WEBHOOK_NEW]) {
        const { body } = newApproval('SWROT');
        assert.equal((await post(during, body, sign(body, secret))).statusCode, 202, `signed by ${secret}`);
      }

      const afterwards = await appWith({ WEBHOOK_SIGNATURE_SCHEME: scheme, WEBHOOK_SECRET: WEBHOOK_NEW });
      const old = newApproval('SWROTOLD');
      assertRefused(
        await post(afterwards, old.body, sign(old.body, WEBHOOK_OLD)),
        /does not match|no webhook-signature/,
      );
      await assertNothingRecorded(old.approvalNo, old.key);
      const fresh = newApproval('SWROTNEW');
      assert.equal((await post(afterwards, fresh.body, sign(fresh.body, WEBHOOK_NEW))).statusCode, 202);
    });
  }

  it('delivers an event that a receiver holding either downstream secret verifies, with the standardwebhooks library too', async () => {
    const { key, body } = newApproval('SWOUT');
    assert.equal((await post(service.app, body, signedHeaders(body, WEBHOOK_NEW))).statusCode, 202);
    // The reference consumer holds only the previous secret and verifies with the library.
    await statusReaches(service, key, 'DELIVERED');
    assert.equal(await stack.downstream.effects(key), 1);

    const [arrival] = stack.downstream.arrivals(key);
    assert.ok(arrival, 'the event arrived');
    const header = (name: string) => String(arrival.headers[name]);
    assert.equal(header('webhook-id'), eventIdFor(key));
    assert.equal(header('webhook-id'), header('x-event-id'));
    assert.equal(header('webhook-timestamp'), header('x-event-timestamp'));
    const standardHeaders = {
      'webhook-id': header('webhook-id'),
      'webhook-timestamp': header('webhook-timestamp'),
      'webhook-signature': header('webhook-signature'),
    };
    // A receiver that already holds the new secret (in whsec_ form, read by the library) verifies too.
    new Webhook(DOWNSTREAM_NEW).verify(arrival.body, standardHeaders);
    assert.throws(() =>
      new Webhook('whsec_' + randomBytes(24).toString('base64')).verify(arrival.body, standardHeaders),
    );
    for (const secret of [DOWNSTREAM_NEW, DOWNSTREAM_OLD]) {
      const check = verifySignature({
        secret,
        timestampHeader: header('x-event-timestamp'),
        signatureHeader: header('x-event-signature'),
        rawBody: Buffer.from(arrival.body),
        toleranceSeconds: 300,
        headers: EVENT_HEADERS,
      });
      assert.deepEqual(check, { ok: true }, 'X-Event-Signature verifies with each secret');
    }
  });
});

describe('after a downstream secret rotation', () => {
  /** The downstream's consumer was never moved to the new secret. */
  let stack: DownstreamService;

  before(async () => {
    stack = await startDownstreamService(DOWNSTREAM_OLD, (url) => ({
      DOWNSTREAM_URL: url,
      DOWNSTREAM_SECRET: DOWNSTREAM_NEW,
    }));
  });
  after(() => stack.stop());

  it('a receiver still holding the previous secret refuses the event once DOWNSTREAM_SECRET_PREVIOUS is unset', async () => {
    const approvalNo = uniqueApprovalNo('SWAFTER');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const { service, downstream } = stack;
    const body = approval(approvalNo, await createSku(service.prisma, 10));
    assert.equal((await postApproval(service, body)).statusCode, 202);
    const view = await statusReaches(service, key, 'DELIVERY_FAILED');
    assert.equal(view.lastError?.code, 'downstream-auth-failed');
    assert.match(await recordedLastError(service, key), /DownstreamAuthFailed: downstream answered 401/);
    assert.equal(await downstream.effects(key), 0);
    assert.equal(await orderCount(service.prisma, key), 1, 'the order itself stands');
  });
});
