// Publishes order events to the broker (AMQP_URL) on one connection and one confirm channel per
// process, opened at the first publish and opened again after it closed (docs/architecture.md,
// decision 23). A publish counts only once the broker confirmed it; a message the broker returns
// (published `mandatory`, no queue bound) is a failure even though the broker then confirms it.
// Every message is signed as the HTTP event is (Standard Webhooks headers, DOWNSTREAM_SECRET), so
// a consumer tells it from one published by anyone else allowed on the exchange.
// Errors leave here typed (domain/errors.ts) so that the one classification table decides retries.
// With tracing on, each publish is a producer span (`send <exchange>`) of the approval's trace,
// and the message carries it in its headers (`traceparent`); the span names the broker by its host
// and port only, never by AMQP_URL, whose userinfo is a password.
import { type ChannelModel, type ConfirmChannel, connect, type Message } from 'amqplib';
import {
  BrokerConfirmTimeoutError,
  BrokerNackedError,
  BrokerUnavailableError,
  BrokerUnroutableError,
} from '../../domain/errors.js';
import { ORDER_CREATED, ORDER_CREATED_ROUTING_KEY } from '../../domain-node/order-event.js';
import { standardSignatureHeaders } from '../../domain-node/signature.js';
import { brokerAddress, type BrokerConfig } from './settings.js';
import { messagingSendAttributes, messagingSendSpanName } from '../telemetry/span-conventions.js';
import { inSpan, KEY_ATTRIBUTE, traceHeaders } from '../telemetry/tracing.js';

/** One `order.created` event as the broker carries it: the HTTP event's body bytes, its id and key. */
export interface OrderEventMessage {
  eventId: string;
  idempotencyKey: string;
  body: string;
}

export interface OrderEventPublisher {
  /** The exchange every message goes to (ORDER_EVENTS_EXCHANGE). */
  exchange: string;
  /** Resolves once the broker confirmed the message; rejects with a typed broker error. */
  publish(message: OrderEventMessage): Promise<void>;
  /** Closes the connection; a later publish opens a new one. */
  close(): Promise<void>;
}

interface Link {
  model: ChannelModel;
  channel: ConfirmChannel;
  /** Publishes awaiting their confirm, by message id, oldest first: a return marks the oldest. */
  awaiting: Map<string, { returned?: Message }[]>;
}

const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

