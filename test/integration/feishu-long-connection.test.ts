// Feishu's long connection end to end: two API processes (the real entry point) each open the
// connection through the official SDK's WSClient to the fake long-connection service
// (tools/harness/fake-feishu-long-connection.ts: endpoint discovery on the fake open API, a gateway
// speaking the SDK's protobuf frames, Feishu's redelivery until a 200 ack), and a worker reads the
// forms from the fake open API — through the real start path, Temporal and PostgreSQL. This file
// owns what the connection adds: ack only once the key is claimed, a lost ack or a failing instance
// redelivered into the same one order, the same approval through every door, several instances
// connected at once, reconnection and what /healthz and the gauge say meanwhile, the connection
// closed at SIGTERM before the drain ends, and a decision card click answered in its ack.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { waitingEpisode } from '../../domain-node/decision-card-keys.js';
import { listOrdersAwaitingDecision } from '../../submission/operator-decisions/awaiting.js';
import { openFeishuLongConnection } from '../../vendors/feishu/long-connection.js';
import { openOaConnections } from '../../vendors/connections.js';
import { createPrismaClient } from '../../services/db/prisma-client.js';
import { type ConnectionState, eventConnections } from '../../services/health/event-connections.js';
import { noProductMetrics } from '../../services/metrics/product-metrics.js';
import { approvalEventsInFlight } from '../../submission/accept-oa-event.js';
import { intakeLoad } from '../../submission/intake-load.js';
import {
  approvedFeishuOrder,
  type FakeFeishu,
  feishuApprovalPayload,
  feishuApprovalPayloadV2,
  feishuCallback,
  feishuCardClickPayload,
  startFakeFeishu,
} from '../../tools/harness/fake-feishu.js';
import { freePort } from '../../tools/harness/ports.js';
import { type ApiProcess, apiProcess, processEnv } from '../../tools/harness/processes.js';
import {
  approval,
  createSku,
  eventually,
  exampleMappingFile,
  postApproval,
  postVendorCallback,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  visibleRuns,
} from '../../tools/harness/service.js';

const FEISHU_PURCHASE = 'PURCHASE-ORDER-APPROVAL';
const FEISHU_TOKEN = 'feishu-verification-token';
const FEISHU_ENCRYPT_KEY = 'feishu-encrypt-key-0123456789';
const DRAIN_MS = 4_000;
const DECISION_CHAT = `oc_${randomBytes(8).toString('hex')}`;
const OPERATOR = `ou_${randomBytes(8).toString('hex')}`;
const STRANGER = `ou_${randomBytes(8).toString('hex')}`;

