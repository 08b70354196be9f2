// A reference consumer of `order.created` events, the way an ERP/WMS should take them: verify the
// Standard Webhooks signature before reading the body (event-signature.ts, shared with the RabbitMQ
// consumer), then apply each event exactly once (apply-once.ts, shared too). A redelivery finds the
// key and answers 200 without applying anything again — including the case where we committed but
// our answer was lost on the way back.
import type http from 'node:http';
import { createEventLedger, parseOrderCreatedEvent } from './apply-once.js';
import type { LedgerPool } from './ledger-stores.js';
import type { EventVerifier } from './event-signature.js';

export interface ConsumerOptions {
  /** The consumer's own database: `openLedgerPool(url, max)`. */
  database: LedgerPool;
  /** The signature check every delivery passes first: `httpEventVerifier` with DOWNSTREAM_SECRET. */
  verify: EventVerifier;
  /** The schema of the consumer's own tables (a database of that name on MySQL). */
  schema?: string;
  log?: (message: string, fields: Record<string, unknown>) => void;
}

export interface ConsumerAnswer {
  status: number;
  body: Record<string, unknown>;
}

const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The one answer to every delivery whose signature does not hold, whichever check failed: a sender
 * without the secret learns nothing from it. The reason goes to the log.
 */
export const REFUSED: ConsumerAnswer = { status: 401, body: { error: 'the event could not be authenticated' } };

export function createConsumer(options: ConsumerOptions) {
  const ledger = createEventLedger({
    database: options.database,
    ...(options.schema ? { schema: options.schema } : {}),
  });
  const log = options.log ?? (() => undefined);

  /** Verifies and applies one delivery; the HTTP wrapper below only moves bytes. */
  async function receive(rawBody: Buffer, headers: http.IncomingHttpHeaders): Promise<ConsumerAnswer> {
    // JSON is judged below, after the signature: a body that is not JSON is a 400, not a 401.
    const check = options.verify(rawBody, (name) => single(headers[name]));
    if (!check.ok) {
      log('event refused: signature', { reason: check.reason, webhookId: single(headers['webhook-id']) });
      return REFUSED;
    }
    let body: unknown;
    try {
      body = JSON.parse(rawBody.toString('utf8'));
    } catch {
      return { status: 400, body: { error: 'body is not JSON' } };
    }
    const parsed = parseOrderCreatedEvent(body);
    if (!parsed.ok) return { status: 400, body: { error: parsed.problem } };
    const { event } = parsed;
    const key = single(headers['idempotency-key']);
    if (event.idempotencyKey !== key) {
      return { status: 400, body: { error: "the event's idempotencyKey must match Idempotency-Key" } };
    }
    const outcome = await ledger.apply(event);
    log(outcome === 'applied' ? 'event applied' : 'duplicate event ignored', {
      idempotencyKey: key,
      eventId: event.eventId,
      orderNo: event.orderNo,
    });
    return { status: 200, body: { status: outcome, idempotencyKey: key } };
  }

  /** A plain node:http handler around `receive`. */
  function handler(request: http.IncomingMessage, response: http.ServerResponse): void {
    readBody(request)
      .then(async (body) => {
        if (request.method !== 'POST') return { status: 405, body: { error: 'POST only' } };
        if (body === undefined) return { status: 413, body: { error: 'body too large' } };
        return receive(body, request.headers);
      })
      .then(
        (answer) => send(response, answer),
        (error: unknown) => {
          log('event not applied', { error: error instanceof Error ? error.message : String(error) });
          send(response, { status: 503, body: { error: 'temporarily unavailable' } });
        },
      );
  }

  return { migrate: ledger.migrate, receive, handler };
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

async function readBody(request: http.IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function send(response: http.ServerResponse, answer: ConsumerAnswer): void {
  response.writeHead(answer.status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(answer.body));
}
