// The doors of both reference consumers over generated forgeries (tools/harness/forged-events.ts):
// events without a signature, signed with another key, or genuine but with the body, webhook-id,
// webhook-timestamp or signature changed afterwards. Each is a well-formed event of a fresh key,
// so only the signature check stands between it and the ledger. The broker consumer runs on a
// real RabbitMQ, the HTTP consumer on a real socket, both on a real PostgreSQL; each door is also
// run with its signature check taken out (a verifier that accepts everything, passed in from here),
// and the same check finds the forgery it applies.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { ConfirmChannel } from 'amqplib';
import fc from 'fast-check';
import pg from 'pg';
import pino from 'pino';
import { createEventLedger, type EventLedger } from '../../examples/consumer/apply-once.js';
import {
  type BrokerConsumer,
  brokerTopology,
  declareTopology,
  startBrokerConsumer,
} from '../../examples/consumer/broker-consumer.js';
import { createConsumer, REFUSED } from '../../examples/consumer/consumer.js';
import { brokerEventVerifier, type EventVerifier, httpEventVerifier } from '../../examples/consumer/event-signature.js';
import { ORDER_CREATED, ORDER_CREATED_ROUTING_KEY, type OrderCreatedEvent } from '../../domain-node/order-event.js';
import { AMQP_URL, brokerForSuite } from '../../tools/harness/rabbitmq.js';
import { deleteTopology } from '../../tools/harness/broker-consumer.js';
import {
  anyForgery,
  anyRefusalWithWindow,
  DOWNSTREAM_SECRET,
  forge,
  type Forgery,
  freshEvent,
  genuine,
  type SignedDelivery,
} from '../../tools/harness/forged-events.js';
import { eventually, stackEnv } from '../../tools/harness/service.js';

const RUN = randomBytes(3).toString('hex');
/** The signature check taken out: what the generated checks must find. */
const SKIPS_THE_CHECK: EventVerifier = () => ({ ok: true });

/** Log lines of a consumer, to show the reason is logged and the secret never is. */
function capturedLog() {
  const lines: string[] = [];
  return { lines, log: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }) };
}

/** What the consumer's ledger holds for a key: its claim and its effects. */
async function ledgerRows(pool: pg.Pool, schema: string, key: string) {
  const { rows } = await pool.query<{ claims: string; effects: string }>(
    `SELECT (SELECT count(*) FROM ${schema}.processed_event WHERE idempotency_key = $1)::text AS claims,
            (SELECT count(*) FROM ${schema}.shipment_request WHERE idempotency_key = $1)::text AS effects`,
    [key],
  );
  return { claims: Number(rows[0]?.claims), effects: Number(rows[0]?.effects) };
}

