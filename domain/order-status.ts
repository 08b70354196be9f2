// One list of statuses for the HTTP API, the workflow query, the OrderStatus search attribute and
// the database. Imported by workflow code: no Node built-ins.

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
