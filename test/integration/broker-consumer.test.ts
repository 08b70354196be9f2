// The RabbitMQ reference consumer on a real broker and a real PostgreSQL: each `order.created`
// message has one effect whatever happens to the consumer between its commit and its ack, a
// duplicate publish changes nothing, and a message that can never be applied ends in the
// dead-letter queue instead of coming back. The test publishes contract-shaped messages itself,
// signed with the product's own signing code.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { ConfirmChannel, Options } from 'amqplib';
import pg from 'pg';
import { brokerTopology, type BrokerTopology, declareTopology } from '../../examples/consumer/broker-consumer.js';
import { ORDER_CREATED, ORDER_CREATED_ROUTING_KEY, type OrderCreatedEvent } from '../../domain-node/order-event.js';
import { standardSignatureHeaders } from '../../domain-node/signature.js';
import { seededRandom } from '../../tools/chaos/prng.js';
import { managedProcess, type ManagedProcess } from '../../tools/harness/child-process.js';
import { startTcpProxy } from '../../tools/harness/tcp-proxy.js';
import { AMQP_URL, brokerForSuite } from '../../tools/harness/rabbitmq.js';
import { type ConsumerLogLine, consumerLogLines, deleteTopology } from '../../tools/harness/broker-consumer.js';
import { orderEvent } from '../../tools/harness/forged-events.js';
import { eventually, stackEnv } from '../../tools/harness/service.js';

const RUN = randomBytes(3).toString('hex');
/** DOWNSTREAM_SECRET of the service whose messages the consumer takes. */
const SECRET = 'downstream-secret-0123456789';

function logLines(consumer: ManagedProcess): ConsumerLogLine[] {
  return consumerLogLines(consumer.output());
}