describe('the broker consumer door over generated forgeries', () => {
  const broker = brokerForSuite();
  let channel: ConfirmChannel;
  let pool: pg.Pool;
  const cleanups: (() => Promise<unknown>)[] = [];

  before(async () => {
    if (!broker.reachable()) return; // every test fails, saying why
    channel = await broker.connection().createConfirmChannel();
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
  });

  after(async () => {
    if (!broker.reachable()) return;
    for (const cleanup of cleanups.reverse()) await cleanup();
    await broker.connection().close();
    await pool.end();
  });

  /** A consumer of a queue and a ledger of its own, with the given signature check. */
  async function consumerWith(label: string, verify: EventVerifier) {
    const topology = brokerTopology(`orders-door-${RUN}-${label}`, label);
    const schema = `door_${RUN}_${label}`;
    await declareTopology(channel, topology);
    const ledger: EventLedger = createEventLedger({ database: { store: 'postgresql', pool }, schema });
    await ledger.migrate();
    const { lines, log } = capturedLog();
    const consumer: BrokerConsumer = await startBrokerConsumer({
      url: AMQP_URL,
      topology,
      prefetch: 10,
      verify,
      apply: ledger.apply,
      log,
    });
    cleanups.push(
      () => consumer.stop(),
      () => deleteTopology(channel, topology),
      () => pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`),
    );

    const settled = () => {
      const { applied, duplicates, deadLettered, requeued } = consumer.counts;
      return applied + duplicates + deadLettered + requeued;
    };

    /** Publishes one message as the contract shapes it and waits until the consumer settled it. */
    async function deliver(event: OrderCreatedEvent, delivery: SignedDelivery) {
      const before = settled();
      channel.publish(topology.exchange, ORDER_CREATED_ROUTING_KEY, delivery.body, {
        persistent: true,
        messageId: event.eventId,
        type: ORDER_CREATED,
        contentType: 'application/json',
        headers: { 'idempotency-key': event.idempotencyKey, ...delivery.headers },
      });
      await channel.waitForConfirms();
      const deadline = Date.now() + 15_000;
      while (settled() === before) {
        if (Date.now() > deadline) throw new Error(`the consumer did not settle ${event.eventId} in 15 s`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }

    /** The property: the forged message is dead-lettered, and the ledger holds nothing of it. */
    const refusesEveryForgery = fc.asyncProperty(anyForgery, async (forgery: Forgery) => {
      const event = freshEvent();
      const deadLetteredBefore = consumer.counts.deadLettered;
      await deliver(event, forge(event, forgery));
      assert.deepEqual(await ledgerRows(pool, schema, event.idempotencyKey), { claims: 0, effects: 0 });
      assert.equal(consumer.counts.deadLettered, deadLetteredBefore + 1, `${forgery.kind}: dead-lettered`);
    });

    return { topology, consumer, lines, schema, deliver, refusesEveryForgery };
  }

  it('dead-letters every generated forgery — unsigned, another key, a body, id or timestamp changed — and applies none', async () => {
    const { topology, consumer, lines, schema, deliver, refusesEveryForgery } = await consumerWith(
      'real',
      brokerEventVerifier({ secret: DOWNSTREAM_SECRET }),
    );
    await fc.assert(refusesEveryForgery, { numRuns: 40 });
    assert.equal(consumer.counts.applied, 0);
    assert.equal(consumer.counts.signatureRefused, consumer.counts.deadLettered, 'each refused for its signature');
    await eventually('every forgery in the dead-letter queue', async () =>
      (await channel.checkQueue(topology.deadLetterQueue)).messageCount === consumer.counts.deadLettered
        ? true
        : undefined,
    );
    const refusals = lines.filter((line) => line.includes('message signature refused, dead-lettered'));
    assert.equal(refusals.length, consumer.counts.signatureRefused, 'each refusal logged');
    assert.ok(
      refusals.every((line) => typeof (JSON.parse(line) as { reason?: unknown }).reason === 'string'),
      'with its reason',
    );
    assert.ok(!lines.some((line) => line.includes(DOWNSTREAM_SECRET)), 'the secret is never logged');

    // The door is not shut to everyone: the genuine event is applied.
    const event = freshEvent();
    await deliver(event, genuine(event));
    assert.deepEqual(await ledgerRows(pool, schema, event.idempotencyKey), { claims: 1, effects: 1 });
  });

  it('a broker consumer that skips the signature check applies a forgery, and the same check finds it', async () => {
    const { refusesEveryForgery, consumer } = await consumerWith('skips', SKIPS_THE_CHECK);
    const result = await fc.check(refusesEveryForgery, { numRuns: 40, endOnFailure: true });
    assert.ok(result.failed, 'the check found the consumer that applies forgeries');
    const [forgery] = result.counterexample ?? [];
    console.log(`found: a message ${forgery?.kind} was applied (seed ${result.seed})`);
    assert.ok(consumer.counts.applied >= 1, 'a forgery reached the ledger');
  });
});

describe('the HTTP consumer door over generated forgeries', () => {
  let pool: pg.Pool;
  const cleanups: (() => Promise<unknown>)[] = [];

  before(() => {
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
  });

  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await pool.end();
  });

  /** The consumer of `consumer.ts` on a socket, with the given signature check. */
  async function consumerWith(label: string, verify: EventVerifier) {
    const schema = `door_${RUN}_http_${label}`;
    const logged: string[] = [];
    const consumer = createConsumer({
      database: { store: 'postgresql', pool },
      verify,
      schema,
      log: (message, fields) => logged.push(JSON.stringify({ msg: message, ...fields })),
    });
    await consumer.migrate();
    const server = http.createServer(consumer.handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
    cleanups.push(
      () => new Promise((resolve) => server.close(resolve)),
      () => pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`),
    );

    async function post(event: OrderCreatedEvent, delivery: SignedDelivery) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': event.idempotencyKey, ...delivery.headers },
        body: delivery.body,
      });
      return {
        status: response.status,
        contentType: response.headers.get('content-type'),
        body: await response.text(),
      };
    }

    const oneRefusal = { status: REFUSED.status, contentType: 'application/json', body: JSON.stringify(REFUSED.body) };

    /** The property: the one refusal, byte for byte, and nothing in the ledger. */
    const refusesEveryForgery = fc.asyncProperty(anyRefusalWithWindow, async (forgery: Forgery) => {
      const event = freshEvent();
      const answer = await post(event, forge(event, forgery));
      assert.deepEqual(answer, oneRefusal, `${forgery.kind}: the one refusal`);
      assert.deepEqual(await ledgerRows(pool, schema, event.idempotencyKey), { claims: 0, effects: 0 });
    });

    return { schema, logged, post, refusesEveryForgery };
  }

  it('answers every generated forgery, and a genuine event sent too late, with the one refusal byte for byte, and applies none', async () => {
    const { schema, logged, post, refusesEveryForgery } = await consumerWith(
      'real',
      httpEventVerifier({ secret: DOWNSTREAM_SECRET }),
    );
    await fc.assert(refusesEveryForgery, { numRuns: 100 });
    const reasons = new Set(
      logged.map((line) => JSON.parse(line) as { msg: string; reason?: string }).map(({ reason }) => reason),
    );
    assert.ok(reasons.size > 3, `the reasons differ in the log: ${[...reasons].join('; ')}`);
    assert.ok(!logged.some((line) => line.includes(DOWNSTREAM_SECRET)), 'the secret is never logged');

    // The door is not shut to everyone: the genuine event is applied.
    const event = freshEvent();
    assert.equal((await post(event, genuine(event))).status, 200);
    assert.deepEqual(await ledgerRows(pool, schema, event.idempotencyKey), { claims: 1, effects: 1 });
  });

  it('an HTTP consumer that skips the signature check applies a forgery, and the same check finds it', async () => {
    const { refusesEveryForgery } = await consumerWith('skips', SKIPS_THE_CHECK);
    const result = await fc.check(refusesEveryForgery, { numRuns: 100, endOnFailure: true });
    assert.ok(result.failed, 'the check found the consumer that applies forgeries');
    const [forgery] = result.counterexample ?? [];
    console.log(`found: an event ${forgery?.kind} was applied (seed ${result.seed})`);
  });
});
