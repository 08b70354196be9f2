// Publishing order.created to a real RabbitMQ beside the HTTP downstream: the message as
// contracted, publisher confirms as "delivered", a message no queue takes as a failure an operator
// redelivers, and a connection cut between the publish and its confirm as a retry whose second copy
// carries the same message id. Needs a broker: AMQP_URL, or RabbitMQ on the local default port
// (tools/harness/rabbitmq.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, afterEach, before, describe, it } from 'node:test';
import type { Channel, ChannelModel, GetMessage } from 'amqplib';
import pg from 'pg';
import { orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { eventIdFor } from '../../domain-node/order-event.js';
import { verifyStandardSignatureOfAnyAge } from '../../domain-node/signature.js';
import { startScriptedDownstream, type ScriptedDownstream } from '../../tools/harness/scripted-downstream.js';
import { startTcpProxy, type TcpProxy } from '../../tools/harness/tcp-proxy.js';
import { cliInProcess } from '../../tools/harness/operator-cli.js';
import { processEnv, workerProcess } from '../../tools/harness/processes.js';
import {
  eventually,
  freshApproval,
  orderCount,
  postApproval,
  recordedLastError,
  stackEnv,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
} from '../../tools/harness/service.js';
import { AMQP_URL, brokerForSuite } from '../../tools/harness/rabbitmq.js';

const SECRET = 'downstream-secret-0123456789';

/** A channel of the suite's connection, and an exchange of this run only (declared as the publisher declares it). */
async function testExchange(broker: ChannelModel) {
  const exchange = `orders-test-${randomBytes(4).toString('hex')}`;
  const channel = await broker.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: true });
  const close = async () => {
    await channel.deleteExchange(exchange).catch(() => undefined);
    await broker.close();
  };
  return { exchange, channel, close };
}

/** A queue of the test's connection bound as a consumer would bind it: `order.created` on the exchange. */
async function boundQueue(channel: Channel, exchange: string): Promise<string> {
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, 'order.created');
  return queue;
}

/** AMQP_URL with its host and port replaced: the worker reaches the broker through the proxy. */
function throughProxy(proxy: TcpProxy): string {
  const url = new URL(AMQP_URL);
  url.host = proxy.address;
  return url.toString();
}