describe('the RabbitMQ consumer of order.created', () => {
  const broker = brokerForSuite();
  let channel: ConfirmChannel;
  let pool: pg.Pool;
  const used: { topology: BrokerTopology; schema: string }[] = [];
  const consumers: ManagedProcess[] = [];

  before(async () => {
    if (!broker.reachable()) return; // every test fails, saying why
    channel = await broker.connection().createConfirmChannel();
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
  });

  after(async () => {
    if (!broker.reachable()) return;
    for (const consumer of consumers) await consumer.kill();
    for (const { topology, schema } of used) {
      await deleteTopology(channel, topology);
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
    await broker.connection().close();
    await pool.end();
  });

  /** An exchange, queue and schema of this test's own, declared before anything is published. */
  async function setup(label: string, through: { databaseUrl?: string; amqpUrl?: string } = {}) {
    const topology = brokerTopology(`orders-test-${RUN}-${label}`, label);
    const schema = `broker_${RUN}_${label}`;
    used.push({ topology, schema });
    await declareTopology(channel, topology);
    const env = {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      AMQP_URL: through.amqpUrl ?? AMQP_URL,
      ORDER_EVENTS_EXCHANGE: topology.exchange,
      CONSUMER_NAME: label,
      CONSUMER_SCHEMA: schema,
      CONSUMER_PREFETCH: '10',
      DATABASE_URL: through.databaseUrl ?? stackEnv().databaseUrl,
      DOWNSTREAM_SECRET: SECRET,
    };
    const consumer = (entry: string, extra: Record<string, string> = {}): ManagedProcess => {
      const managed = managedProcess({
        name: `broker-consumer-${label}`,
        entry,
        env: { ...env, ...extra },
        readyLine: 'consuming order.created',
      });
      consumers.push(managed);
      return managed;
    };
    return {
      topology,
      /** The real consumer, `npm run consumer:broker`. */
      realConsumer: (extra: Record<string, string> = {}) => consumer('examples/consumer/broker-main.ts', extra),
      /** The real consumer with a wait, or a hang, between each commit and its ack. */
      lateAckConsumer: (afterCommit: 'hang' | 'hold' | number) =>
        consumer('tools/harness/broker-consumer-late-ack.ts', { BROKER_CONSUMER_AFTER_COMMIT: String(afterCommit) }),
      effects: async (): Promise<Map<string, number>> => {
        const { rows } = await pool
          .query<{
            key: string;
            count: string;
          }>(`SELECT idempotency_key AS key, count(*) FROM ${schema}.shipment_request GROUP BY 1`)
          .catch(() => ({ rows: [] }));
        return new Map(rows.map((row) => [row.key, Number(row.count)]));
      },
      publish: (event: OrderCreatedEvent) => publish(topology.exchange, Buffer.from(JSON.stringify(event)), event),
    };
  }

  /**
   * A message as the contract has it, signed as the service signs it; `overrides` builds the ones
   * that break the contract otherwise (`headers` replaces the `idempotency-key` header).
   */
  async function publish(
    exchange: string,
    content: Buffer,
    event: Pick<OrderCreatedEvent, 'eventId' | 'idempotencyKey'>,
    overrides: Options.Publish = {},
  ): Promise<void> {
    const headers = (overrides.headers as Record<string, unknown> | undefined) ?? {
      'idempotency-key': event.idempotencyKey,
    };
    const timestamp = String(Math.floor(Date.now() / 1000));
    channel.publish(exchange, ORDER_CREATED_ROUTING_KEY, content, {
      persistent: true,
      messageId: event.eventId,
      type: ORDER_CREATED,
      contentType: 'application/json',
      ...overrides,
      headers: { ...headers, ...standardSignatureHeaders({ secret: SECRET }, event.eventId, timestamp, content) },
    });
    await channel.waitForConfirms();
  }

  async function queueDepth(queue: string): Promise<number> {
    return (await channel.checkQueue(queue)).messageCount;
  }

  it('a consumer killed after its commit and before its ack applies the redelivered message no second time', async () => {
    const { topology, publish, effects, lateAckConsumer, realConsumer } = await setup('kill');
    const event = orderEvent(`BK-${RUN}-1`, 3, '2.50');
    await publish(event);

    const dying = lateAckConsumer('hang');
    await dying.start();
    await eventually('the commit before the hang', () =>
      Promise.resolve(dying.output().includes('committed, now hanging until killed') ? true : undefined),
    );
    assert.equal((await effects()).get(event.idempotencyKey), 1, 'the effect committed before the kill');
    await dying.kill('SIGKILL');

    const restarted = realConsumer();
    await restarted.start();
    const redelivery = await eventually('the redelivery', () =>
      Promise.resolve(logLines(restarted).find((line) => line.idempotencyKey === event.idempotencyKey)),
    );
    assert.equal(redelivery.msg, 'duplicate event ignored');
    assert.equal(redelivery.redelivered, true, 'the broker marked the message redelivered');
    assert.equal(redelivery.redeliveries, 1, 'the consumer counted the redelivery');
    assert.equal((await effects()).get(event.idempotencyKey), 1, 'one effect after the redelivery');
    await restarted.kill('SIGTERM');
    assert.equal(await queueDepth(topology.queue), 0, 'the redelivered message was acked');
  });

  it('the same message published twice has one effect', async () => {
    const { publish, effects, realConsumer } = await setup('twice');
    const event = orderEvent(`BK-${RUN}-2`, 1, '9.99');
    const consumer = realConsumer();
    await consumer.start();
    await publish(event);
    await publish(event);
    const outcomes = await eventually('both deliveries handled', () => {
      const lines = logLines(consumer).filter((line) => line.idempotencyKey === event.idempotencyKey);
      return Promise.resolve(lines.length === 2 ? lines.map((line) => line.msg).sort() : undefined);
    });
    assert.deepEqual(outcomes, ['duplicate event ignored', 'event applied']);
    assert.equal((await effects()).get(event.idempotencyKey), 1);
    await consumer.kill('SIGTERM');
    assert.deepEqual(consumer.exit(), { code: 0, signal: null }, 'SIGTERM stops the consumer cleanly');
  });

  it('poison messages go to the dead-letter queue once, and the messages around them are applied', async () => {
    const { topology, publish: publishEvent, effects, realConsumer } = await setup('poison');
    const consumer = realConsumer();
    await consumer.start();
    const before = orderEvent(`BK-${RUN}-3a`, 2, '1.00');
    const afterwards = orderEvent(`BK-${RUN}-3b`, 4, '1.00');
    const poison = (name: string) => ({
      eventId: `evt_poison${name}${RUN}`,
      idempotencyKey: `APPROVAL:BK-${name}:MAIN`,
    });
    const schemaInvalid = { ...orderEvent(`BK-${RUN}-3c`, 1, '1.00'), lines: [{ sku: 'SKU-1', quantity: 'two' }] };

    await publishEvent(before);
    await publish(topology.exchange, Buffer.from('{"type": "order.created", '), poison('badjson'));
    await publish(topology.exchange, Buffer.from(JSON.stringify(before)), poison('wrongtype'), {
      type: 'order.cancelled',
    });
    await publish(topology.exchange, Buffer.from(JSON.stringify(before)), poison('noheader'), { headers: {} });
    await publish(topology.exchange, Buffer.from(JSON.stringify(schemaInvalid)), schemaInvalid);
    await publishEvent(afterwards);

    await eventually('the messages around the poison applied', async () => {
      const applied = await effects();
      return applied.get(before.idempotencyKey) === 1 && applied.get(afterwards.idempotencyKey) === 1
        ? true
        : undefined;
    });
    await eventually(
      'four messages in the dead-letter queue',
      async () => ((await queueDepth(topology.deadLetterQueue)) === 4 ? true : undefined),
      20_000,
    );
    await consumer.kill('SIGTERM');

    const deadLettered: string[] = [];
    for (let message = await channel.get(topology.deadLetterQueue); message; ) {
      deadLettered.push(String(message.properties.messageId));
      const deaths = (message.properties.headers?.['x-death'] ?? []) as { count: number; reason: string }[];
      assert.deepEqual(
        deaths.map(({ count, reason }) => ({ count, reason })),
        [{ count: 1, reason: 'rejected' }],
      );
      channel.ack(message);
      message = await channel.get(topology.deadLetterQueue);
    }
    assert.deepEqual(
      deadLettered.sort(),
      [
        poison('badjson').eventId,
        poison('wrongtype').eventId,
        poison('noheader').eventId,
        schemaInvalid.eventId,
      ].sort(),
    );
    const refusals = logLines(consumer).filter((line) => line.msg === 'message refused, dead-lettered');
    assert.equal(refusals.length, 4, 'each poison message was delivered once');
    assert.equal(await queueDepth(topology.queue), 0);
    assert.equal((await effects()).size, 2, 'nothing of the poison was applied');
  });

  it('a consumer whose broker connection is cut between commit and ack connects again and applies the redelivery no second time', async () => {
    const amqpUrl = new URL(AMQP_URL);
    const proxy = await startTcpProxy(amqpUrl.host);
    try {
      amqpUrl.host = proxy.address;
      const { topology, publish, effects, lateAckConsumer } = await setup('cut', { amqpUrl: amqpUrl.toString() });
      const consumer = lateAckConsumer('hold');
      await consumer.start();
      const event = orderEvent(`BK-${RUN}-5`, 2, '7.00');
      await publish(event);
      // The ack waits for SIGUSR2: the cut lands between the commit and the ack on any machine.
      await eventually('the commit, its ack held', () =>
        Promise.resolve(consumer.output().includes('committed, holding the ack until SIGUSR2') || undefined),
      );
      assert.equal((await effects()).get(event.idempotencyKey), 1, 'the effect committed before the cut');
      proxy.cutAll();
      await eventually('the consumer noticing the cut', () =>
        Promise.resolve(consumer.output().includes('broker connection lost; connecting again') || undefined),
      );
      process.kill(consumer.pid()!, 'SIGUSR2');
      const redelivery = await eventually('the redelivery on a new connection', () =>
        Promise.resolve(
          logLines(consumer).find(
            (line) => line.idempotencyKey === event.idempotencyKey && line.msg === 'duplicate event ignored',
          ),
        ),
      );
      assert.equal(redelivery.redelivered, true);
      assert.ok(consumer.output().includes('broker connection lost; connecting again'));
      await consumer.kill('SIGTERM');
      assert.equal((await effects()).get(event.idempotencyKey), 1);
      assert.equal(await queueDepth(topology.queue), 0, 'the redelivery was acked');
    } finally {
      await proxy.close();
    }
  });

  it('a consumer whose queue is deleted under it declares the queue again and applies what comes next', async () => {
    const { topology, publish, effects, realConsumer } = await setup('cancel');
    const consumer = realConsumer();
    await consumer.start();
    const first = orderEvent(`BK-${RUN}-6a`, 1, '4.00');
    await publish(first);
    await eventually('the first event applied', async () =>
      (await effects()).get(first.idempotencyKey) === 1 ? true : undefined,
    );
    await channel.deleteQueue(topology.queue);
    // Published before the queue exists again, a message would route nowhere: wait for the second start.
    await eventually('the queue declared again', () =>
      Promise.resolve(
        logLines(consumer).filter((line) => line.msg === 'consuming order.created').length === 2 || undefined,
      ),
    );
    const second = orderEvent(`BK-${RUN}-6b`, 2, '4.00');
    await publish(second);
    await eventually('the event published after the deletion applied', async () =>
      (await effects()).get(second.idempotencyKey) === 1 ? true : undefined,
    );
    assert.ok(consumer.output().includes('the broker cancelled the consumer; connecting again'));
    await consumer.kill('SIGTERM');
    assert.equal(await queueDepth(topology.queue), 0);
  });

  it('a consumer the broker refuses for good exits 1 and says why instead of trying again', async () => {
    const { topology, realConsumer } = await setup('refused');
    const wrongPassword = new URL(AMQP_URL);
    wrongPassword.username = 'guest';
    wrongPassword.password = `wrong-${RUN}`;
    const refusedLogin = realConsumer({ AMQP_URL: wrongPassword.toString() });
    await assert.rejects(refusedLogin.start(), /exited during start-up/);
    assert.deepEqual(refusedLogin.exit(), { code: 1, signal: null });
    assert.match(refusedLogin.output(), /AMQP_URL: .* will not serve queue .*403 ACCESS_REFUSED/);

    // The queue exists with other arguments: declaring it again is refused with PRECONDITION_FAILED.
    await channel.deleteQueue(topology.queue);
    await channel.assertQueue(topology.queue, { durable: true });
    const refusedQueue = realConsumer();
    await assert.rejects(refusedQueue.start(), /exited during start-up/);
    assert.deepEqual(refusedQueue.exit(), { code: 1, signal: null });
    assert.match(refusedQueue.output(), /406 PRECONDITION_FAILED/);
    assert.ok(!refusedQueue.output().includes('trying again'));
  });

  it('a message that meets its database down is requeued after a pause and applied once the database is back', async () => {
    const database = new URL(stackEnv().databaseUrl);
    const proxy = await startTcpProxy(database.host);
    try {
      database.host = proxy.address;
      const { topology, publish, effects, realConsumer } = await setup('dbdown', { databaseUrl: database.toString() });
      const consumer = realConsumer();
      await consumer.start();
      await proxy.setMode({ kind: 'refuse' });
      const event = orderEvent(`BK-${RUN}-4`, 5, '3.00');
      await publish(event);
      await eventually('two requeues while the database is down', () => {
        const requeues = logLines(consumer).filter((line) => line.msg === 'event not applied, requeued after a pause');
        return Promise.resolve(requeues.length >= 2 ? true : undefined);
      });
      await proxy.setMode({ kind: 'pass' });
      await eventually('the event applied', async () =>
        (await effects()).get(event.idempotencyKey) === 1 ? true : undefined,
      );
      await consumer.kill('SIGTERM');
      assert.equal((await effects()).get(event.idempotencyKey), 1);
      assert.equal(await queueDepth(topology.queue), 0);
      assert.equal(await queueDepth(topology.deadLetterQueue), 0, 'a passing failure is not dead-lettered');
    } finally {
      await proxy.close();
    }
  });

  it('200 messages with duplicates, in random order, across SIGKILLs of the consumer: one effect per key, exact totals', async () => {
    const { topology, publish, effects, lateAckConsumer, realConsumer } = await setup('batch');
    const random = seededRandom(0xc0ffee);
    const unique = Array.from({ length: 160 }, (_, i) =>
      orderEvent(`BK-${RUN}-B${i}`, 1 + Math.floor(random() * 50), `${1 + Math.floor(random() * 90)}.25`),
    );
    const messages = [...unique, ...Array.from({ length: 40 }, () => unique[Math.floor(random() * unique.length)]!)];
    for (let i = messages.length - 1; i > 0; i -= 1) {
      const j = Math.floor(random() * (i + 1));
      [messages[i], messages[j]] = [messages[j]!, messages[i]!];
    }
    const processed = async () => {
      const { rows } = await pool.query<{ count: string }>(`SELECT count(*) FROM broker_${RUN}_batch.processed_event`);
      return Number(rows[0]?.count ?? 0);
    };

    // Three rounds: publish a third, let a consumer that waits between commit and ack get some way
    // into the queue, and SIGKILL it with messages committed but unacked.
    const kills: ManagedProcess[] = [];
    for (let round = 0; round < 3; round += 1) {
      for (const message of messages.slice(round * 67, (round + 1) * 67)) await publish(message);
      const consumer = lateAckConsumer(100);
      await consumer.start();
      const reached = (await processed()) + 15;
      await eventually('the consumer under way', async () => ((await processed()) >= reached ? true : undefined));
      await consumer.kill('SIGKILL');
      kills.push(consumer);
    }
    const last = realConsumer();
    await last.start();
    await eventually('every key applied and the queue drained', async () =>
      (await processed()) === unique.length && (await queueDepth(topology.queue)) === 0 ? true : undefined,
    );
    await last.kill('SIGTERM');

    const applied = await effects();
    assert.equal(applied.size, unique.length, 'an effect for every key');
    assert.deepEqual([...new Set(applied.values())], [1], 'one effect per key');
    const { rows } = await pool.query<{ total: string; quantity: string }>(
      `SELECT sum(total_amount)::text AS total, sum((lines->0->>'quantity')::int)::text AS quantity
       FROM broker_${RUN}_batch.shipment_request`,
    );
    const expectedCents = unique.reduce((sum, event) => sum + Math.round(Number(event.totalAmount) * 100), 0);
    const expectedQuantity = unique.reduce((sum, event) => sum + event.lines[0]!.quantity, 0);
    assert.equal(Math.round(Number(rows[0]?.total) * 100), expectedCents, 'the amounts add up exactly');
    assert.equal(Number(rows[0]?.quantity), expectedQuantity, 'the quantities add up exactly');
    assert.equal(await queueDepth(topology.queue), 0, 'nothing left behind');
    const redelivered = [...kills, last]
      .flatMap(logLines)
      .filter((line) => line.redelivered === true && line.msg === 'duplicate event ignored');
    assert.ok(redelivered.length > 0, 'a kill landed between a commit and its ack');
    console.log(`batch: ${redelivered.length} redelivered message(s) found already applied after 3 SIGKILLs`);
  });
});
