// Applying an `order.created` event exactly once, whatever carried it: the HTTP consumer
// (consumer.ts) and the RabbitMQ consumer (broker-consumer.ts) both parse the event here and apply
// it here. The event's idempotency key goes into `processed_event` (unique) in the same transaction
// as the effect (a `shipment_request` row), so a delivery that finds the key applies nothing —
// including the one that comes again because the answer or the ack of the first was lost after the
// commit (docs/architecture.md, decisions 8 and 24).
import type pg from 'pg';
import { z } from 'zod';
import { IDEMPOTENCY_KEY_PATTERN, OPERATIONS } from '../../domain/idempotency-key.js';
import { orderSchema, toFieldErrors } from '../../domain/order-input.js';
import { ORDER_CREATED } from '../../domain-node/order-event.js';

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

export function createEventLedger(options: { pool: pg.Pool; schema?: string }): EventLedger {
  const { pool } = options;
  const schema = options.schema ?? 'consumer';
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);

  async function migrate(): Promise<void> {
    await pool.query(`
      CREATE SCHEMA IF NOT EXISTS ${schema};
      CREATE TABLE IF NOT EXISTS ${schema}.processed_event (
        idempotency_key VARCHAR(128) COLLATE "C" NOT NULL,
        event_id        VARCHAR(64) NOT NULL,
        processed_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
        CONSTRAINT processed_event_pkey PRIMARY KEY (idempotency_key)
      );
      CREATE TABLE IF NOT EXISTS ${schema}.shipment_request (
        id              BIGSERIAL PRIMARY KEY,
        idempotency_key VARCHAR(128) COLLATE "C" NOT NULL,
        order_no        VARCHAR(40) NOT NULL,
        customer_id     VARCHAR(64) NOT NULL,
        lines           JSONB NOT NULL,
        total_amount    NUMERIC(18,4) NOT NULL,
        created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
      );`);
  }

  async function apply(event: ReceivedEvent): Promise<ApplyOutcome> {
    const client = await pool.connect();
    // A checked-out client reports a dropped connection as an event; the query's own error says it.
    const ignoreConnectionError = () => undefined;
    client.on('error', ignoreConnectionError);
    try {
      await client.query('BEGIN');
      // The claim comes first and decides: a concurrent twin waits on the key's row lock here and
      // finds it taken once the first commits.
      const claimed = await client.query(
        `INSERT INTO ${schema}.processed_event (idempotency_key, event_id) VALUES ($1, $2)
         ON CONFLICT (idempotency_key) DO NOTHING`,
        [event.idempotencyKey, event.eventId],
      );
      if (claimed.rowCount === 0) {
        await client.query('ROLLBACK');
        return 'duplicate';
      }
      await client.query(
        `INSERT INTO ${schema}.shipment_request (idempotency_key, order_no, customer_id, lines, total_amount)
         VALUES ($1, $2, $3, $4::jsonb, $5)`,
        [event.idempotencyKey, event.orderNo, event.customerId, JSON.stringify(event.lines), event.totalAmount],
      );
      await client.query('COMMIT');
      return 'applied';
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', ignoreConnectionError);
      client.release();
    }
  }

  return { migrate, apply };
}