describe('Feishu long connection: approvals pushed over a connection the service opens', () => {
  let feishu: FakeFeishu;
  let service: TestService;
  let apiA: ApiProcess;
  let apiB: ApiProcess;
  let metricsPort: number;
  let feishuEnv: Record<string, string>;

  before(async () => {
    const mappingFile = exampleMappingFile({ feishu: [FEISHU_PURCHASE] });
    feishu = await startFakeFeishu();
    feishuEnv = {
      OA_FORM_MAPPING: mappingFile,
      FEISHU_EVENT_MODE: 'long-connection',
      FEISHU_APP_ID: feishu.appId,
      FEISHU_APP_SECRET: feishu.appSecret,
      // The callback's keys too: both doors are open, as during a migration.
      FEISHU_ENCRYPT_KEY,
      FEISHU_VERIFICATION_TOKEN: FEISHU_TOKEN,
      FEISHU_API_BASE_URL: feishu.url,
      // Decision cards on: their clicks come over the connection too.
      FEISHU_DECISION_CHAT_ID: DECISION_CHAT,
      FEISHU_OPERATOR_OPEN_IDS: OPERATOR,
    };
    // The worker (and an in-process API for the callback and the webhook) on the test's task queue;
    // the API processes below share it.
    service = await startTestService({ config: testConfig(feishuEnv) });
    metricsPort = await freePort();
    const env = processEnv(service.config, { ...feishuEnv, SHUTDOWN_DRAIN_MS: String(DRAIN_MS) });
    apiA = await apiProcess('api-a', { ...env, METRICS_PORT: String(metricsPort) });
    apiB = await apiProcess('api-b', env);
    await Promise.all([apiA.start(), apiB.start()]);
    await feishu.longConnection.connected(2);
  });
  after(async () => {
    await apiA?.kill();
    await apiB?.kill();
    await service?.stop();
    await feishu?.close();
  });

  const ordersOf = (key: string) => service.prisma.orderMain.findMany({ where: { idempotentKey: key } });
  const eventsOf = (instance: string) => service.prisma.oaEvent.findMany({ where: { instanceId: instance } });
  /** A purchase-order instance of the fake open API, approved, and the key its order is written under. */
  const approvedInstance = async (prefix: string) => {
    const id = uniqueApprovalNo(prefix);
    feishu.register(id, approvedFeishuOrder(await createSku(service.prisma, 100), 2, 10.5));
    return { id, key: idempotencyKeyFor(id, 'MAIN') };
  };
  const approvalEvent = (id: string) =>
    feishuApprovalPayload({ instanceCode: id, status: 'APPROVED', approvalCode: FEISHU_PURCHASE });
  const healthz = async (api: ApiProcess) => {
    const response = await fetch(`${api.url}/healthz`);
    return { status: response.status, body: (await response.json()) as { connections?: Record<string, string> } };
  };
  const gauge = async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const match = /^orders_oa_connection_up\{[^}]*vendor="feishu"[^}]*\} (\S+)/m.exec(text);
    return match ? Number(match[1]) : undefined;
  };

  it('an approval pushed over the connection is one order, acknowledged only once its key is claimed', async () => {
    const { id, key } = await approvedInstance('FSWS');
    const pushed = await feishu.longConnection.push(approvalEvent(id));
    const ack = await feishu.longConnection.acknowledged(pushed);
    // The ack came after the claim: the key's record is there the moment Feishu hears 200.
    const claimed = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
    assert.ok(claimed, 'the key was claimed before the ack');
    assert.equal(claimed.source, 'feishu');
    assert.equal(ack.code, 200);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal((await ordersOf(key)).length, 1);
    assert.ok(
      feishu.longConnection.acks(pushed).every((each) => each.code === 200),
      'never answered with a failure',
    );
    assert.equal((await eventsOf(id)).length, 1);
  });

  it('the schema 2.0 approval event (approval.instance.status_changed_v4), split over frames, is one order too', async () => {
    const { id, key } = await approvedInstance('FSWS2');
    const payload = feishuApprovalPayloadV2({ instanceCode: id, status: 'APPROVED', approvalCode: FEISHU_PURCHASE });
    const pushed = await feishu.longConnection.push(payload, { fragments: 3 });
    assert.equal((await feishu.longConnection.acknowledged(pushed)).code, 200);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal((await ordersOf(key)).length, 1);
    const [recorded] = await eventsOf(id);
    assert.deepEqual(
      [recorded?.eventType, recorded?.eventId],
      ['approval.instance.status_changed_v4', (payload.header as { event_id: string }).event_id],
    );
  });

  it('a click on a decision card pushed over the connection is a decision, answered in its ack; a stranger’s decides nothing', async () => {
    const id = uniqueApprovalNo('LC-CARD');
    // One in stock, two ordered: the write fails for good, and the key waits for a person.
    feishu.register(id, approvedFeishuOrder(await createSku(service.prisma, 1), 2, 10.5));
    const key = idempotencyKeyFor(id, 'MAIN');
    assert.equal(
      (await feishu.longConnection.acknowledged(await feishu.longConnection.push(approvalEvent(id)))).code,
      200,
    );
    await statusReaches(service, key, 'COMPENSATING');
    const waiting = await eventually(
      `${key} in the awaiting list`,
      async () => (await listOrdersAwaitingDecision(service.prisma, 10, { idempotencyKey: key }))[0],
    );
    const episode = waitingEpisode(waiting.status, waiting.waitingSince);
    const clickBy = (openId: string) =>
      feishu.longConnection.push(
        feishuCardClickPayload({
          appId: feishu.appId,
          openId,
          button: { idempotencyKey: key, episode, decision: 'abandon' },
          chatId: DECISION_CHAT,
          messageId: 'om_card',
        }),
      );
    type ClickAnswer = { toast: { type: string; content: string }; card?: { type: string } };

    const stranger = await feishu.longConnection.acknowledged(await clickBy(STRANGER));
    assert.equal(stranger.code, 200);
    assert.deepEqual(
      [(stranger.data as ClickAnswer | undefined)?.toast.type, (stranger.data as ClickAnswer | undefined)?.card],
      ['error', undefined],
      'a toast, the card as it is',
    );
    const clicked = await feishu.longConnection.acknowledged(await clickBy(OPERATOR));
    const answer = clicked.data as ClickAnswer | undefined;
    assert.equal(answer?.card?.type, 'raw', `the card is locked: ${JSON.stringify(clicked.data)}`);
    await statusReaches(service, key, 'COMPENSATED');
    const decided = await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } });
    assert.deepEqual(
      decided.map((record) => record.decidedBy),
      [`card:feishu:${OPERATOR}`],
    );
  });

  it('the connection dropped after the event and before its ack: Feishu sends it again on reconnect, still one order', async () => {
    const { id, key } = await approvedInstance('FSWSLOST');
    const pushed = await feishu.longConnection.push(approvalEvent(id), { loseAck: true });
    const ack = await feishu.longConnection.acknowledged(pushed);
    assert.equal(ack.code, 200);
    assert.ok(feishu.longConnection.deliveries(pushed) >= 2, 'delivered again after the lost ack');
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal((await ordersOf(key)).length, 1);
    assert.equal(await visibleRuns(service.temporal, `order-${key}`), 1);
    assert.equal((await eventsOf(id)).length, 1, 'the redelivery is the same event');
    await feishu.longConnection.connected(2);
  });

  it('the same approval over the connection, by the HTTP callback and by the webhook is one order', async () => {
    const { id, key } = await approvedInstance('FSWSDOORS');
    const pushed = await feishu.longConnection.push(approvalEvent(id));
    await feishu.longConnection.acknowledged(pushed);
    const callback = feishuCallback(approvalEvent(id), {
      encryptKey: FEISHU_ENCRYPT_KEY,
      token: FEISHU_TOKEN,
      sign: true,
    });
    const byCallback = await postVendorCallback(service, 'feishu', callback);
    assert.equal(byCallback.statusCode, 200, 'the callback is acknowledged: a duplicate of the same key');
    // The webhook's approval number equal to the instance id: the same key from another source.
    const byWebhook = await postApproval(service, approval(id, await createSku(service.prisma, 100)));
    assert.equal(byWebhook.statusCode, 422);
    assert.match((JSON.parse(byWebhook.body) as { type: string }).type, /idempotency-key-conflict$/);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal((await ordersOf(key)).length, 1);
    assert.equal(await visibleRuns(service.temporal, `order-${key}`), 1);
    assert.equal((await eventsOf(id)).length, 2, 'two events recorded (two deliveries ids), one order');
  });

  it('two instances connected at once: events copied to both, or sent again to the other, are one order each', async () => {
    await feishu.longConnection.connected(2);
    // Copies to both instances at once (as when Feishu resends to another after a slow ack).
    const copied = await Promise.all([1, 2, 3].map(() => approvedInstance('FSWSBOTH')));
    const copies = await Promise.all(
      copied.map(({ id }) => feishu.longConnection.push(approvalEvent(id), { to: 'all' })),
    );
    for (const push of copies) {
      const acks = await eventually('both instances to ack the copies', () => {
        const all = feishu.longConnection.acks(push);
        return Promise.resolve(new Set(all.map((ack) => ack.connection)).size === 2 ? all : undefined);
      });
      assert.ok(
        acks.every((ack) => ack.code === 200),
        'the copy that found the key claimed is acknowledged too',
      );
    }
    // Acks lost on the way, so Feishu sends each event again to whichever instance is connected.
    const resent = await Promise.all([1, 2, 3].map(() => approvedInstance('FSWSOTHER')));
    const pushes = await Promise.all(
      resent.map(({ id }) => feishu.longConnection.push(approvalEvent(id), { loseAck: true })),
    );
    for (const push of pushes) {
      await feishu.longConnection.acknowledged(push);
      assert.ok(feishu.longConnection.deliveries(push) >= 2);
    }
    for (const { key } of [...copied, ...resent]) {
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal((await ordersOf(key)).length, 1, key);
      assert.equal(await visibleRuns(service.temporal, `order-${key}`), 1, key);
    }
    await feishu.longConnection.connected(2);
  });

  it('an instance whose database is down acks with an error and Feishu sends the event to a healthy one: one order', async () => {
    const before = new Set(feishu.longConnection.openConnections());
    // A third connection, in this process, whose database is a port nothing listens on.
    const downDb = createPrismaClient({
      databaseUrl: `postgresql://postgres:postgres@127.0.0.1:${await freePort()}/orders`,
      poolSize: 1,
      statementTimeoutMs: 1000,
    });
    const connections = eventConnections(noProductMetrics());
    const broken = openOaConnections({
      config: service.config,
      prisma: downDb,
      temporal: service.temporal,
      metrics: noProductMetrics(),
      intake: intakeLoad({ maxInFlight: undefined }),
      approvalsInFlight: approvalEventsInFlight(),
      log: pino({ level: 'silent' }),
      connections,
    });
    try {
      await feishu.longConnection.connected(3);
      const third = feishu.longConnection.openConnections().find((connection) => !before.has(connection));
      assert.ok(third !== undefined);
      const { id, key } = await approvedInstance('FSWSDOWN');
      const pushed = await feishu.longConnection.push(approvalEvent(id), { connection: third });
      const ok = await feishu.longConnection.acknowledged(pushed);
      const acks = feishu.longConnection.acks(pushed);
      assert.deepEqual([acks[0]?.connection, acks[0]?.code], [third, 500], 'the broken instance did not ack 200');
      assert.notEqual(ok.connection, third);
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal((await ordersOf(key)).length, 1);
    } finally {
      await broken.close(0);
      await downDb.$disconnect();
    }
    assert.equal(connections.states().feishu, 'down', 'closed');
  });

  it('the service going away and coming back: /healthz says not up meanwhile, then up, answering 200 throughout', async () => {
    const first = await healthz(apiA);
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.connections, { feishu: 'up' });
    assert.equal(await gauge(), 1);
    await feishu.longConnection.stop();
    const meanwhile = await eventually('/healthz to say the connection is not up', async () => {
      const answer = await healthz(apiA);
      return answer.body.connections?.feishu !== 'up' ? answer : undefined;
    });
    assert.equal(meanwhile.status, 200, 'a connection that is down changes no status code');
    assert.equal(meanwhile.body.connections?.feishu, 'connecting');
    assert.equal(await gauge(), 0);
    // An approval while Feishu's side is away waits there, and arrives once a connection is back.
    const { id, key } = await approvedInstance('FSWSBACK');
    const pushing = feishu.longConnection.push(approvalEvent(id));
    await feishu.longConnection.restart();
    await eventually('/healthz to say the connection is up again', async () => {
      const answer = await healthz(apiA);
      return answer.status === 200 && answer.body.connections?.feishu === 'up' ? answer : undefined;
    });
    assert.equal(await gauge(), 1);
    await feishu.longConnection.acknowledged(await pushing);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal((await ordersOf(key)).length, 1);
    await feishu.longConnection.connected(2);
  });

  it('WSClient stopped by a refused app secret is started again, with backoff, and says down meanwhile', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    const states: ConnectionState[] = [];
    const wrongSecret = `wrong-${randomBytes(8).toString('hex')}`;
    const connection = openFeishuLongConnection({
      appId: feishu.appId,
      appSecret: wrongSecret,
      domain: feishu.url,
      encryptKey: undefined,
      log,
      connections: { report: (_vendor, state) => states.push(state) },
      take: () => Promise.reject(new Error('no event reaches a connection that never opened')),
    });
    try {
      await eventually('two restarts', () =>
        Promise.resolve(lines.filter((line) => line.includes('starting it again')).length >= 2 || undefined),
      );
    } finally {
      await connection.close(0);
    }
    assert.deepEqual(states.slice(0, 2), ['connecting', 'down']);
    assert.ok(!states.includes('up'));
    assert.ok(!lines.some((line) => line.includes(wrongSecret)), 'the secret stays out of the log');
  });

  it('SIGTERM closes the connection before the drain ends, and the events go to the instance still connected', async () => {
    await feishu.longConnection.connected(2);
    const stopping = apiB.kill('SIGTERM');
    await eventually('one connection left', () =>
      Promise.resolve(feishu.longConnection.openConnections().length === 1 || undefined),
    );
    assert.equal(apiB.exit(), undefined, 'still draining when its connection closed');
    const { id, key } = await approvedInstance('FSWSTERM');
    await feishu.longConnection.acknowledged(await feishu.longConnection.push(approvalEvent(id)));
    await stopping;
    assert.equal(apiB.exit()?.code, 0);
    const output = apiB.output();
    const [closed, stopped] = [output.indexOf('Feishu long connection closed'), output.indexOf('api stopped')];
    assert.ok(closed !== -1 && stopped !== -1 && closed < stopped, 'the connection closed before the process stopped');
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal((await ordersOf(key)).length, 1);
  });
});
