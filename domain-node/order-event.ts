// The `order.created` event told to the downstream ERP after the order commits. It carries the
// order's own idempotency key — never a new one — so the consumer deduplicates by the same key the
// order table did (the seed's "the write was idempotent, the message after it was not" pitfall).
import { createHash } from 'node:crypto';
import type { CanonicalLine } from '../domain/canonical-order.js';
import type { Operation } from '../domain/idempotency-key.js';

export const ORDER_CREATED = 'order.created';
/** The routing key of every `order.created` message on the broker: its type. */
export const ORDER_CREATED_ROUTING_KEY = ORDER_CREATED;

export interface OrderCreatedEvent {
  type: typeof ORDER_CREATED;
  eventId: string;
  idempotencyKey: string;
  orderNo: string;
  approvalNo: string;
  operation: Operation;
  customerId: string;
  currency: string;
  lines: CanonicalLine[];
  totalAmount: string;
  occurredAt: string;
}

/** Stable for this event across every attempt, run and redelivery: derived, never random. */
export function eventIdFor(idempotencyKey: string, type: string = ORDER_CREATED): string {
  return 'evt_' + createHash('sha256').update(`${type}\n${idempotencyKey}`).digest('hex').slice(0, 32);
}
