// One plain sentence per status, for a model reading a tool's answer: where the order stands and
// what, if anything, to do next. The statuses are the one list of domain/order-status.ts; a last
// error is named by its public code, never in its own words.
import type { PublicError } from '../../domain/error-classification.js';
import type { OrderStatus } from '../../domain/order-status.js';

export interface StatusFacts {
  idempotencyKey: string;
  status: OrderStatus;
  orderNo?: string | undefined;
  attempts: number;
  lastError?: PublicError | undefined;
}

export function statusSentence(facts: StatusFacts): string {
  const order = facts.orderNo ? `Order ${facts.orderNo}` : 'The order';
  const because = facts.lastError ? ` (${facts.lastError.code})` : '';
  switch (facts.status) {
    case 'RECEIVED': {
      const attempt = facts.attempts > 1 ? ` (attempt ${facts.attempts}${because})` : '';
      return (
        `The order is accepted and still being written${attempt}. Call get_order_status with idempotencyKey ` +
        `"${facts.idempotencyKey}" in a few seconds to see the outcome; there is no need to submit it again.`
      );
    }
    case 'SUBMITTED':
      return `${order} is written.`;
    case 'DELIVERED':
      return `${order} is written and the downstream system has received it.`;
    case 'DELIVERY_FAILED':
      return `${order} is written, but telling the downstream system failed${because}; an operator decides what happens next.`;
    case 'COMPENSATING':
      return (
        `The order could not be written${because}. Nothing of it was kept, and it waits for an operator to ` +
        'resubmit or abandon it; submitting it again will not change that.'
      );
    case 'COMPENSATED':
      return 'An operator abandoned this order: it was not written, and submitting it again will not write it.';
    case 'FAILED':
      return (
        `${facts.orderNo ? `${order} was written, but what follows it failed` : 'The order was not written'}${because}. ` +
        'It needs an operator; submitting it again will not change that.'
      );
  }
}
