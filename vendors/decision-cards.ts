// What a vendor's chat does with decision cards: posts one under the vendor's own idempotency key,
// and redraws it once its key no longer waits. What a card says is the same whichever chat shows it
// (domain/decision-cards.ts); how it is drawn is the vendor's. A vendor that can post cards gives a
// `DecisionCardSender` (vendors/oa-vendor.ts).

export type { CardDecision, CardOutcome, DecisionCard } from '../domain/decision-cards.js';
import type { CardOutcome, DecisionCard } from '../domain/decision-cards.js';

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

/** What a vendor's chat does with decision cards. */
export interface DecisionCardSender {
  /**
   * Posts `card` to the vendor's configured chat, under `sendKey`: the vendor's own idempotency key
   * (the same key posts no second card for as long as the vendor remembers it).
   */
  send(card: DecisionCard, sendKey: string): Promise<PostedCard>;
  /** Redraws a posted card as decided: its buttons gone, the outcome shown. */
  refresh(posted: PostedCard, card: DecisionCard, outcome: CardOutcome): Promise<CardRefresh>;
}
