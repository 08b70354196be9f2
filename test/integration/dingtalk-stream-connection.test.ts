// The DingTalk Stream connection (vendors/dingtalk/stream.ts) against the fake gateway
// speaking the protocol (tools/harness/fake-dingtalk-stream.ts): the endpoint and its one-time
// ticket, the acknowledgement sent only with what the handler resolved, LATER bringing the event
// back, the ping echoed, a silent connection given up, `disconnect` answered with a new
// connection, a gateway away and back with growing pauses, and a stop that acknowledges what it
// holds before it closes. The handler here stands for the service's (dingtalk-stream.test.ts runs
// the real one); no output may show the app secret or a ticket.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { openDingTalkStream, type StreamEvent, type StreamTimings } from '../../vendors/dingtalk/stream.js';
import type { StreamAckStatus } from '../../vendors/dingtalk/stream-frames.js';
import type { ConnectionState } from '../../services/health/event-connections.js';
import { dingtalkStreamApproval, type FakeDingTalk, startFakeDingTalk } from '../../tools/harness/fake-dingtalk.js';
import { eventually, until } from '../../tools/harness/service.js';

const TIMINGS: Partial<StreamTimings> = {
  firstRetryMs: 100,
  maxRetryMs: 400,
  heartbeatMs: 300,
  requestTimeoutMs: 2_000,
};

/** Every connection a test opened: stopped after it, passed or failed, so none runs into the next. */
const opened: { stop(withinMs: number): Promise<void> }[] = [];

/** A connection with a handler the test drives, and everything it logged and reported. */
function connect(fake: FakeDingTalk, onEvent: (event: StreamEvent) => Promise<StreamAckStatus>, secret?: string) {
  const lines: string[] = [];
  const states: ConnectionState[] = [];
  const stream = openDingTalkStream({
    appKey: fake.appKey,
    appSecret: secret ?? fake.appSecret,
    apiBaseUrl: fake.url,
    onEvent,
    onState: (state) => states.push(state),
    log: pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) }),
    timings: TIMINGS,
  });
  opened.push(stream);
  return { stream, lines, states };
}

const approval = (id: string) => dingtalkStreamApproval({ processInstanceId: id, type: 'finish', result: 'agree' });

