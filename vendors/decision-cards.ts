// A decision card as every vendor's chat shows it: what a key that waits for a person is, why it
// waits, and one button per decision that moves it on; then, once decided, who decided what and
// when. A vendor that can post cards gives a `DecisionCardSender` (vendors/oa-vendor.ts); what a
// card says is the same whichever chat shows it, how it is drawn is the vendor's.

/** One button of a card: the decision it takes, as the operator surfaces name it. */
export interface CardDecision {
  /** `resubmit`, `abandon`, `redeliver`, `mark-handled`, `recompensate`, `clear-conflict`, `acknowledge`. */
  decision: string;
  /** What the button says. */
  label: string;
  /** Asked before the decision is sent, when the decision cannot be undone; none: sent at once. */
  confirm?: string | undefined;
}

/** What a card shows about one waiting key, in one waiting episode. */
export interface DecisionCard {
  idempotencyKey: string;
  /** Which time the key waits (a key can wait again after a decision): one card per episode. */
  episode: string;
  /** The state it waits in: `COMPENSATING`, `DELIVERY_FAILED`, `FAILED`, `RECEIVED`, `KEY_SOURCE_CONFLICT`, `REVOKED_AFTER_ORDER`. */
  waitingIn: string;
  customerId: string;
  /** `<amount> <currency>`, as the order states it. */
  amount: string;
  /** The classified cause: its public code and sentence, never the raw error. */
  cause: { code: string; sentence: string };
  /** Since when it waits (ISO 8601). */
  waitingSince: string;
  /** Its workflow in the Temporal UI, when the UI's address is configured. */
  workflowUrl?: string | undefined;
  decisions: CardDecision[];
}

/** How a decided card reads: who took which decision, and when (ISO 8601). */
export interface CardOutcome {
  decision: string;
  decidedBy: string;
  decidedAt: string;
}

/** A card as the vendor's chat holds it: the message to refresh later. */
export interface PostedCard {
  messageId: string;
}

/** What a vendor's chat does with decision cards. */
export interface DecisionCardSender {
  /**
   * Posts `card` to the vendor's configured chat, under `sendKey`: the vendor's own idempotency key
   * (the same key posts no second card for as long as the vendor remembers it).
   */
  send(card: DecisionCard, sendKey: string): Promise<PostedCard>;
  /** Redraws a posted card as decided: its buttons gone, the outcome shown. */
  refresh(posted: PostedCard, card: DecisionCard, outcome: CardOutcome): Promise<void>;
}
