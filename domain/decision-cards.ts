// What a decision card says about a key that waits for a person, whichever chat shows it: the key,
// its order's customer and amount, the classified cause (a public code and sentence, never the
// recorded error), since when it waits, and one button per decision that moves it on — those the
// awaiting list offers for its state that a click can take. Then, once it no longer waits, what
// became of it. Pure: the worker's activities fill it in, each vendor draws it.

/** One button of a card: the decision it takes, as the operator surfaces name it. */
export interface CardDecision {
  /** `resubmit`, `abandon`, `redeliver`, `mark-handled`, `recompensate`, `clear-conflict`. */
  decision: string;
  /** What the button says. */
  label: string;
  /** Asked before the decision is sent, when it cannot be undone; none: sent at once. */
  confirm?: string | undefined;
}

/** A workflow's page in the Temporal UI at `uiUrl` (TEMPORAL_UI_URL). */
export function temporalUiWorkflowUrl(uiUrl: string, namespace: string, workflowId: string): string {
  const base = uiUrl.endsWith('/') ? uiUrl : `${uiUrl}/`;
  return new URL(`namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`, base).href;
}

/** What a card shows about one waiting key, in one waiting episode. */
export interface DecisionCard {
  idempotencyKey: string;
  /** Which time the key waits (a key can wait again after a decision): one card per episode. */
  episode: string;
  /** The state it waits in: `COMPENSATING`, `DELIVERY_FAILED`, `FAILED`, `RECEIVED`, `KEY_SOURCE_CONFLICT`. */
  waitingIn: string;
  customerId: string;
  /** `<amount> <currency>`, as the order states it; empty when the key names no order yet. */
  amount: string;
  /** The classified cause: its public code and sentence, never the raw error. */
  cause: { code: string; sentence: string };
  /** Since when it waits (ISO 8601). */
  waitingSince: string;
  /** Its workflow in the Temporal UI, when the UI's address is configured. */
  workflowUrl?: string | undefined;
  decisions: CardDecision[];
}

/**
 * How a card reads once its key no longer waits: the decision and who took it when the record
 * says (an operator's decision on a compensation, a cleared conflict), else what the key is now.
 */
export interface CardOutcome {
  /** The decision taken, or `now <status>` when the key moved on without a recorded decision. */
  decision: string;
  /** Who decided (`cli:alice`, `mcp-operator:bob`, `card:feishu:ou_…`), when recorded. */
  decidedBy?: string | undefined;
  /** When (ISO 8601). */
  decidedAt: string;
}

/** An outcome in one line: the decision, who took it when recorded, and when. */
export const outcomeLine = (outcome: CardOutcome): string =>
  `${outcome.decision}${outcome.decidedBy ? ` by ${outcome.decidedBy}` : ''} at ${outcome.decidedAt}`;

/** What a click on a card is answered with, for the vendor to draw: a toast, and the card locked with a line. */
export interface CardClickReply {
  tone: 'success' | 'info' | 'error';
  text: string;
  /** The card, its buttons gone, reads this line; undefined: the card stays as it is. */
  lockedAs?: string | undefined;
  /** What `lockedAs` says, for a chat that draws it shorter. */
  outcome?: CardOutcome | undefined;
}

/** The buttons of each decision a click may take, in the awaiting list's order. */
const BUTTONS: Record<string, Omit<CardDecision, 'decision'>> = {
  resubmit: { label: 'Resubmit', confirm: 'Write this order again under the same key?' },
  abandon: { label: 'Abandon', confirm: 'Abandon this order? Its stock is released and nothing is written.' },
  redeliver: { label: 'Redeliver' },
  'mark-handled': { label: 'Mark handled', confirm: 'Mark the delivery handled without telling the downstream again?' },
  recompensate: { label: 'Run compensation again' },
  'clear-conflict': {
    label: 'Clear the conflict',
    confirm: 'Checked the claim against the refused approval? Clearing removes the conflict from the list.',
  },
};

/**
 * The buttons for the decisions the awaiting list offers: each that a click can take, in order.
 * Advice no button takes (`sender-redelivery`: the sender should resend) is left out.
 */
export function cardDecisionsFor(nextActions: readonly string[]): CardDecision[] {
  return nextActions.flatMap((decision) => {
    const button = BUTTONS[decision];
    return button ? [{ decision, ...button }] : [];
  });
}

/** The waiting states a card is sent for. */
export const CARD_WAITING_STATES = [
  'COMPENSATING',
  'DELIVERY_FAILED',
  'FAILED',
  'RECEIVED',
  'KEY_SOURCE_CONFLICT',
] as const;

/** The workflow that holds one card of one vendor for one waiting episode of a key: one per episode. */
export function decisionCardWorkflowId(vendor: string, idempotencyKey: string, episode: string): string {
  return `decision-card-${vendor}-${idempotencyKey}-${episode}`;
}
