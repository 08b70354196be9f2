// A reference consumer of `order.created` from RabbitMQ, applying each event once with the same
// code as the HTTP consumer (apply-once.ts). Manual acks: a message is acked only after the
// transaction that holds its dedup row and its effect committed, so a consumer that dies in between
// leaves it unacked, the broker delivers it again, and the ledger finds the key and applies nothing
// (docs/architecture.md, decision 24). A message whose signature does not hold (event-signature.ts:
// DOWNSTREAM_SECRET, any age) is never read, and goes to the dead-letter queue without touching the
// ledger, so a forger cannot claim a key ahead of the real event. A message that can never be
// applied goes there too, at once; one that failed for a passing reason goes back to the queue
// after a pause.
import { connect, type Channel, type ConsumeMessage } from 'amqplib';
import type { Logger } from 'pino';
import { jitteredBackoffMs } from '../../domain/backoff.js';
import { classifyError } from '../../domain/error-classification.js';
import { ORDER_CREATED, ORDER_CREATED_ROUTING_KEY } from '../../domain-node/order-event.js';
import type { BrokerTopology } from './consumer-config.js';
import { type ApplyEvent, type EventParse, parseOrderCreatedEvent } from './apply-once.js';
import type { EventVerifier } from './event-signature.js';

// Named with the settings that make them (examples/consumer/consumer-config.ts); kept here for callers.
export { brokerTopology, type BrokerTopology } from './consumer-config.js';

export interface DeliveryCounts {
  applied: number;
  duplicates: number;
  /** Deliveries the broker marked `redelivered`: an earlier delivery of the message was not acked. */
  redelivered: number;
  /** Every message nacked to the dead-letter queue, the unsigned and wrongly signed included. */
  deadLettered: number;
  /** Of those, the messages whose signature did not hold: published by someone without the secret. */
  signatureRefused: number;
  requeued: number;
}

export interface BrokerConsumer {
  counts: DeliveryCounts;
  /** Settles when the connection ends, with the reason when it was not `stop`. */
  closed: Promise<Error | undefined>;
  stop: () => Promise<void>;
}

// Refused by the database for what the message says: the same message is refused every time.
const REFUSED_DATA = new Set(['ConstraintViolation', 'InvalidData']);

// Pauses before a message that failed for a passing reason (the database is down) goes back to
// the queue; without one the broker would hand it straight back, as fast as it can fail.
const REQUEUE_BACKOFF = { initialIntervalMs: 500, backoffCoefficient: 2, maximumIntervalMs: 30_000 };

export async function startBrokerConsumer(options: {
  url: string;
  topology: BrokerTopology;
  prefetch: number;
  /** The signature check every message passes first: `brokerEventVerifier` with DOWNSTREAM_SECRET. */
  verify: EventVerifier;
  apply: ApplyEvent;
  log: Logger;
}): Promise<BrokerConsumer> {
  const { topology, log } = options;
  const connection = await connect(options.url);
  let stopping = false;
  const closed = new Promise<Error | undefined>((resolve) => {
    connection.on('error', (error: Error) => log.warn({ err: error }, 'broker connection failed'));
    connection.on('close', (error?: Error) =>
      resolve(stopping ? undefined : (error ?? new Error('connection closed'))),
    );
  });
  let channel: Channel;
  try {
    channel = await connection.createChannel();
    channel.on('error', (error: Error) => log.warn({ err: error }, 'broker channel failed'));
    // A queue declared before with other arguments is refused here (PRECONDITION_FAILED).
    await declareTopology(channel, topology);
    await channel.prefetch(options.prefetch);
  } catch (error) {
    stopping = true;
    await connection.close().catch(() => undefined);
    throw error;
  }
  // A channel the broker closed (an ack it refused, say) delivers nothing more: end the connection
  // too, so the process connects again instead of idling.
  channel.on('close', () => {
    if (!stopping) void connection.close().catch(() => undefined);
  });

  const counts: DeliveryCounts = {
    applied: 0,
    duplicates: 0,
    redelivered: 0,
    deadLettered: 0,
    signatureRefused: 0,
    requeued: 0,
  };
  const inFlight = new Set<Promise<void>>();
  let failuresInARow = 0;

  async function handle(message: ConsumeMessage): Promise<void> {
    const fields = {
      messageId: message.properties.messageId as unknown,
      redelivered: message.fields.redelivered,
      deliveryTag: message.fields.deliveryTag,
    };
    if (message.fields.redelivered) counts.redelivered += 1;
    const headers = (message.properties.headers ?? {}) as Record<string, unknown>;
    const check = options.verify(message.content, (name) => {
      const value = headers[name];
      return typeof value === 'string' ? value : undefined;
    });
    if (!check.ok) {
      // Dead-lettered before the body is read: a message anyone could have published never claims
      // its key, and the real event that follows is applied. Not requeued: it fails the same way.
      settle(() => channel.nack(message, false, false), fields);
      counts.deadLettered += 1;
      counts.signatureRefused += 1;
      log.warn({ ...fields, reason: check.reason }, 'message signature refused, dead-lettered');
      return;
    }
    const parsed = readMessage(message);
    if (!parsed.ok) {
      // Dead-lettered, never requeued: the same bytes would be refused on every delivery.
      settle(() => channel.nack(message, false, false), fields);
      counts.deadLettered += 1;
      log.warn({ ...fields, problem: parsed.problem }, 'message refused, dead-lettered');
      return;
    }
    const { event } = parsed;
    const about = { ...fields, idempotencyKey: event.idempotencyKey, eventId: event.eventId };
    try {
      const outcome = await options.apply(event);
      failuresInARow = 0;
      // The ack follows the commit: lost before it reaches the broker, the message comes again
      // and the ledger answers `duplicate`.
      settle(() => channel.ack(message), about);
      if (outcome === 'applied') counts.applied += 1;
      else counts.duplicates += 1;
      log.info(
        { ...about, outcome, redeliveries: counts.redelivered },
        outcome === 'applied' ? 'event applied' : 'duplicate event ignored',
      );
    } catch (error) {
      const { errorClass } = classifyError(error);
      if (REFUSED_DATA.has(errorClass)) {
        settle(() => channel.nack(message, false, false), about);
        counts.deadLettered += 1;
        log.warn({ ...about, err: error, errorClass }, 'event refused by the database, dead-lettered');
        return;
      }
      failuresInARow += 1;
      const pauseMs = jitteredBackoffMs(failuresInARow, REQUEUE_BACKOFF);
      log.warn({ ...about, err: error, errorClass, pauseMs }, 'event not applied, requeued after a pause');
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      settle(() => channel.nack(message, false, true), about);
      counts.requeued += 1;
    }
  }

  /** An ack or nack on a channel that closed meanwhile: the broker delivers the message again. */
  function settle(action: () => void, fields: Record<string, unknown>): void {
    try {
      action();
    } catch (error) {
      log.warn({ ...fields, err: error }, 'channel closed before the message was settled; it will come again');
    }
  }

  const { consumerTag } = await channel.consume(
    topology.queue,
    (message) => {
      if (!message) {
        // The broker cancelled the consumer (its queue was deleted). amqplib leaves the channel
        // open, so nothing else would end the connection: close it, and the process connects
        // again and declares the queue again.
        log.warn({ queue: topology.queue }, 'the broker cancelled the consumer; connecting again');
        if (!stopping) void connection.close().catch(() => undefined);
        return;
      }
      const handling = handle(message).finally(() => inFlight.delete(handling));
      inFlight.add(handling);
    },
    { noAck: false },
  );

  async function stop(): Promise<void> {
    stopping = true;
    await channel.cancel(consumerTag).catch(() => undefined);
    await Promise.allSettled([...inFlight]);
    await connection.close().catch(() => undefined);
  }

  return { counts, closed, stop };
}

