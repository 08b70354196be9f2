// `order.created` events as someone without DOWNSTREAM_SECRET could send them, for the tests of the
// reference consumers' doors: each is a well-formed event of a fresh key — so a consumer that did
// not check the signature would apply it — carrying headers that are missing, made with another
// key, or genuine but for a body, id or timestamp that was changed after signing. The well-formed
// events themselves serve the consumers' other tests too.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { eventIdFor, ORDER_CREATED, type OrderCreatedEvent } from '../../domain-node/order-event.js';
import { standardSignatureHeaders } from '../../domain-node/signature.js';

/** The DOWNSTREAM_SECRET the service signs with and the consumers under test hold. */
export const DOWNSTREAM_SECRET = 'downstream-secret-0123456789';

const RUN = randomBytes(3).toString('hex');
let serial = 0;

/** A valid event of a key nobody used before. */
export function freshEvent(quantity = 2, unitPrice = '10.50', prefix = 'FORGE'): OrderCreatedEvent {
  serial += 1;
  return orderEvent(`${prefix}-${RUN}-${serial}`, quantity, unitPrice);
}

/** The valid event of the MAIN order of `approvalNo`: one line of `quantity` at `unitPrice`. */
export function orderEvent(approvalNo: string, quantity: number, unitPrice: string): OrderCreatedEvent {
  const key = idempotencyKeyFor(approvalNo, 'MAIN');
  return {
    type: ORDER_CREATED,
    eventId: eventIdFor(key),
    idempotencyKey: key,
    orderNo: `SO-${approvalNo}`,
    approvalNo,
    operation: 'MAIN',
    customerId: 'C-1',
    currency: 'EUR',
    lines: [{ sku: 'SKU-1', quantity, unitPrice }],
    totalAmount: ((quantity * Math.round(Number(unitPrice) * 100)) / 100).toFixed(4),
    occurredAt: new Date().toISOString(),
  };
}

export type Forgery =
  | { kind: 'unsigned'; kept: ('webhook-id' | 'webhook-timestamp')[] }
  | { kind: 'signed with another key'; secret: string }
  | { kind: 'body changed after signing'; quantity: number }
  | { kind: 'webhook-id changed after signing'; id: string }
  | { kind: 'webhook-timestamp changed after signing'; shiftSeconds: number }
  | { kind: 'signature broken'; how: 'empty' | 'no digest' | 'other version' | 'truncated' | 'random'; noise: string }
  /** Genuine but outside the five minutes an HTTP receiver allows; a broker message may be older. */
  | { kind: 'stale'; ageSeconds: number };

/** A secret someone may guess: any text of the floor's length, or a `whsec_` key. */
const anotherSecret = fc
  .oneof(
    fc.string({ minLength: 16, maxLength: 48 }).filter((secret) => !secret.startsWith('whsec_')),
    fc.uint8Array({ minLength: 16, maxLength: 32 }).map((key) => 'whsec_' + Buffer.from(key).toString('base64')),
  )
  .filter((secret) => secret !== DOWNSTREAM_SECRET);

/** Every forgery a door must refuse whatever the message's age. */
export const anyForgery: fc.Arbitrary<Forgery> = fc.oneof(
  fc.record({
    kind: fc.constant('unsigned' as const),
    kept: fc.subarray(['webhook-id', 'webhook-timestamp'] as ('webhook-id' | 'webhook-timestamp')[]),
  }),
  fc.record({ kind: fc.constant('signed with another key' as const), secret: anotherSecret }),
  fc.record({
    kind: fc.constant('body changed after signing' as const),
    quantity: fc.integer({ min: 1, max: 999_999 }),
  }),
  fc.record({
    kind: fc.constant('webhook-id changed after signing' as const),
    id: fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
  }),
  fc.record({
    kind: fc.constant('webhook-timestamp changed after signing' as const),
    shiftSeconds: fc.integer({ min: -1_000_000, max: 1_000_000 }).filter((shift) => shift !== 0),
  }),
  fc.record({
    kind: fc.constant('signature broken' as const),
    how: fc.constantFrom(
      'empty' as const,
      'no digest' as const,
      'other version' as const,
      'truncated' as const,
      'random' as const,
    ),
    noise: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes).toString('base64')),
  }),
);

/** For a door with a timestamp window: the forgeries, and genuine events sent too late or too early. */
export const anyRefusalWithWindow: fc.Arbitrary<Forgery> = fc.oneof(
  anyForgery,
  fc.record({
    kind: fc.constant('stale' as const),
    ageSeconds: fc.oneof(fc.integer({ min: 301, max: 400 * 86_400 }), fc.integer({ min: -400 * 86_400, max: -301 })),
  }),
);

export interface SignedDelivery {
  /** The body as sent. */
  body: Buffer;
  /** The Standard Webhooks headers as sent (some may be missing). */
  headers: Record<string, string>;
}

/** The event signed as the service signs it, at `nowSeconds`. */
export function genuine(event: OrderCreatedEvent, nowSeconds = Math.floor(Date.now() / 1000)): SignedDelivery {
  const body = JSON.stringify(event);
  return {
    body: Buffer.from(body),
    headers: standardSignatureHeaders({ secret: DOWNSTREAM_SECRET }, event.eventId, String(nowSeconds), body),
  };
}

/** The event as the forgery sends it. */
export function forge(event: OrderCreatedEvent, forgery: Forgery, nowSeconds = Math.floor(Date.now() / 1000)) {
  const signed = genuine(event, nowSeconds);
  const timestamp = String(nowSeconds);
  switch (forgery.kind) {
    case 'unsigned':
      return {
        body: signed.body,
        headers: Object.fromEntries(forgery.kept.map((name) => [name, signed.headers[name] ?? ''])),
      };
    case 'signed with another key':
      return {
        body: signed.body,
        headers: standardSignatureHeaders({ secret: forgery.secret }, event.eventId, timestamp, signed.body),
      };
    case 'body changed after signing': {
      const line = event.lines[0]!;
      // Another quantity, still one the consumer's schema takes.
      const quantity = forgery.quantity === line.quantity ? forgery.quantity + 1 : forgery.quantity;
      const changed: OrderCreatedEvent = {
        ...event,
        lines: [{ ...line, quantity }],
        totalAmount: ((quantity * Math.round(Number(line.unitPrice) * 100)) / 100).toFixed(4),
      };
      return { body: Buffer.from(JSON.stringify(changed)), headers: signed.headers };
    }
    case 'webhook-id changed after signing':
      return { body: signed.body, headers: { ...signed.headers, 'webhook-id': forgery.id } };
    case 'webhook-timestamp changed after signing':
      return {
        body: signed.body,
        headers: { ...signed.headers, 'webhook-timestamp': String(nowSeconds + forgery.shiftSeconds) },
      };
    case 'signature broken': {
      const real = signed.headers['webhook-signature'] ?? '';
      const broken = {
        empty: '',
        'no digest': 'v1,',
        'other version': real.replace(/^v1,/, 'v1a,'),
        truncated: real.slice(0, -4),
        random: `v1,${forgery.noise}`,
      }[forgery.how];
      return { body: signed.body, headers: { ...signed.headers, 'webhook-signature': broken } };
    }
    case 'stale':
      return genuine(event, nowSeconds - forgery.ageSeconds);
    default:
      return forgery satisfies never;
  }
}
