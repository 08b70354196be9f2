// A reference consumer of `order.created` events, the way an ERP/WMS should take them: verify the
// Standard Webhooks signature with that scheme's own library (`standardwebhooks`), then apply each event exactly once by inserting its idempotency key into
// `processed_event` (unique) in the same transaction as the effect (a `shipment_request` row). A
// redelivery finds the key and answers 200 without applying anything again — including the case
// where we committed but our answer was lost on the way back.
import type http from 'node:http';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';

export interface ConsumerOptions {
  pool: pg.Pool;
  /** DOWNSTREAM_SECRET of the service; the library holds timestamps to five minutes either way. */
  secret: string;
  /** PostgreSQL schema of the consumer's own tables. */
  schema?: string;
  log?: (message: string, fields: Record<string, unknown>) => void;
}

export interface ConsumerAnswer {
  status: number;
  body: Record<string, unknown>;
}

const MAX_BODY_BYTES = 1024 * 1024;

export function createConsumer(options: ConsumerOptions) {
  const schema = options.schema ?? 'consumer';
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const log = options.log ?? (() => undefined);
  const webhook = verifierFor(options.secret);

  async function migrate(): Promise<void> {
    await options.pool.query(`
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

  /** Verifies and applies one delivery; the HTTP wrapper below only moves bytes. */
  async function receive(rawBody: Buffer, headers: http.IncomingHttpHeaders): Promise<ConsumerAnswer> {
    try {
      webhook.verify(
        rawBody,
        {
          'webhook-id': single(headers['webhook-id']) ?? '',
          'webhook-timestamp': single(headers['webhook-timestamp']) ?? '',
          'webhook-signature': single(headers['webhook-signature']) ?? '',
        },
        // JSON is judged below, after the signature: a body that is not JSON is a 400, not a 401.
        { jsonParse: false },
      );
    } catch (error) {
      return { status: 401, body: { error: `signature refused: ${(error as Error).message}` } };
    }
    let event: {
      type?: unknown;
      eventId?: unknown;
      idempotencyKey?: unknown;
      orderNo?: unknown;
      customerId?: unknown;
      lines?: unknown;
      totalAmount?: unknown;
    };
    try {
      event = JSON.parse(rawBody.toString('utf8')) as typeof event;
    } catch {
      return { status: 400, body: { error: 'body is not JSON' } };
    }
    const key = single(headers['idempotency-key']);
    if (event.type !== 'order.created' || typeof event.idempotencyKey !== 'string' || event.idempotencyKey !== key) {
      return {
        status: 400,
        body: { error: 'expected an order.created event whose idempotencyKey matches Idempotency-Key' },
      };
    }
    const client = await options.pool.connect();
    // A checked-out client reports a dropped connection as an event; the query's own error says it.
    const ignoreConnectionError = () => undefined;
    client.on('error', ignoreConnectionError);
    try {
      await client.query('BEGIN');
      const claimed = await client.query(
        `INSERT INTO ${schema}.processed_event (idempotency_key, event_id) VALUES ($1, $2)
         ON CONFLICT (idempotency_key) DO NOTHING`,
        [key, String(event.eventId)],
      );
      if (claimed.rowCount === 0) {
        await client.query('ROLLBACK');
        log('duplicate event ignored', { idempotencyKey: key, eventId: event.eventId });
        return { status: 200, body: { status: 'duplicate', idempotencyKey: key } };
      }
      await client.query(
        `INSERT INTO ${schema}.shipment_request (idempotency_key, order_no, customer_id, lines, total_amount)
         VALUES ($1, $2, $3, $4::jsonb, $5)`,
        [
          key,
          String(event.orderNo),
          String(event.customerId),
          JSON.stringify(event.lines ?? []),
          String(event.totalAmount),
        ],
      );
      await client.query('COMMIT');
      log('event applied', { idempotencyKey: key, eventId: event.eventId, orderNo: event.orderNo });
      return { status: 200, body: { status: 'applied', idempotencyKey: key } };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.off('error', ignoreConnectionError);
      client.release();
    }
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

  return { migrate, receive, handler };
}

/**
 * The library reads a `whsec_` secret itself; any other secret is its UTF-8 bytes, as the service
 * signs with it (docs/downstream.md), and is handed over as raw key bytes.
 */
function verifierFor(secret: string): Webhook {
  return secret.startsWith('whsec_')
    ? new Webhook(secret)
    : new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' });
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