// What the broker answers for what no retry mends: credentials or permissions it refuses (403), a
// queue declared before with other arguments (406), a virtual host it does not have (530).
const UNRECOVERABLE_REPLY_CODES = new Map([
  [403, 'ACCESS_REFUSED'],
  [406, 'PRECONDITION_FAILED'],
  [530, 'NOT_ALLOWED'],
]);

/**
 * Why a failure to start consuming will fail the same way on every attempt, or `undefined` for
 * one worth trying again (a broker down or restarting, a connection cut).
 */
export function unrecoverableBrokerFailure(error: unknown): string | undefined {
  // amqplib's codec and argument checks: the same arguments are refused again.
  if (error instanceof TypeError) return `amqplib refused an argument: ${error.message}`;
  if (!(error instanceof Error)) return undefined;
  const { code } = error as { code?: unknown };
  // A channel or connection the broker closed carries its reply code; a refused handshake says it.
  const replyCode =
    typeof code === 'number' ? code : Number(/^Handshake terminated by server: (\d{3}) /.exec(error.message)?.[1]);
  const name = UNRECOVERABLE_REPLY_CODES.get(replyCode);
  if (name) return `the broker answered ${replyCode} ${name}: ${error.message}`;
  // A virtual host the broker will not open is refused with a close in place of the open-ok.
  if (error.message.startsWith('Expected ConnectionOpenOk; got <ConnectionClose')) {
    return `the broker refused to open the virtual host: ${error.message}`;
  }
  return undefined;
}

/** Declares what the consumer reads from; the same declarations again change nothing. */
export async function declareTopology(channel: Channel, topology: BrokerTopology): Promise<void> {
  await channel.assertExchange(topology.exchange, 'topic', { durable: true });
  await channel.assertExchange(topology.deadLetterExchange, 'direct', { durable: true });
  await channel.assertQueue(topology.deadLetterQueue, { durable: true });
  await channel.bindQueue(topology.deadLetterQueue, topology.deadLetterExchange, topology.queue);
  await channel.assertQueue(topology.queue, {
    durable: true,
    arguments: {
      'x-dead-letter-exchange': topology.deadLetterExchange,
      'x-dead-letter-routing-key': topology.queue,
    },
  });
  await channel.bindQueue(topology.queue, topology.exchange, ORDER_CREATED_ROUTING_KEY);
}

/** The message as the contract describes it (docs/downstream.md), or why it is not one. */
export function readMessage(message: Pick<ConsumeMessage, 'content' | 'properties'>): EventParse {
  const { type, messageId, headers } = message.properties as {
    type?: unknown;
    messageId?: unknown;
    headers?: Record<string, unknown>;
  };
  if (type !== ORDER_CREATED) return { ok: false, problem: `type is ${String(type)}, expected ${ORDER_CREATED}` };
  if (typeof messageId !== 'string' || messageId === '') return { ok: false, problem: 'no messageId' };
  if (headers?.['webhook-id'] !== messageId) return { ok: false, problem: 'webhook-id differs from the messageId' };
  const key = headers?.['idempotency-key'];
  if (typeof key !== 'string' || key === '') return { ok: false, problem: 'no idempotency-key header' };
  let body: unknown;
  try {
    body = JSON.parse(message.content.toString('utf8'));
  } catch {
    return { ok: false, problem: 'body is not JSON' };
  }
  const parsed = parseOrderCreatedEvent(body);
  if (!parsed.ok) return parsed;
  if (parsed.event.idempotencyKey !== key) return { ok: false, problem: 'idempotency-key differs from the body' };
  if (parsed.event.eventId !== messageId) return { ok: false, problem: 'messageId differs from the eventId' };
  return parsed;
}
