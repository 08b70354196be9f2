// The broker's settings: the RabbitMQ URL order events are published to (docs/downstream.md#the-broker),
// off unless AMQP_URL is set, the exchange, and how long one publish waits for the broker's confirm.
// The reference consumer reads the URL and the exchange with the same parsers.
import { z } from 'zod';
import { redactUrl } from '../../domain-node/redact-url.js';
import { milliseconds } from '../config/setting-types.js';

// amqplib reads a URL without a host as localhost and one of another scheme as whatever it finds:
// a typo would connect somewhere else, or nowhere, without saying why.
/** A broker URL (the service's and the reference consumer's). */
export const amqpUrlSetting = z
  .string({ error: 'required: the RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672' })
  .superRefine((value, context) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      context.addIssue({ code: 'custom', message: 'is not a URL (e.g. amqp://guest:guest@127.0.0.1:5672)' });
      return;
    }
    if (url.protocol !== 'amqp:' && url.protocol !== 'amqps:') {
      context.addIssue({ code: 'custom', message: `must be an amqp:// or amqps:// URL, not ${url.protocol}//` });
    } else if (url.hostname === '') {
      context.addIssue({ code: 'custom', message: 'names no host (amqplib would connect to localhost)' });
    }
  });

/** An exchange name RabbitMQ lets a client declare (not one of its own, `amq.*`); the reference consumer holds its own to it too. */
export const exchangeNameSetting = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,255}$/, 'must be 1–255 letters, digits, "-", "_", "." or ":"')
  .refine((name) => !name.startsWith('amq.'), 'names starting with "amq." belong to the broker');

export const brokerSettings = {
  // The broker target of order.created (docs/downstream.md#the-broker): off unless AMQP_URL is set.
  AMQP_URL: amqpUrlSetting.optional(),
  ORDER_EVENTS_EXCHANGE: exchangeNameSetting.default('orders'),
  AMQP_CONFIRM_TIMEOUT_MS: milliseconds(3_000),
};
/** The broker's settings, and the delivery's secrets (activities/settings.ts) every message is signed with. */
type BrokerEnv = z.output<z.ZodObject<typeof brokerSettings>> & {
  DOWNSTREAM_SECRET?: string | undefined;
  DOWNSTREAM_SECRET_PREVIOUS?: string | undefined;
};

export interface BrokerConfig {
  /** `amqp://` or `amqps://`, credentials included: never logged (see `brokerAddress`). */
  url: string;
  /** DOWNSTREAM_SECRET: every message is signed with it, as the HTTP event is. */
  secret: string;
  /** During a rotation: messages are signed with this one too, so consumers still holding it verify. */
  previousSecret?: string | undefined;
  /** The topic exchange order events are published to; asserted durable by the publisher. */
  exchange: string;
  /** One publish, connecting included, until the broker's confirm: below the activity's start-to-close. */
  confirmTimeoutMs: number;
}

/** Where the broker is, for logs and messages: the URL without its credentials. */
export function brokerAddress(broker: BrokerConfig): string {
  return redactUrl(broker.url);
}

// Without a signature anyone allowed to publish on the exchange could publish an event for a key
// before the real one, and the consumer would apply it and take the real one for a duplicate.
export function brokerProblems(env: BrokerEnv): string[] {
  return env.AMQP_URL && !env.DOWNSTREAM_SECRET
    ? ['DOWNSTREAM_SECRET: required when AMQP_URL is set (broker messages are signed)']
    : [];
}

/** Undefined: no broker target (no AMQP_URL, or no DOWNSTREAM_SECRET to sign with). */
export function brokerFrom(env: BrokerEnv): BrokerConfig | undefined {
  return env.AMQP_URL && env.DOWNSTREAM_SECRET
    ? {
        url: env.AMQP_URL,
        secret: env.DOWNSTREAM_SECRET,
        previousSecret: env.DOWNSTREAM_SECRET_PREVIOUS,
        exchange: env.ORDER_EVENTS_EXCHANGE,
        confirmTimeoutMs: env.AMQP_CONFIRM_TIMEOUT_MS,
      }
    : undefined;
}