describe('DingTalk Stream connection', () => {
  let fake: FakeDingTalk;
  const logs: string[][] = [];

  before(async () => {
    fake = await startFakeDingTalk({ redeliverAfterMs: 500 });
  });
  // A connection the client has closed is counted open by the gateway until its side of the close
  // has run too: on a loaded machine the next test's "connected" would count it.
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((stream) => stream.stop(1_000)));
    await until('every connection closed at the gateway', () => fake.stream.openConnections() === 0);
  });
  after(async () => {
    // Nothing any connection logged shows the secret or a ticket it was given.
    const secrets = [fake.appSecret, ...fake.stream.issuedTickets()];
    for (const line of logs.flat()) {
      for (const secret of secrets) assert.ok(!line.includes(secret), `a log line shows a secret: ${line}`);
    }
    await fake.close();
  });

  it('an event is acknowledged SUCCESS only once its handler has resolved', async () => {
    let release: (status: StreamAckStatus) => void = () => undefined;
    const seen: StreamEvent[] = [];
    const { stream, lines, states } = connect(fake, (event) => {
      seen.push(event);
      return new Promise((resolve) => (release = resolve));
    });
    logs.push(lines);
    const eventId = fake.stream.push(approval('PI-HOLD'));
    await until('the event reaches the handler', () => seen.length === 1);
    assert.equal(seen[0]?.eventId, eventId, 'the frame’s eventId is handed on');
    assert.equal(seen[0]?.eventType, 'bpms_instance_change');
    assert.equal((JSON.parse(seen[0]?.data ?? '{}') as { processInstanceId?: string }).processInstanceId, 'PI-HOLD');
    // The gateway may push it again meanwhile (its redelivery window is short here): no ack yet.
    assert.deepEqual(fake.stream.acks(eventId), [], 'no acknowledgement while the handler works');
    release('SUCCESS');
    await until('the acknowledgement', () => fake.stream.acks(eventId).length > 0);
    assert.equal(fake.stream.acks(eventId)[0]?.status, 'SUCCESS');
    assert.deepEqual(states.slice(0, 2), ['connecting', 'up']);
    await stream.stop(1_000);
    assert.equal(states.at(-1), 'down', 'a stopped connection is down');
  });

  it('a callback topic is subscribed to only when given: its frame answered with the handler’s response, a failing handler’s and one arriving while closing with theirs', async () => {
    const topic = '/v1.0/card/instances/callback';
    const plain = connect(fake, () => Promise.resolve('SUCCESS'));
    logs.push(plain.lines);
    await until('connected', () => fake.stream.openConnections() === 1);
    assert.deepEqual(fake.stream.callbackTopics(), [], 'no callback subscribed without a handler');
    assert.deepEqual(await fake.stream.pushCallback(topic, { n: 0 }), { answered: false });
    await plain.stream.stop(1_000);

    let fail = false;
    let hold: Promise<void> = Promise.resolve();
    const lines: string[] = [];
    const seen: string[] = [];
    const stream = openDingTalkStream({
      appKey: fake.appKey,
      appSecret: fake.appSecret,
      apiBaseUrl: fake.url,
      onEvent: () => Promise.resolve('SUCCESS'),
      callbacks: {
        topics: [topic],
        onCallback: async (callback) => {
          seen.push(callback.data);
          await hold;
          if (fail) throw new Error('the handler failed');
          return { cardData: { n: String(seen.length) } };
        },
        whileClosing: { closing: true },
        onFailure: { failed: true },
      },
      onState: () => undefined,
      log: pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) }),
      timings: TIMINGS,
    });
    opened.push(stream);
    logs.push(lines);
    await until('connected with the topic', () => fake.stream.callbackTopics().includes(topic));
    const answered = await fake.stream.pushCallback(topic, { n: 1 });
    assert.deepEqual(answered.answered && answered.response, { cardData: { n: '1' } });
    assert.deepEqual(seen, ['{"n":1}']);
    fail = true;
    const failed = await fake.stream.pushCallback(topic, { n: 2 });
    assert.deepEqual(failed.answered && failed.response, { failed: true }, 'answered, so that DingTalk does not wait');
    fail = false;

    // A callback in hand when the connection closes is answered before it closes; one that
    // arrives meanwhile is not taken, and told so (the API restarting under a click).
    let release = () => {};
    hold = new Promise<void>((resolve) => (release = resolve));
    const inHand = fake.stream.pushCallback(topic, { n: 3 });
    await until('the callback in hand', () => seen.length === 3);
    const stopping = stream.stop(5_000);
    const meanwhile = await fake.stream.pushCallback(topic, { n: 4 });
    assert.deepEqual(meanwhile.answered && meanwhile.response, { closing: true });
    assert.equal(seen.length, 3, 'the one that came while closing reached no handler');
    release();
    const answered3 = await inHand;
    assert.deepEqual(answered3.answered && answered3.response, { cardData: { n: '3' } });
    await stopping;
  });

  it('a handler that fails is answered LATER, and DingTalk’s redelivery is taken', async () => {
    let calls = 0;
    const { stream, lines } = connect(fake, () => {
      calls += 1;
      return calls === 1 ? Promise.reject(new Error('the claim failed')) : Promise.resolve('SUCCESS' as const);
    });
    logs.push(lines);
    const eventId = fake.stream.push(approval('PI-LATER'));
    await until('acknowledged SUCCESS', () => fake.stream.acks(eventId).some((ack) => ack.status === 'SUCCESS'));
    assert.deepEqual(
      fake.stream.acks(eventId).map((ack) => ack.status),
      ['LATER', 'SUCCESS'],
    );
    assert.equal(fake.stream.deliveries(eventId), 2);
    await stream.stop(1_000);
  });

  it('a ping is echoed, and a connection whose pings go unanswered is given up and opened again', async () => {
    const { stream, lines } = connect(fake, () => Promise.resolve('SUCCESS' as const));
    logs.push(lines);
    await until('connected', () => fake.stream.openConnections() === 1);
    // Echoed by the one connection, whichever it is by then.
    await eventually('the SYSTEM ping echoed', async () => ((await fake.stream.ping(2_000)) === 1 ? true : undefined));
    const openedBefore = fake.stream.connectionsOpened();
    fake.stream.mute(true);
    try {
      await until('a new connection after the silent one', () => fake.stream.connectionsOpened() > openedBefore);
    } finally {
      fake.stream.mute(false);
    }
    assert.ok(lines.some((line) => line.includes('no answer to the last ping')));
    await stream.stop(1_000);
  });

  it('`disconnect` is answered by a new connection, and events go on', async () => {
    const { stream, lines } = connect(fake, () => Promise.resolve('SUCCESS' as const));
    logs.push(lines);
    await until('connected', () => fake.stream.openConnections() === 1);
    const openedBefore = fake.stream.connectionsOpened();
    fake.stream.sendDisconnect();
    await until(
      'moved to a new connection',
      () => fake.stream.connectionsOpened() > openedBefore && fake.stream.openConnections() === 1,
    );
    const eventId = fake.stream.push(approval('PI-MOVED'));
    await until('acknowledged on the new one', () => fake.stream.acks(eventId).some((ack) => ack.status === 'SUCCESS'));
    await stream.stop(1_000);
  });

  it('a gateway away is tried again after growing pauses, and the connection is up again once it is back', async () => {
    const { stream, lines, states } = connect(fake, () => Promise.resolve('SUCCESS' as const));
    logs.push(lines);
    await until('connected', () => states.at(-1) === 'up');
    const before = fake.stream.endpointRequests().total;
    fake.stream.stop();
    await until('down', () => states.at(-1) === 'down');
    await until('six tries while away', () => fake.stream.endpointRequests().total - before >= 6);
    const times = fake.stream.endpointRequests().times.slice(before);
    const gaps = times.slice(1).map((time, index) => time - (times[index] as number));
    // Pauses of 50–100, 100–200, then 200–400 ms (half of each random): never a tight loop, and
    // grown to the cap's floor by the fourth.
    assert.ok(
      gaps.every((gap) => gap >= 45),
      `gaps ${gaps.join(', ')} ms`,
    );
    assert.ok(
      gaps.slice(3).every((gap) => gap >= 180),
      `gaps ${gaps.join(', ')} ms`,
    );
    fake.stream.start();
    await until('up again', () => states.at(-1) === 'up');
    assert.ok(states.includes('connecting') && states.includes('down'));
    await stream.stop(1_000);
  });

  it('a wrong secret is refused and tried again with pauses; nothing shows the secret', async () => {
    const wrong = 'the-wrong-secret-0123456789';
    const before = fake.stream.endpointRequests().refused;
    const { stream, lines, states } = connect(fake, () => Promise.resolve('SUCCESS' as const), wrong);
    logs.push(lines);
    await until('refused twice', () => fake.stream.endpointRequests().refused - before >= 2);
    assert.equal(states.at(-1) === 'up', false);
    assert.ok(
      lines.some((line) => line.includes('HTTP 401, InvalidAuthentication')),
      lines.join('\n'),
    );
    for (const line of lines) assert.ok(!line.includes(wrong), 'the secret given is never logged');
    await stream.stop(1_000);
  });

  it('a stop takes no new event, acknowledges the one in hand, then closes', async () => {
    let release: (status: StreamAckStatus) => void = () => undefined;
    let handled = 0;
    const { stream, lines } = connect(fake, () => {
      handled += 1;
      return new Promise((resolve) => (release = resolve));
    });
    logs.push(lines);
    const eventId = fake.stream.push(approval('PI-STOP'));
    await until('in hand', () => handled === 1);
    const stopped = stream.stop(5_000);
    setTimeout(() => release('SUCCESS'), 200);
    await stopped;
    assert.equal(fake.stream.acks(eventId)[0]?.status, 'SUCCESS', 'acknowledged before the close');
    assert.equal(fake.stream.openConnections(), 0, 'closed');
    assert.equal(handled, 1, 'no redelivery was taken while stopping');
  });
});
