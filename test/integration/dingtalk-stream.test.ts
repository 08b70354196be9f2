// DingTalk's Stream mode end to end: API processes started with DINGTALK_EVENT_MODE=stream open
// the connection to the fake gateway (tools/harness/fake-dingtalk-stream.ts, on the fake DingTalk
// open API the worker reads forms from), and approval events pushed over it go through the same
// acceptance, start path, worker, Temporal and PostgreSQL as every door. The acknowledgement
// comes only after the key is claimed, so a connection lost before it brings the event again; the
// same approval by Stream, HTTP callback and webhook is one order; two instances connected at
// once are one order per approval; a click on a decision card over the Stream is a decision taken
// once; a gateway away and back shows in /healthz and ends connected; and SIGTERM closes the
// connection inside the drain.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { buttonKeyOf } from '../../vendors/decision-cards.js';
import { DINGTALK_CARD_CALLBACK_TOPIC } from '../../vendors/dingtalk/decision-cards.js';
import { dingtalkCardClick } from '../../tools/harness/fake-dingtalk-cards.js';
import { keyAwaitingCompensation, scanForDecisionCards } from '../../tools/harness/decision-cards.js';
import {
  approvedDingTalkOrder,
  dingtalkApprovalPayload,
  dingtalkCallback,
  dingtalkSettings,
  dingtalkStreamApproval,
  type FakeDingTalk,
  randomDingTalkAesKey,
  startFakeDingTalk,
} from '../../tools/harness/fake-dingtalk.js';
import { type ApiProcess, apiProcess, processEnv } from '../../tools/harness/processes.js';
import { sentAsThePlatformDoes } from '../../tools/harness/platform-resend.js';
import {
  approval,
  createSku,
  eventually,
  orderCount,
  until,
  postApproval,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAPPING = path.join(ROOT, 'examples/oa-form-mapping.json');
const DINGTALK_TOKEN = 'dingtalk-stream-test-token';
const DINGTALK_AES_KEY = randomDingTalkAesKey();
/** How long the fake waits for an acknowledgement before it pushes an event again. */
const REDELIVER_AFTER_MS = 2_000;
/** A user id on DINGTALK_OPERATOR_USER_IDS. */
const OPERATOR = 'manager01';

describe('DingTalk Stream mode', () => {
  let fake: FakeDingTalk;
  let service: TestService;
  let apiA: ApiProcess;
  let streamEnv: NodeJS.ProcessEnv;

  before(async () => {
    fake = await startFakeDingTalk({ redeliverAfterMs: REDELIVER_AFTER_MS });
    const settings = {
      ...dingtalkSettings(fake, { aesKey: DINGTALK_AES_KEY, token: DINGTALK_TOKEN }, MAPPING),
      WEBHOOK_START_TIMEOUT_MS: '3000',
      DINGTALK_EVENT_MODE: 'stream',
      // Decision cards in a group, decided over the Stream.
      DINGTALK_DECISION_CARD_TEMPLATE_ID: 'a1b2c3d4-0000-4000-8000-abcdefabcdef.schema',
      DINGTALK_DECISION_OPEN_SPACE_ID: 'dtv1.card//IM_GROUP.cidFakeGroup01==',
      DINGTALK_OPERATOR_USER_IDS: `${OPERATOR},manager02`,
    };
    // The worker (and the webhook, by inject) in this process, which holds no connection; the
    // Stream in the API processes.
    service = await startTestService({ config: testConfig({ ...settings, DECISION_CARD_LOOK_EVERY_MS: '200' }) });
    streamEnv = processEnv(service.config, { ...settings, SHUTDOWN_DRAIN_MS: '3000' });
    apiA = await apiProcess('api-a', streamEnv);
    await apiA.start();
    await until('api-a connected', () => fake.stream.openConnections() === 1);
  });
  after(async () => {
    await apiA?.kill();
    await service?.stop();
    await fake?.close();
  });

  /** A new approved instance on a SKU of its own, registered with the fake open API. */
  async function approvedInstance(prefix: string) {
    const instanceId = uniqueApprovalNo(prefix);
    const sku = await createSku(service.prisma, 100);
    fake.register(instanceId, approvedDingTalkOrder(sku, 2, 3.5, 'CUST-DT-STREAM'));
    return { instanceId, sku, key: idempotencyKeyFor(instanceId, 'MAIN') };
  }
  const pushApproval = (instanceId: string) =>
    fake.stream.push(dingtalkStreamApproval({ processInstanceId: instanceId, type: 'finish', result: 'agree' }));
  const acknowledged = (eventId: string) =>
    eventually(`${eventId} acknowledged SUCCESS`, () =>
      Promise.resolve(fake.stream.acks(eventId).find((ack) => ack.status === 'SUCCESS')),
    );
  const healthz = async (api: ApiProcess) => {
    const response = await fetch(`${api.url}/healthz`);
    return { status: response.status, body: (await response.json()) as { connections?: { dingtalk?: string } } };
  };

  it('an approval pushed over the Stream becomes one order, acknowledged after its key is claimed', async () => {
    const { instanceId, key } = await approvedInstance('DTS');
    const eventId = pushApproval(instanceId);

    const ack = await acknowledged(eventId);
    const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
    assert.ok(record, 'the key is claimed');
    assert.ok(record.createdAt.getTime() <= ack.at, 'claimed before the acknowledgement');
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    const events = await service.prisma.oaEvent.findMany({ where: { instanceId } });
    assert.deepEqual(
      events.map((event) => [event.vendor, event.eventId]),
      [['dingtalk', eventId]],
      'recorded under the frame’s eventId',
    );
  });

  it('the connection lost after the event and before its acknowledgement: DingTalk sends it again, still one order', async () => {
    const { instanceId, key } = await approvedInstance('DTS-LOST');
    const opened = fake.stream.connectionsOpened();
    fake.stream.loseNextAck();
    const eventId = pushApproval(instanceId);

    await acknowledged(eventId);
    assert.ok(fake.stream.connectionsOpened() > opened, 'the instance connected again');
    assert.ok(fake.stream.deliveries(eventId) >= 2, 'the event was pushed again after the lost acknowledgement');
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    const events = await service.prisma.oaEvent.findMany({ where: { instanceId } });
    assert.equal(events.length, 1, 'the redelivery is recorded as the same event');
  });

  it('the same approval by Stream, HTTP callback and webhook at once is one order', async () => {
    const { instanceId, sku, key } = await approvedInstance('DTS-3DOORS');
    // The callback door of the same process, open beside the Stream while both keys are set. A
    // callback not taken inside DingTalk's deadline (the machine slow, the Stream's copy of the
    // event holding the key) is answered 503, and DingTalk sends it again: so does this test.
    const callbackTaken = () =>
      sentAsThePlatformDoes(async () => {
        const callback = dingtalkCallback(
          dingtalkApprovalPayload({ processInstanceId: instanceId, type: 'finish', result: 'agree' }),
          { aesKey: DINGTALK_AES_KEY, token: DINGTALK_TOKEN, appKey: fake.appKey },
        );
        const answer = await fetch(`${apiA.url}/webhooks/dingtalk?${new URLSearchParams(callback.query).toString()}`, {
          method: 'POST',
          headers: callback.headers,
          body: callback.rawBody,
        });
        return { status: answer.status, retryAfter: answer.headers.get('retry-after') };
      });
    const eventId = pushApproval(instanceId);
    const [callbackAnswers, webhookAnswer] = await Promise.all([
      callbackTaken(),
      postApproval(service, approval(instanceId, sku)),
    ]);
    await acknowledged(eventId);
    assert.equal(callbackAnswers.at(-1), 200, `the callback is acknowledged (answers: ${callbackAnswers.join(', ')})`);
    // The start path decides: the webhook is a duplicate if it came first, else a conflict (another source).
    assert.ok([200, 202, 422].includes(webhookAnswer.statusCode), `webhook: ${webhookAnswer.statusCode}`);
    await eventually('the order', async () => ((await orderCount(service.prisma, key)) === 1 ? true : undefined));
    // Settled: nothing after it writes a second.
    await eventually('the key settled', async () => {
      const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
      return record && record.status !== 'RECEIVED' ? record : undefined;
    });
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('two API instances connected at once: one order per approval, each instance racing for every event', async () => {
    const apiB = await apiProcess('api-b', streamEnv);
    await apiB.start();
    try {
      await until('both connected', () => fake.stream.openConnections() === 2);
      fake.stream.setDelivery('every');
      const instances = await Promise.all([1, 2, 3, 4, 5].map(() => approvedInstance('DTS-TWO')));
      const eventIds = instances.map(({ instanceId }) => pushApproval(instanceId));
      for (const eventId of eventIds) await acknowledged(eventId);
      for (const { key } of instances) await statusReaches(service, key, 'SUBMITTED');
      for (const { key } of instances) assert.equal(await orderCount(service.prisma, key), 1, key);
      await until('both instances acknowledged every event', () =>
        eventIds.every((eventId) => fake.stream.acks(eventId).filter((ack) => ack.status === 'SUCCESS').length >= 2),
      );
    } finally {
      fake.stream.setDelivery('one');
      await apiB.kill('SIGTERM');
    }
    assert.equal(apiB.exit()?.code, 0, 'api-b stopped cleanly');
    await until('api-b’s connection closed', () => fake.stream.openConnections() === 1);
  });

  it('a click on a DingTalk card over the Stream is a decision: answered with the card locked, once, and the card redrawn', async () => {
    const key = await keyAwaitingCompensation(service, 'DTCARD');
    await scanForDecisionCards(service);
    const created = await eventually(`a DingTalk card for ${key}`, () =>
      Promise.resolve(fake.cards.cards().find((each) => each.createdWith.idempotencyKey === key)),
    );
    const action = buttonKeyOf({ idempotencyKey: key, episode: created.createdWith.episode ?? '' }, 'abandon');
    const click = async (userId: string, messageId = randomUUID()) => {
      const answer = await fake.stream.pushCallback(
        DINGTALK_CARD_CALLBACK_TOPIC,
        dingtalkCardClick({ outTrackId: created.outTrackId, userId, action }),
        { messageId },
      );
      assert.ok(answer.answered, `the click of ${userId} answered`);
      fake.cards.applyCallbackAnswer(created.outTrackId, userId, answer.response);
      const own = (answer.response.userPrivateData as { cardParamMap: { clickAnswer: string } }).cardParamMap;
      return { text: own.clickAnswer, locked: answer.response.cardData !== undefined, messageId };
    };

    // Someone off the list: told on their own copy, the card as it is, nothing decided.
    const stranger = await click('stranger01');
    assert.match(stranger.text, /^Only the operators/);
    assert.equal(stranger.locked, false);
    assert.equal(
      (await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } }))?.status,
      'COMPENSATING',
    );
    const decided = await click(OPERATOR);
    await statusReaches(service, key, 'COMPENSATED');
    const decisions = async () =>
      (await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } })).map(
        (record) => record.decidedBy,
      );
    assert.deepEqual(await decisions(), [`card:dingtalk:${OPERATOR}`]);
    // Decided inside the answer's time: the card locked for everyone; else said under way, the card as it was.
    assert.match(decided.text, /^Done: abandon by card:dingtalk:manager01|^Deciding/);
    assert.equal(decided.locked, decided.text.startsWith('Done'));
    if (decided.locked)
      assert.equal(fake.cards.cards().find((each) => each.outTrackId === created.outTrackId)?.data.status, 'locked');
    // The same click again (the operator clicking twice, the frame sent again): answered, not decided twice.
    const resent = await click(OPERATOR, decided.messageId);
    assert.match(resent.text, /^Already decided: abandon by card:dingtalk:manager01/);
    assert.equal(resent.locked, true);
    assert.deepEqual(await decisions(), [`card:dingtalk:${OPERATOR}`]);
    // Redrawn by its outTrackId once the key moved on.
    const redrawn = await eventually(`the card of ${key} redrawn`, () =>
      Promise.resolve(
        fake.cards.cards().find((each) => each.outTrackId === created.outTrackId && each.data.status === 'decided'),
      ),
    );
    assert.match(redrawn.data.outcome ?? '', /^abandon by card:dingtalk:manager01/);
    assert.equal(fake.cards.cards().filter((each) => each.createdWith.idempotencyKey === key).length, 1, 'one card');
  });

  it('the gateway away and back: /healthz says the connection is not up meanwhile, up again after', async () => {
    assert.deepEqual([(await healthz(apiA)).status, (await healthz(apiA)).body.connections?.dingtalk], [200, 'up']);
    fake.stream.stop();
    const away = await eventually('not up', async () => {
      const answer = await healthz(apiA);
      return answer.body.connections?.dingtalk !== 'up' ? answer : undefined;
    });
    assert.equal(away.status, 200, 'a connection down changes no status code: callbacks and webhooks still work');
    assert.ok(['connecting', 'down'].includes(away.body.connections?.dingtalk ?? ''), JSON.stringify(away.body));
    fake.stream.start();
    await eventually('up again', async () =>
      (await healthz(apiA)).body.connections?.dingtalk === 'up' ? true : undefined,
    );

    const { instanceId, key } = await approvedInstance('DTS-BACK');
    await acknowledged(pushApproval(instanceId));
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  /** How many statements of this database wait for a lock on `oa_event`. */
  const recordsWaiting = async () => {
    const [row] = await service.prisma.$queryRaw<{ waiting: bigint }[]>`
      SELECT count(*) AS waiting FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
      WHERE c.relname = 'oa_event' AND NOT l.granted
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
    return Number(row?.waiting ?? 0);
  };

  /** Runs `during` while the `oa_event` table is locked, so no approval event can be recorded (claimed). */
  async function whileEventsCannotBeRecorded<T>(during: () => Promise<T>): Promise<T> {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked: () => void = () => undefined;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = service.prisma.$transaction(
      async (db) => {
        await db.$executeRawUnsafe('LOCK TABLE oa_event IN EXCLUSIVE MODE');
        locked();
        await released;
      },
      { timeout: 30_000, maxWait: 5_000 },
    );
    await isLocked;
    try {
      return await during();
    } finally {
      release();
      await holding;
    }
  }

  it('a claim that cannot be made is answered LATER, and DingTalk’s redelivery makes the one order', async () => {
    const { instanceId, key } = await approvedInstance('DTS-LATER');
    const eventId = await whileEventsCannotBeRecorded(async () => {
      const pushed = pushApproval(instanceId);
      // The record's insert waits for the lock until its lock timeout, then the claim has failed.
      await until('answered LATER', () => fake.stream.acks(pushed).some((ack) => ack.status === 'LATER'));
      return pushed;
    });
    await acknowledged(eventId);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.equal(fake.stream.acks(eventId)[0]?.status, 'LATER', 'nothing was acknowledged SUCCESS before the claim');
  });

  it('an instance killed with the event in hand: DingTalk sends it again when one connects, and it is one order', async () => {
    const { instanceId, key } = await approvedInstance('DTS-KILLED');
    let eventId = '';
    await whileEventsCannotBeRecorded(async () => {
      eventId = pushApproval(instanceId);
      // Killed once its claim waits for the lock: the event is in hand, its key not yet claimed.
      await eventually('the claim waiting', async () => ((await recordsWaiting()) > 0 ? true : undefined), 60_000);
      await apiA.kill('SIGKILL');
    });
    // On a loaded machine the claim's lock timeout may run out before the kill lands: LATER is
    // no acknowledgement either, and DingTalk sends the event again all the same.
    assert.deepEqual(
      fake.stream.acks(eventId).filter((ack) => ack.status !== 'LATER'),
      [],
      'the killed instance acknowledged nothing',
    );
    assert.equal(await orderCount(service.prisma, key), 0);
    await apiA.start();
    await acknowledged(eventId);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('SIGTERM closes the connection inside the drain, and the process exits cleanly', async () => {
    const stopping = apiA.kill('SIGTERM');
    await until('closed, or the process ended', () => fake.stream.openConnections() === 0 || apiA.exit() !== undefined);
    assert.equal(apiA.exit(), undefined, 'the connection closed before the process ended');
    await stopping;
    assert.equal(apiA.exit()?.code, 0);
    const output = apiA.output();
    assert.match(output, /DingTalk Stream closed/);
    for (const secret of [fake.appSecret, ...fake.stream.issuedTickets()]) {
      assert.ok(!output.includes(secret), 'no secret or ticket in the API’s output');
    }
  });
});
