// What a vendor's chat does with decision cards: posts one under the vendor's own idempotency key,
// and redraws it once its key no longer waits. What a card says is the same whichever chat shows it
// (domain/decision-cards.ts); how it is drawn is the vendor's. A vendor that can post cards gives a
// `DecisionCardSender` (vendors/oa-vendor.ts).

export type { CardDecision, CardOutcome, DecisionCard } from '../domain/decision-cards.js';
import type { CardOutcome, DecisionCard } from '../domain/decision-cards.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../domain/idempotency-key.js';

/** A card as the vendor's chat holds it: the message to refresh later. */
export interface PostedCard {
  messageId: string;
  /** What the vendor takes to redraw it, when that is not the message itself (WeCom's response code). */
  updateToken?: string | undefined;
  /** Until when (ISO 8601) `updateToken` is taken. */
  updatableUntil?: string | undefined;
}

/** What became of a redraw: done, or not possible any more (the vendor no longer takes the card's update). */
export type CardRefresh = 'updated' | 'not updatable';

/**
 * Whether an earlier attempt of this send may have reached the vendor: only then is the vendor's
 * refusal of a send key it already took read as the card being there (the first attempt's).
 */
export interface SendAttempt {
  retried: boolean;
}

/** What a vendor's chat does with decision cards. */
export interface DecisionCardSender {
  /**
   * Posts `card` to the vendor's configured chat, under `sendKey`: the vendor's own idempotency key
   * (the same key posts no second card for as long as the vendor remembers it). `attempt` absent:
   * a first attempt.
   */
  send(card: DecisionCard, sendKey: string, attempt?: SendAttempt): Promise<PostedCard>;
  /** Redraws a posted card as decided: its buttons gone, the outcome shown. */
  refresh(posted: PostedCard, card: DecisionCard, outcome: CardOutcome): Promise<CardRefresh>;
}

/**
 * What a card's button sends back when clicked (WeCom's button key, DingTalk's action parameter): `<decision>:<episode>:<idempotency key>`. The decision and the
 * episode hold no colon (`[a-z-]`, `[a-z0-9-]`); the key, which does, is the rest.
 */
export function buttonKeyOf(card: Pick<DecisionCard, 'idempotencyKey' | 'episode'>, decision: string): string {
  return `${decision}:${card.episode}:${card.idempotencyKey}`;
}

/** What a button's key names, or undefined when it is no key of these cards (its key no idempotency key). */
export function buttonOfKey(key: string): { decision: string; episode: string; idempotencyKey: string } | undefined {
  const match = /^([a-z-]{1,32}):([a-z0-9-]{1,64}):(.{1,200})$/s.exec(key);
  if (!match || !IDEMPOTENCY_KEY_PATTERN.test(match[3] as string)) return undefined;
  return { decision: match[1] as string, episode: match[2] as string, idempotencyKey: match[3] as string };
}