describe('delivery of order events to a message broker', () => {
  // An exchange of this run only, so runs and other tests never see each other's messages.
  let exchange: string;
  let channel: Channel;
  let closeExchange: () => Promise<void>;
  let proxy: TcpProxy;
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;
  const broker = brokerForSuite();

  before(async () => {
    if (!broker.reachable()) return; // every test fails, saying why
    ({ exchange, channel, close: closeExchange } = await testExchange(broker.connection()));
    const target = new URL(AMQP_URL);
    proxy = await startTcpProxy(`${target.hostname}:${target.port || '5672'}`);
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
    downstream = await startScriptedDownstream(pool, SECRET, `consumer_${randomBytes(3).toString('hex')}`);
    service = await startTestService({
      config: testConfig({
        DOWNSTREAM_URL: downstream.url,
        DOWNSTREAM_SECRET: SECRET,
        AMQP_URL: throughProxy(proxy),
        ORDER_EVENTS_EXCHANGE: exchange,
        AMQP_CONFIRM_TIMEOUT_MS: '3000',
        // Well above the confirm timeout, so that an attempt that waits for a confirm ends on the
        // confirm's timeout and not on its own, on a loaded machine too.
        ACTIVITY_START_TO_CLOSE_MS: '7000',
        ACTIVITY_SCHEDULE_TO_CLOSE_MS: '60000',
      }),
    });
  });
  after(async () => {
    await service?.stop();
    await downstream?.close();
    await pool?.end();
    await proxy?.close();
    await closeExchange?.();
  });

  const submit = (prefix: string) => freshApproval(service.prisma, prefix);
  // A test's queue goes with it, passed or failed: a binding left behind would route the next
  // test's "unroutable" message.
  const queues: string[] = [];
  const bindQueue = async () => {
    const queue = await boundQueue(channel, exchange);
    queues.push(queue);
    return queue;
  };
  afterEach(async () => {
    for (const queue of queues.splice(0)) await channel.deleteQueue(queue);
  });

  /** Every message the queue holds for this key, taken off the queue. */
  async function takeMessages(queue: string, key: string, atLeast: number): Promise<GetMessage[]> {
    const taken: GetMessage[] = [];
    await eventually(`${atLeast} message(s) for ${key} on ${queue}`, async () => {
      for (let message = await channel.get(queue, { noAck: true }); message; ) {
        if (message.properties.headers?.['idempotency-key'] === key) {
          taken.push(message);
        }
        message = await channel.get(queue, { noAck: true });
      }
      return taken.length >= atLeast ? true : undefined;
    });
    return taken;
  }

  /** The delivery's last attempt, and the failure class of the attempt before it. */
  /** Of a run that has closed: a retried attempt's start is written to history with its end. */
  async function lastDeliveryAttempt(key: string) {
    const handle = service.temporal.workflow.getHandle(orderWorkflowIdFor(key));
    await handle.result();
    const history = await handle.fetchHistory();
    const deliveries = new Set<string>();
    let last: { attempt: number; retriedAfter: string | undefined } | undefined;
    for (const event of history.events ?? []) {
      if (event.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverOrderEvent') {
        deliveries.add(String(event.eventId));
      }
      const started = event.activityTaskStartedEventAttributes;
      if (started && deliveries.has(String(started.scheduledEventId))) {
        last = {
          attempt: started.attempt ?? 1,
          retriedAfter: started.lastFailure?.applicationFailureInfo?.type ?? undefined,
        };
      }
    }
    return last;
  }

  it('an order is published as contracted, confirmed, and DELIVERED; the HTTP downstream got the same bytes', async () => {
    const queue = await bindQueue();
    const { key, body } = await submit('B1');
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERED');
    const [message, ...more] = await takeMessages(queue, key, 1);
    assert.ok(message);
    assert.equal(more.length, 0, 'one publish, one message');
    assert.equal(message.fields.exchange, exchange);
    assert.equal(message.fields.routingKey, 'order.created');
    const properties = message.properties as unknown as Record<string, unknown> & { headers: Record<string, unknown> };
    assert.deepEqual(
      [properties.messageId, properties.type, properties.contentType, properties.deliveryMode],
      [eventIdFor(key), 'order.created', 'application/json', 2],
    );
    assert.equal(properties.headers['idempotency-key'], key);
    // Signed as the HTTP event is, in the Standard Webhooks scheme, over the same body.
    const signed = properties.headers as Record<string, string | undefined>;
    assert.equal(signed['webhook-id'], eventIdFor(key), 'webhook-id is the messageId');
    const age = Date.now() / 1000 - Number(signed['webhook-timestamp']);
    assert.ok(Math.abs(age) < 120, `webhook-timestamp is the time of this publish, not ${age} s off`);
    assert.deepEqual(
      verifyStandardSignatureOfAnyAge({
        secret: SECRET,
        idHeader: signed['webhook-id'],
        timestampHeader: signed['webhook-timestamp'],
        signatureHeader: signed['webhook-signature'],
        rawBody: message.content,
      }),
      { ok: true },
    );
    const messageId = properties.messageId;
    const [arrival] = downstream.arrivals(key);
    assert.equal(arrival?.eventId, messageId, 'the message id is the X-Event-Id');
    assert.equal(message.content.toString('utf8'), arrival?.body, 'the body is the HTTP event body, byte for byte');
    const event = JSON.parse(message.content.toString('utf8')) as Record<string, unknown>;
    assert.deepEqual(
      [event.type, event.eventId, event.idempotencyKey, event.approvalNo, event.totalAmount],
      ['order.created', eventIdFor(key), key, body.approvalNo, '21.0000'],
    );
  });

  it('a message no queue takes is DELIVERY_FAILED with the reason, not retried; redeliver succeeds once a queue is bound', async () => {
    const { key, body } = await submit('B2');
    assert.equal((await postApproval(service, body)).statusCode, 202);
    const failed = await statusReaches(service, key, 'DELIVERY_FAILED');
    assert.equal(failed.lastError?.code, 'broker-unroutable');
    assert.match(
      await recordedLastError(service, key),
      new RegExp(`BrokerUnroutable: no queue bound to exchange ${exchange} for routing key order.created`),
    );
    // Every attempt sends to every target: one HTTP arrival means one attempt.
    assert.equal(downstream.arrivals(key).length, 1, 'returned, not retried');
    assert.equal(await orderCount(service.prisma, key), 1, 'the order itself stands');

    const queue = await bindQueue();
    const redeliver = await cliInProcess(service, ['redeliver', key, '--by', 'carol', '--json']);
    assert.equal(redeliver.code, 0, redeliver.stderr);
    assert.equal((JSON.parse(redeliver.stdout) as { status: string }).status, 'DELIVERED');
    await statusReaches(service, key, 'DELIVERED');
    const messages = await takeMessages(queue, key, 1);
    assert.deepEqual(
      messages.map((message) => message.properties.messageId as unknown),
      [eventIdFor(key)],
      'the redelivery carries the same message id',
    );
    assert.equal(await downstream.effects(key), 1, 'the HTTP consumer applied it once');
  });

  it('a connection cut after the publish and before its confirm is retried: DELIVERED, and the queue holds a second copy with the same message id', async () => {
    const queue = await bindQueue();
    const { key, body } = await submit('B3');
    // The publish carrying this event id reaches the broker; its confirm never comes back.
    await proxy.setMode({ kind: 'lose-one-answer', containing: eventIdFor(key), cutAfterMs: 300 });
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERED');
    assert.equal(proxy.lostAnswers(), 1, 'one confirm was lost');
    assert.deepEqual(await lastDeliveryAttempt(key), { attempt: 2, retriedAfter: 'BrokerUnavailable' });
    const copies = await takeMessages(queue, key, 2);
    // The duplicate publish the contract allows: the consumer deduplicates by message id.
    assert.equal(copies.length, 2, 'the lost-confirm publish and the retry both reached the queue');
    assert.deepEqual(
      copies.map((copy) => copy.properties.messageId as unknown),
      [eventIdFor(key), eventIdFor(key)],
    );
    assert.equal(copies[0]?.content.toString('utf8'), copies[1]?.content.toString('utf8'), 'the same body');
    assert.equal(downstream.arrivals(key).length, 2, 'the retry sent to every target');
    assert.equal(await downstream.effects(key), 1);
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('a message the broker nacks is retried until attempts run out: DELIVERY_FAILED with BrokerNacked', async () => {
    // A queue that takes nothing and says so: RabbitMQ nacks every publish routed to it.
    const { queue } = await channel.assertQueue('', {
      exclusive: true,
      arguments: { 'x-max-length': 0, 'x-overflow': 'reject-publish' },
    });
    queues.push(queue);
    await channel.bindQueue(queue, exchange, 'order.created');
    const { key, body } = await submit('B4');
    assert.equal((await postApproval(service, body)).statusCode, 202);
    const failed = await statusReaches(service, key, 'DELIVERY_FAILED');
    assert.equal(failed.lastError?.code, 'broker-refused');
    assert.match(
      await recordedLastError(service, key),
      new RegExp(`BrokerNacked: the broker nacked the event on exchange ${exchange}`),
    );
    assert.equal(downstream.arrivals(key).length, 3, 'every attempt of RETRY_MAX_ATTEMPTS=3 sent to both targets');
  });

  it('a broker that never confirms times each attempt out within AMQP_CONFIRM_TIMEOUT_MS; once it answers, redeliver succeeds', async () => {
    const queue = await bindQueue();
    const { key, body } = await submit('B5');
    await proxy.setMode({ kind: 'blackhole' });
    try {
      assert.equal((await postApproval(service, body)).statusCode, 202);
      const failed = await statusReaches(service, key, 'DELIVERY_FAILED');
      assert.equal(failed.lastError?.code, 'broker-timeout');
      assert.match(
        await recordedLastError(service, key),
        /BrokerConfirmTimeout: the broker did not confirm the event within 3000 ms/,
      );
    } finally {
      await proxy.setMode({ kind: 'pass' });
    }
    const redeliver = await cliInProcess(service, ['redeliver', key, '--json']);
    assert.equal(redeliver.code, 0, redeliver.stderr);
    await statusReaches(service, key, 'DELIVERED');
    const [message] = await takeMessages(queue, key, 1);
    assert.equal(message?.properties.messageId, eventIdFor(key));
  });

  it('a worker whose AMQP_URL is not amqp:// or amqps:// stops at start with the variable named', async () => {
    const worker = workerProcess(
      'worker-bad-amqp-url',
      processEnv(service.config, { AMQP_URL: 'http://127.0.0.1:5672', ORDER_EVENTS_EXCHANGE: 'amq.topic' }),
    );
    await assert.rejects(worker.start(), /exited during start-up/);
    assert.equal(worker.exit()?.code, 1);
    assert.match(worker.output(), /AMQP_URL: must be an amqp:\/\/ or amqps:\/\/ URL/);
    assert.match(worker.output(), /ORDER_EVENTS_EXCHANGE: names starting with "amq\." belong to the broker/);
  });
});

describe('delivery of order events to a message broker alone', () => {
  let exchange: string;
  let channel: Channel;
  let closeExchange: () => Promise<void>;
  let service: TestService;
  const broker = brokerForSuite();

  before(async () => {
    if (!broker.reachable()) return; // every test fails, saying why
    ({ exchange, channel, close: closeExchange } = await testExchange(broker.connection()));
    service = await startTestService({
      config: testConfig({ AMQP_URL, DOWNSTREAM_SECRET: SECRET, ORDER_EVENTS_EXCHANGE: exchange }),
    });
  });
  after(async () => {
    await service?.stop();
    await closeExchange?.();
  });

  it('with AMQP_URL and no DOWNSTREAM_URL the delivery step runs: the message is queued and the order DELIVERED', async () => {
    const queue = await boundQueue(channel, exchange);
    const { key, body } = await freshApproval(service.prisma, 'BONLY');
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERED');
    const message = await eventually('the message on the queue', async () => (await channel.get(queue)) || undefined);
    assert.equal(message.properties.messageId, eventIdFor(key));
    channel.ack(message);
  });
});
