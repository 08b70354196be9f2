// The delivery's settings: the HTTP target order events are posted to, the secret they are signed
// with (the broker's messages are signed with it too), and one attempt's timeout.
import type { z } from 'zod';
import { httpUrlSetting, milliseconds, signingSecretSetting } from '../services/config/setting-types.js';

export const deliverySettings = {
  DOWNSTREAM_URL: httpUrlSetting.optional(),
  DOWNSTREAM_SECRET: signingSecretSetting.optional(),
  DOWNSTREAM_TIMEOUT_MS: milliseconds(3_000),
  DOWNSTREAM_SECRET_PREVIOUS: signingSecretSetting.optional(),
};
type DeliveryEnv = z.output<z.ZodObject<typeof deliverySettings>>;

export interface DownstreamConfig {
  url: string;
  secret: string;
  /** During a rotation: events are signed with this one too, so receivers still holding it verify. */
  previousSecret?: string | undefined;
  /** Per-attempt HTTP timeout: below the activity's start-to-close. */
  timeoutMs: number;
}

/** Events are signed: an HTTP target needs the secret. */
export function downstreamProblems(env: DeliveryEnv): string[] {
  return env.DOWNSTREAM_URL && !env.DOWNSTREAM_SECRET
    ? ['DOWNSTREAM_SECRET: required when DOWNSTREAM_URL is set (events are signed)']
    : [];
}

/** Undefined: no HTTP target (no DOWNSTREAM_URL, or no DOWNSTREAM_SECRET to sign with). */
export function downstreamFrom(env: DeliveryEnv): DownstreamConfig | undefined {
  return env.DOWNSTREAM_URL && env.DOWNSTREAM_SECRET
    ? {
        url: env.DOWNSTREAM_URL,
        secret: env.DOWNSTREAM_SECRET,
        previousSecret: env.DOWNSTREAM_SECRET_PREVIOUS,
        timeoutMs: env.DOWNSTREAM_TIMEOUT_MS,
      }
    : undefined;
}
