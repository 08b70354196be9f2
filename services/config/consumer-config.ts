// The reference consumer's settings (`npm run consumer`): CONSUMER_PORT (4000),
// CONSUMER_DATABASE_URL (or DATABASE_URL) and DOWNSTREAM_SECRET, the secret events are signed
// with — held to the same rule as the service's own DOWNSTREAM_SECRET.
import { z } from 'zod';
import { ConfigError, type EnvSource, presentSettings, signingSecretSetting } from './env.js';

const consumerSchema = z.object({
  CONSUMER_PORT: z.coerce.number().int().min(1).max(65535).default(4000),
  CONSUMER_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/.+/, 'must be a postgresql:// connection URL')
    .optional(),
  DATABASE_URL: z.string().optional(),
  DOWNSTREAM_SECRET: signingSecretSetting,
});

export interface ConsumerConfig {
  port: number;
  databaseUrl: string;
  secret: string;
}

export function loadConsumerConfig(source: EnvSource = process.env): ConsumerConfig {
  const parsed = consumerSchema.safeParse(presentSettings(source));
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  const databaseUrl = parsed.data.CONSUMER_DATABASE_URL ?? parsed.data.DATABASE_URL;
  if (!databaseUrl) throw new ConfigError(['CONSUMER_DATABASE_URL: required (or DATABASE_URL)']);
  return { port: parsed.data.CONSUMER_PORT, databaseUrl, secret: parsed.data.DOWNSTREAM_SECRET };
}