export function createOrderEventPublisher(
  config: BrokerConfig,
  /** The clock the signature's timestamp is read from, in milliseconds. */
  clock: { now: () => number } = Date,
): OrderEventPublisher {
  const address = brokerAddress(config);
  const send = { exchange: config.exchange, routingKey: ORDER_CREATED_ROUTING_KEY, brokerUrl: config.url };
  const spanName = messagingSendSpanName(send);
  const spanAttributes = messagingSendAttributes(send);
  let current: Promise<Link> | undefined;

  const unavailable = (error: unknown) =>
    new BrokerUnavailableError(address, error instanceof Error ? error.message : String(error));

  async function openLink(forget: () => void): Promise<Link> {
    const model = await connect(config.url, {
      timeout: config.confirmTimeoutMs,
      clientProperties: { connection_name: 'exactly-once-orders publisher' },
    });
    // A closed connection is forgotten, so the next publish opens a new one; an 'error' event is
    // always followed by 'close' and must be listened to, or it would crash the worker.
    model.on('error', () => undefined);
    model.on('close', forget);
    try {
      const channel = await model.createConfirmChannel();
      channel.on('error', () => undefined);
      // A channel the broker closed (a precondition failed, an access refused) takes the link down.
      channel.on('close', () => {
        forget();
        model.close().catch(() => undefined);
      });
      const awaiting: Link['awaiting'] = new Map();
      // The broker sends basic.return before the confirm of the same message on the same channel.
      channel.on('return', (returned: Message) => {
        const id = String(returned.properties.messageId);
        const publish = awaiting.get(id)?.find((entry) => !entry.returned);
        if (publish) publish.returned = returned;
      });
      // The exchange is ours to declare; queues and bindings are the consumers' business.
      await channel.assertExchange(config.exchange, 'topic', { durable: true });
      return { model, channel, awaiting };
    } catch (error) {
      forget();
      await model.close().catch(() => undefined);
      throw error;
    }
  }

  function link(): Promise<Link> {
    if (!current) {
      const opening: Promise<Link> = openLink(() => {
        if (current === opening) current = undefined;
      });
      current = opening;
      opening.catch(() => {
        if (current === opening) current = undefined;
      });
    }
    return current;
  }

  async function publishOnce(
    message: OrderEventMessage,
    /** W3C trace headers (`traceparent`, `tracestate`) for the message; empty when not tracing. */
    trace: Record<string, string>,
    used: { link?: Promise<Link> },
  ): Promise<void> {
    let open: Link;
    try {
      used.link = link();
      open = await used.link;
    } catch (error) {
      throw unavailable(error);
    }
    const { channel, awaiting } = open;
    // Signed at each publish, as each HTTP attempt is: the timestamp says when this copy was sent.
    const timestamp = String(Math.floor(clock.now() / 1000));
    const entry: { returned?: Message } = {};
    const queue = awaiting.get(message.eventId) ?? [];
    queue.push(entry);
    awaiting.set(message.eventId, queue);
    try {
      await new Promise<void>((resolve, reject) => {
        try {
          channel.publish(
            config.exchange,
            ORDER_CREATED_ROUTING_KEY,
            Buffer.from(message.body),
            {
              // Returned when no queue is bound, instead of dropped in silence.
              mandatory: true,
              persistent: true,
              messageId: message.eventId,
              type: ORDER_CREATED,
              contentType: 'application/json',
              headers: {
                ...trace,
                'idempotency-key': message.idempotencyKey,
                ...standardSignatureHeaders(config, message.eventId, timestamp, message.body),
              },
            },
            (error: unknown) => (error ? reject(asError(error)) : resolve()),
          );
        } catch (error) {
          reject(asError(error));
        }
      });
    } catch (error) {
      throw error instanceof Error && error.message === 'message nacked'
        ? new BrokerNackedError(config.exchange)
        : unavailable(error);
    } finally {
      queue.splice(queue.indexOf(entry), 1);
      if (queue.length === 0) awaiting.delete(message.eventId);
    }
    if (entry.returned) {
      const { replyCode, replyText } = entry.returned.fields as unknown as { replyCode: number; replyText: string };
      throw new BrokerUnroutableError(config.exchange, ORDER_CREATED_ROUTING_KEY, replyCode, replyText);
    }
  }

  /** One publish until the broker's confirm, within the confirm timeout, connecting included. */
  async function publishConfirmed(message: OrderEventMessage): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BrokerConfirmTimeoutError(config.confirmTimeoutMs)), config.confirmTimeoutMs);
    });
    const used: { link?: Promise<Link> } = {};
    try {
      await Promise.race([publishOnce(message, traceHeaders(), used), timedOut]);
    } catch (error) {
      if (error instanceof BrokerConfirmTimeoutError && used.link) {
        // The connection that did not confirm in time is not trusted with the next publish — that
        // one, not a newer one another publish may have opened meanwhile.
        const stale = used.link;
        if (current === stale) current = undefined;
        void stale.then((open) => open.model.close()).catch(() => undefined);
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    exchange: config.exchange,
    publish: (message) =>
      inSpan(
        spanName,
        'producer',
        { ...spanAttributes, [KEY_ATTRIBUTE]: message.idempotencyKey, 'messaging.message.id': message.eventId },
        () => publishConfirmed(message),
      ),
    async close() {
      const open = current;
      current = undefined;
      if (!open) return;
      try {
        await (await open).model.close();
      } catch {
        // Already closed, or never opened: nothing to release.
      }
    },
  };
}
