// The activities' settings: the delivery's — the HTTP target order events are posted to, the secret
// they are signed with (the broker's messages are signed with it too), and one attempt's timeout —
// and how often a decision card looks whether its key still waits, and the Temporal UI it links to.
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

export const decisionCardSettings = {
  DECISION_CARD_LOOK_EVERY_MS: milliseconds(60_000),
  TEMPORAL_UI_URL: httpUrlSetting.optional(),
};

/** How the decision cards run, whichever vendors' chats take them. */
export interface DecisionCardsConfig {
  /** How often a card's workflow looks whether its key still waits, to redraw it once it does not. */
  lookEveryMs: number;
  /** TEMPORAL_UI_URL: the Temporal UI a card links its key's workflow in; undefined: no link. */
  temporalUiUrl?: string | undefined;
}

export function decisionCardsFrom(env: z.output<z.ZodObject<typeof decisionCardSettings>>): DecisionCardsConfig {
  return { lookEveryMs: env.DECISION_CARD_LOOK_EVERY_MS, temporalUiUrl: env.TEMPORAL_UI_URL };
}
