// One list of statuses for the HTTP API, the workflow query, the OrderStatus search attribute and
// the database, and the one table of how a key's status may change (docs/architecture.md,
// decision 16). Imported by workflow code: no Node built-ins.

export const ORDER_STATUSES = [
  'RECEIVED', // accepted, not yet committed (retries included)
  'SUBMITTED', // the order row committed
  'DELIVERED', // downstream acknowledged
  'DELIVERY_FAILED', // downstream refused or attempts exhausted, awaiting an operator
  'COMPENSATING', // the write failed for good; reconciled, awaiting an operator's decision
  'COMPENSATED', // an operator abandoned it
  'FAILED', // the decision window ran out or compensation itself failed
] as const;

export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const COMPENSATION_DECISIONS = ['resubmit', 'abandon'] as const;
export type CompensationDecision = (typeof COMPENSATION_DECISIONS)[number];

/** The status a key's record is created with, when the edge claims the key. */
export const INITIAL_STATUS: OrderStatus = 'RECEIVED';

/** What a caller may state about the key when it asks for a change; a row may need it. */
export interface TransitionFacts {
  /** The key's order is written (compensation found it landed). */
  orderLanded?: boolean;
}

export interface StatusTransition {
  from: OrderStatus;
  to: OrderStatus;
  /** What happened, in one line: the event that moves a key from `from` to `to`. */
  reason: string;
  /** The change is allowed only when the caller states this fact. */
  onlyIf?: keyof TransitionFacts;
}

/**
 * Every status change the service makes, and nothing else. A change not listed here is refused by
 * the one writer (services/db/order-status-writer.ts). A same-status row is a refresh: the same
 * status recorded again with new details (attempts, the last error), because a step ran again.
 */
export const STATUS_TRANSITIONS: readonly StatusTransition[] = [
  { from: 'RECEIVED', to: 'SUBMITTED', reason: 'the order row committed' },
  { from: 'RECEIVED', to: 'COMPENSATING', reason: 'the write failed for good and reconciliation found no order' },
  { from: 'RECEIVED', to: 'FAILED', reason: 'compensation itself failed before it recorded anything' },

  { from: 'SUBMITTED', to: 'SUBMITTED', reason: 'a retried write or a reconciliation found the order already written' },
  { from: 'SUBMITTED', to: 'DELIVERED', reason: 'the downstream acknowledged the order event' },
  { from: 'SUBMITTED', to: 'DELIVERY_FAILED', reason: 'the downstream refused the event or its attempts ran out' },
  // Only as the landed case says it: a compensation that failed after its resubmitted run wrote
  // the order must leave that run's SUBMITTED alone.
  {
    from: 'SUBMITTED',
    to: 'FAILED',
    reason: 'the order landed but its follow-up runs kept failing',
    onlyIf: 'orderLanded',
  },

  {
    from: 'DELIVERY_FAILED',
    to: 'DELIVERED',
    reason: 'a redelivery was acknowledged, or an operator marked it handled',
  },
  { from: 'DELIVERY_FAILED', to: 'DELIVERY_FAILED', reason: 'a redelivery failed again, with a new last error' },

  {
    from: 'COMPENSATING',
    to: 'SUBMITTED',
    reason: 'reconciliation run again found the order, or a resubmitted run wrote it first',
  },
  { from: 'COMPENSATING', to: 'COMPENSATING', reason: 'reconciliation ran again for the failure, recording it again' },
  { from: 'COMPENSATING', to: 'COMPENSATED', reason: 'an operator abandoned the order' },
  { from: 'COMPENSATING', to: 'RECEIVED', reason: 'an operator resubmitted: a new run writes with the same key' },
  { from: 'COMPENSATING', to: 'FAILED', reason: 'the decision window ran out, or compensation itself failed' },

  { from: 'FAILED', to: 'SUBMITTED', reason: 'compensation run again found the order, or a resubmitted run wrote it' },
  { from: 'FAILED', to: 'COMPENSATING', reason: 'compensation run again found no order and waits for a decision' },
  { from: 'FAILED', to: 'RECEIVED', reason: 'a resubmit finished after compensation had been marked failed' },
];

/** True when the table lists the change from `from` to `to`, given the facts the caller states. */
export function canTransition(from: OrderStatus, to: OrderStatus, facts: TransitionFacts = {}): boolean {
  return STATUS_TRANSITIONS.some(
    (transition) =>
      transition.from === from &&
      transition.to === to &&
      (transition.onlyIf === undefined || facts[transition.onlyIf] === true),
  );
}

/** The statuses a key may be in for a change to `to` to apply, in the order of ORDER_STATUSES. */
export function allowedPredecessors(to: OrderStatus, facts: TransitionFacts = {}): OrderStatus[] {
  return ORDER_STATUSES.filter((from) => canTransition(from, to, facts));
}
