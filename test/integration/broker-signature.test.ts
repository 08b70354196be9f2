// Signed broker messages with real parts: the webhook, Temporal and the worker publishing to a real
// RabbitMQ with DOWNSTREAM_SECRET, and the reference consumer as a process (`npm run
// consumer:broker`) holding the same secret. Someone allowed to publish on the exchange but without
// the secret publishes an `order.created` for a key before the real one: the consumer dead-letters
// it without claiming the key, and applies the real order, once, with its own lines. And a genuine
// message that waited in the queue for longer than any timestamp window is still applied.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { ConfirmChannel } from 'amqplib';
import pg from 'pg';
import { brokerTopology, type BrokerTopology, declareTopology } from '../../examples/consumer/broker-consumer.js';
import { httpEventVerifier } from '../../examples/consumer/event-signature.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import {
  eventIdFor,
  ORDER_CREATED,
  ORDER_CREATED_ROUTING_KEY,
  type OrderCreatedEvent,
} from '../../domain-node/order-event.js';
import { standardSignatureHeaders } from '../../domain-node/signature.js';
import { createOrderEventPublisher } from '../../services/broker/order-event-publisher.js';
import { managedProcess, type ManagedProcess } from '../../tools/harness/child-process.js';
import { AMQP_URL, brokerForSuite } from '../../tools/harness/rabbitmq.js';
import { type ConsumerLogLine, consumerLogLines, deleteTopology } from '../../tools/harness/broker-consumer.js';
import { DOWNSTREAM_SECRET, forge, freshEvent } from '../../tools/harness/forged-events.js';
import {
  approval,
  createSku,
  eventually,
  postApproval,
  stackEnv,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const RUN = randomBytes(3).toString('hex');

describe('signed order.created messages on the broker', () => {
  const broker = brokerForSuite();
  let channel: ConfirmChannel;
  let pool: pg.Pool;
  let service: TestService;
  let topology: BrokerTopology;
  const schema = `signed_${RUN}`;
  const consumers: ManagedProcess[] = [];

  before(async () => {
    if (!broker.reachable()) return; // every test fails, saying why
    channel = await broker.connection().createConfirmChannel();
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
    // The consumer's queue is bound before anything is published: no message is unroutable.
    topology = brokerTopology(`orders-signed-${RUN}`, 'signed');
    await declareTopology(channel, topology);
    service = await startTestService({
      config: testConfig({
        AMQP_URL,
        DOWNSTREAM_SECRET,
        ORDER_EVENTS_EXCHANGE: topology.exchange,
      }),
    });
  });

  after(async () => {
    for (const consumer of consumers) await consumer.kill();
    await service?.stop();
    if (!broker.reachable()) return;
    await deleteTopology(channel, topology);
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await broker.connection().close();
    await pool.end();
  });

  /** The reference consumer as a process, holding the service's DOWNSTREAM_SECRET. */
  function realConsumer(): ManagedProcess {
    const managed = managedProcess({
      name: `broker-consumer-signed-${consumers.length}`,
      entry: 'examples/consumer/broker-main.ts',
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'info',
        AMQP_URL,
        ORDER_EVENTS_EXCHANGE: topology.exchange,
        CONSUMER_NAME: 'signed',
        CONSUMER_SCHEMA: schema,
        DATABASE_URL: stackEnv().databaseUrl,
        DOWNSTREAM_SECRET,
      },
      readyLine: 'consuming order.created',
    });
    consumers.push(managed);
    return managed;
  }

  /** The effects the consumer applied for the key, each with its lines and total. */
  async function effects(key: string) {
    const { rows } = await pool
      .query<{
        lines: unknown;
        total: string;
      }>(`SELECT lines, total_amount::text AS total FROM ${schema}.shipment_request WHERE idempotency_key = $1`, [key])
      .catch(() => ({ rows: [] }));
    return rows;
  }

  async function claims(key: string): Promise<number> {
    const { rows } = await pool
      .query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.processed_event WHERE idempotency_key = $1`, [key])
      .catch(() => ({ rows: [{ n: '0' }] }));
    return Number(rows[0]?.n);
  }

  /** Every message the dead-letter queue holds, taken off it. */
  async function takeDeadLettered() {
    const taken: { messageId: unknown; content: string }[] = [];
    for (let message = await channel.get(topology.deadLetterQueue, { noAck: true }); message; ) {
      taken.push({ messageId: message.properties.messageId, content: message.content.toString('utf8') });
      message = await channel.get(topology.deadLetterQueue, { noAck: true });
    }
    return taken;
  }

  it('an order.created published for a key without the secret is dead-lettered, and the real order that follows is applied once with its own lines', async () => {
    const consumer = realConsumer();
    await consumer.start();
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('FORGED');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const eventId = eventIdFor(key);
    const real = approval(approvalNo, sku);

    // Everything a forger can know — the key, the event id derived from it, the contract's shape —
    // with lines of its own, and no DOWNSTREAM_SECRET.
    const forged: OrderCreatedEvent = {
      ...freshEvent(),
      eventId,
      idempotencyKey: key,
      approvalNo,
      orderNo: 'SO-FORGED',
      lines: [{ sku, quantity: 999, unitPrice: '0.01' }],
      totalAmount: '9.9900',
    };
    const attempts = [
      forge(forged, { kind: 'unsigned', kept: [] }),
      forge(forged, { kind: 'signed with another key', secret: 'a-secret-the-forger-guessed' }),
      // A genuine signature, of another message, lifted onto this body.
      forge(forged, { kind: 'body changed after signing', quantity: 1 }),
    ];
    for (const { body, headers } of attempts) {
      channel.publish(topology.exchange, ORDER_CREATED_ROUTING_KEY, body, {
        persistent: true,
        messageId: eventId,
        type: ORDER_CREATED,
        contentType: 'application/json',
        headers: { 'idempotency-key': key, ...headers },
      });
    }
    await channel.waitForConfirms();
    await eventually('the forgeries dead-lettered', async () =>
      (await channel.checkQueue(topology.deadLetterQueue)).messageCount === attempts.length ? true : undefined,
    );
    assert.equal(await claims(key), 0, 'no forgery claimed the key');

    assert.equal((await postApproval(service, real)).statusCode, 202);
    await statusReaches(service, key, 'DELIVERED');
    const applied = await eventually('the real order applied', async () => {
      const rows = await effects(key);
      return rows.length > 0 ? rows : undefined;
    });
    assert.deepEqual(
      applied,
      [{ lines: [{ sku, quantity: 2, unitPrice: '10.5000' }], total: '21.0000' }],
      'one effect, with the real lines',
    );
    assert.equal(await claims(key), 1);

    const lines = consumerLogLines(consumer.output()) as (ConsumerLogLine & { reason?: string })[];
    assert.deepEqual(
      lines.filter((line) => line.msg === 'message signature refused, dead-lettered').map((line) => line.reason),
      [
        'missing webhook-id header',
        'no webhook-signature entry matches the id, timestamp and body',
        'no webhook-signature entry matches the id, timestamp and body',
      ],
      'each refusal logged with its reason',
    );
    assert.ok(
      lines.some((line) => line.idempotencyKey === key && line.msg === 'event applied'),
      'the real message was applied, not taken for a duplicate',
    );
    assert.ok(!consumer.output().includes(DOWNSTREAM_SECRET), 'the secret is never logged');
    assert.deepEqual(
      (await takeDeadLettered()).map((message) => message.messageId),
      [eventId, eventId, eventId],
      'the dead-letter queue holds the forgeries',
    );
    await consumer.kill('SIGTERM');
  });

  it('a genuine message that waited in the queue more than five minutes while the consumer was stopped is applied once it starts', async () => {
    // No consumer of an earlier test may take the message meanwhile.
    for (const earlier of consumers) await earlier.kill('SIGTERM');
    const consumer = realConsumer();
    await consumer.start();
    await consumer.kill('SIGTERM');
    const deadLetteredBefore = (await channel.checkQueue(topology.deadLetterQueue)).messageCount;
    // A copy of what the exchange routes, to read the message's headers without consuming it.
    const { queue: tap } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(tap, topology.exchange, ORDER_CREATED_ROUTING_KEY);

    // Published by the product's own publisher, signed with its own code, by a clock ten minutes
    // behind: the message the queue would hold after a consumer was down for ten minutes.
    const event = freshEvent(3, '4.20', 'WAITED');
    const publisher = createOrderEventPublisher(service.config.broker!, { now: () => Date.now() - 10 * 60_000 });
    try {
      await publisher.publish({
        eventId: event.eventId,
        idempotencyKey: event.idempotencyKey,
        body: JSON.stringify(event),
      });
    } finally {
      await publisher.close();
    }
    const copy = await eventually(
      'the copy of the message',
      async () => (await channel.get(tap, { noAck: true })) || undefined,
    );
    await channel.deleteQueue(tap);
    const headers = copy.properties.headers as Record<string, string>;
    const age = Math.floor(Date.now() / 1000) - Number(headers['webhook-timestamp']);
    assert.ok(age > 300, `signed ${age} s ago`);
    // Over HTTP, the window would refuse it; the signature itself holds.
    assert.deepEqual(
      httpEventVerifier({ secret: DOWNSTREAM_SECRET })(copy.content, (name) => headers[name]),
      { ok: false, reason: 'webhook-timestamp is more than 300 seconds off' },
    );
    assert.equal(
      headers['webhook-signature'],
      standardSignatureHeaders(
        { secret: DOWNSTREAM_SECRET },
        event.eventId,
        headers['webhook-timestamp']!,
        copy.content,
      )['webhook-signature'],
    );
    assert.equal((await channel.checkQueue(topology.queue)).messageCount, 1, 'the message waits in the queue');

    await consumer.start();
    const applied = await eventually('the waiting message applied', async () => {
      const rows = await effects(event.idempotencyKey);
      return rows.length > 0 ? rows : undefined;
    });
    assert.deepEqual(applied, [{ lines: event.lines, total: '12.6000' }]);
    assert.equal(
      (await channel.checkQueue(topology.deadLetterQueue)).messageCount,
      deadLetteredBefore,
      'nothing dead-lettered',
    );
    await consumer.kill('SIGTERM');
    assert.equal((await channel.checkQueue(topology.queue)).messageCount, 0, 'the message was acked');
  });
});
