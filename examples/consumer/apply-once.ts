// Applying an `order.created` event exactly once, whatever carried it: the HTTP consumer
// (consumer.ts) and the RabbitMQ consumer (broker-consumer.ts) both parse the event here and apply
// it here. The event's idempotency key goes into `processed_event` (unique) in the same transaction
// as the effect (a `shipment_request` row), on PostgreSQL or MySQL/MariaDB (ledger-stores.ts), so
// a delivery that finds the key applies nothing — including the one that comes again because the
// answer or the ack of the first was lost after the commit (docs/architecture.md, decisions 8 and 24).
import { z } from 'zod';
import { IDEMPOTENCY_KEY_PATTERN, OPERATIONS } from '../../domain/idempotency-key.js';
import { orderSchema, toFieldErrors } from '../../domain/order-input.js';
import { ORDER_CREATED } from '../../domain-node/order-event.js';
import { type LedgerPool, ledgerStatements } from './ledger-stores.js';

// Extra fields are let through: a producer may add some without breaking its consumers.
const orderCreatedEventSchema = z.object({
  type: z.literal(ORDER_CREATED),
  eventId: z.string().regex(/^evt_[A-Za-z0-9]{1,60}$/, 'must be evt_ followed by letters or digits'),
  idempotencyKey: z.string().regex(IDEMPOTENCY_KEY_PATTERN, 'must be APPROVAL:<approvalNo>:MAIN|SUPPLEMENT'),
  orderNo: z.string().min(1).max(40),
  approvalNo: z.string().min(1).max(64),
  operation: z.enum(OPERATIONS),
  ...orderSchema.shape,
  totalAmount: z.string().regex(/^\d{1,14}(\.\d{1,4})?$/, 'must be a decimal string that fits NUMERIC(18,4)'),
  occurredAt: z.string().min(1),
});

export type ReceivedEvent = z.infer<typeof orderCreatedEventSchema>;

export type EventParse = { ok: true; event: ReceivedEvent } | { ok: false; problem: string };

/** Parse, don't validate: after this the ledger trusts the event's fields. */
export function parseOrderCreatedEvent(body: unknown): EventParse {
  const result = orderCreatedEventSchema.safeParse(body);
  if (result.success) return { ok: true, event: result.data };
  const fields = toFieldErrors(result.error).map(({ pointer, message }) => `${pointer || '/'}: ${message}`);
  return { ok: false, problem: `not an order.created event (${fields.join('; ')})` };
}

/** `duplicate`: the key was applied before, by this delivery's twin or an earlier one of its own. */
export type ApplyOutcome = 'applied' | 'duplicate';

export type ApplyEvent = (event: ReceivedEvent) => Promise<ApplyOutcome>;

export interface EventLedger {
  migrate: () => Promise<void>;
  apply: ApplyEvent;
}

export function createEventLedger(options: { database: LedgerPool; schema?: string }): EventLedger {
  const statements = ledgerStatements(options.database);
  const schema = options.schema ?? 'consumer';
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  return {
    migrate: () => statements.migrate(schema),
    apply: async (event) =>
      (await statements.claimAndApply(schema, {
        idempotencyKey: event.idempotencyKey,
        eventId: event.eventId,
        orderNo: event.orderNo,
        customerId: event.customerId,
        lines: event.lines,
        totalAmount: event.totalAmount,
      }))
        ? 'applied'
        : 'duplicate',
  };
}
