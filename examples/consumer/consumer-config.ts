// The reference consumers' settings. Both keep their tables in CONSUMER_SCHEMA (`consumer`) of
// CONSUMER_DATABASE_URL (or DATABASE_URL), and both verify every event with DOWNSTREAM_SECRET (and
// DOWNSTREAM_SECRET_PREVIOUS during a rotation), held to the same rule as the service's own. The
// HTTP one (`npm run consumer`) listens on CONSUMER_PORT (4000); the RabbitMQ one
// (`npm run consumer:broker`) reads AMQP_URL, ORDER_EVENTS_EXCHANGE (`orders`), CONSUMER_NAME and
// CONSUMER_PREFETCH, and names its queues from the last two (`brokerTopology`).
import { z } from 'zod';
import type { SigningSecrets } from '../../domain-node/signature.js';
import { amqpUrlSetting, exchangeNameSetting } from '../../services/broker/settings.js';
import { storeOfUrl } from '../../services/db/stores/store-of-url.js';
import { ConfigError, type EnvSource, presentSettings } from '../../services/config/environment.js';
import { signingSecretSetting } from '../../services/config/setting-types.js';

const databaseSettings = {
  CONSUMER_DATABASE_URL: z
    .string()
    .refine(
      (url) => storeOfUrl(url) !== undefined && url.length > url.indexOf('://') + 3,
      'must be a postgresql:// or mysql:// (mariadb://) connection URL',
    )
    .optional(),
  DATABASE_URL: z.string().optional(),
  CONSUMER_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case identifier (a schema; a database on MySQL)')
    .default('consumer'),
};

const secretSettings = {
  DOWNSTREAM_SECRET: signingSecretSetting.optional(),
  DOWNSTREAM_SECRET_PREVIOUS: signingSecretSetting.optional(),
};

const consumerSchema = z.object({
  CONSUMER_PORT: z.coerce.number().int().min(1).max(65535).default(4000),
  ...secretSettings,
  ...databaseSettings,
});

export interface BrokerTopology {
  exchange: string;
  queue: string;
  deadLetterExchange: string;
  deadLetterQueue: string;
}

/** One durable queue per consuming system, and beside it the queue its refused messages end in. */
export function brokerTopology(exchange: string, consumerName: string): BrokerTopology {
  const queue = `${exchange}.order-created.${consumerName}`;
  return { exchange, queue, deadLetterExchange: `${exchange}.dead-letter`, deadLetterQueue: `${queue}.dead-letter` };
}

/** RabbitMQ refuses a queue or exchange name longer than this many bytes. */
const AMQP_NAME_MAX_BYTES = 255;

const brokerConsumerSchema = z
  .object({
    AMQP_URL: amqpUrlSetting,
    ORDER_EVENTS_EXCHANGE: exchangeNameSetting.default('orders'),
    CONSUMER_NAME: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,48}$/, 'must be 1-48 of A-Z a-z 0-9 _ -')
      .default('reference'),
    CONSUMER_PREFETCH: z.coerce.number().int().min(1).max(1000).default(10),
    ...secretSettings,
    ...databaseSettings,
  })
  .superRefine((settings, context) => {
    // The names the consumer derives from the exchange are refused by the broker when too long,
    // on every attempt: say so at start instead.
    const topology = brokerTopology(settings.ORDER_EVENTS_EXCHANGE, settings.CONSUMER_NAME);
    for (const name of [topology.queue, topology.deadLetterQueue, topology.deadLetterExchange]) {
      const bytes = Buffer.byteLength(name, 'utf8');
      if (bytes > AMQP_NAME_MAX_BYTES) {
        context.addIssue({
          code: 'custom',
          path: ['ORDER_EVENTS_EXCHANGE'],
          message: `too long with CONSUMER_NAME "${settings.CONSUMER_NAME}": the derived name "${name}" has ${bytes} bytes, RabbitMQ allows ${AMQP_NAME_MAX_BYTES}`,
        });
        return;
      }
    }
  });

interface DatabaseConfig {
  databaseUrl: string;
  schema: string;
}

interface SecretsConfig {
  /** What every event must be signed with: DOWNSTREAM_SECRET, and DOWNSTREAM_SECRET_PREVIOUS while set. */
  secrets: SigningSecrets;
}

export interface ConsumerConfig extends DatabaseConfig, SecretsConfig {
  port: number;
}

export interface BrokerConsumerConfig extends DatabaseConfig, SecretsConfig {
  amqpUrl: string;
  exchange: string;
  /** Names the consumer's queue, `<exchange>.order-created.<name>`: one queue per consuming system. */
  name: string;
  prefetch: number;
}

function parse<T>(schema: z.ZodType<T>, source: EnvSource): T {
  const parsed = schema.safeParse(presentSettings(source));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  return parsed.data;
}

function databaseConfig(settings: z.output<z.ZodObject<typeof databaseSettings>>): DatabaseConfig {
  const databaseUrl = settings.CONSUMER_DATABASE_URL ?? settings.DATABASE_URL;
  if (!databaseUrl) throw new ConfigError(['CONSUMER_DATABASE_URL: required (or DATABASE_URL)']);
  return { databaseUrl, schema: settings.CONSUMER_SCHEMA };
}

function secretsConfig(settings: z.output<z.ZodObject<typeof secretSettings>>): SecretsConfig {
  const { DOWNSTREAM_SECRET: secret, DOWNSTREAM_SECRET_PREVIOUS: previousSecret } = settings;
  if (!secret) throw new ConfigError(['DOWNSTREAM_SECRET: required (the secret order.created events are signed with)']);
  if (previousSecret === secret) {
    throw new ConfigError([
      'DOWNSTREAM_SECRET_PREVIOUS: equals DOWNSTREAM_SECRET; it must hold the secret being replaced',
    ]);
  }
  return { secrets: previousSecret === undefined ? { secret } : { secret, previousSecret } };
}

export function loadConsumerConfig(source: EnvSource = process.env): ConsumerConfig {
  const settings = parse(consumerSchema, source);
  return { ...databaseConfig(settings), ...secretsConfig(settings), port: settings.CONSUMER_PORT };
}

export function loadBrokerConsumerConfig(source: EnvSource = process.env): BrokerConsumerConfig {
  const settings = parse(brokerConsumerSchema, source);
  return {
    ...databaseConfig(settings),
    ...secretsConfig(settings),
    amqpUrl: settings.AMQP_URL,
    exchange: settings.ORDER_EVENTS_EXCHANGE,
    name: settings.CONSUMER_NAME,
    prefetch: settings.CONSUMER_PREFETCH,
  };
}
