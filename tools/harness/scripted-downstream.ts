// A real HTTP downstream for delivery tests, chaos and the explorer: a scripted front that answers each request as the
// test says (an error status, a hang, or the reference consumer — optionally cutting the
// connection after the consumer committed), and records what arrived.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { createConsumer } from '../../examples/consumer/consumer.js';
import { httpEventVerifier } from '../../examples/consumer/event-signature.js';

export type Reply =
  | { kind: 'status'; status: number; headers?: Record<string, string> }
  | { kind: 'consumer' }
  /** The consumer commits, then the connection is cut before the answer leaves. */
  | { kind: 'consumer-then-cut' }
  /** Never answers (the caller's timeout fires). */
  | { kind: 'hang' };

export interface Arrival {
  idempotencyKey: string | undefined;
  eventId: string | undefined;
  receivedAt: number;
  body: string;
  headers: http.IncomingHttpHeaders;
}

export interface ScriptedDownstream {
  url: string;
  /** Replies for the next requests with this key, in order; then the consumer answers. */
  script: (idempotencyKey: string, replies: Reply[]) => void;
  arrivals: (idempotencyKey: string) => Arrival[];
  effects: (idempotencyKey: string) => Promise<number>;
  close: () => Promise<void>;
}

export async function startScriptedDownstream(
  pool: pg.Pool,
  secret: string,
  schema: string,
  /** How to answer a request no script covers; the consumer by default. */
  fallback: (arrival: Arrival) => Reply = () => ({ kind: 'consumer' }),
): Promise<ScriptedDownstream> {
  const consumer = createConsumer({
    database: { store: 'postgresql', pool },
    verify: httpEventVerifier({ secret }),
    schema,
  });
  await consumer.migrate();
  const scripts = new Map<string, Reply[]>();
  const arrivals: Arrival[] = [];
  const hanging = new Set<http.ServerResponse>();

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const key = request.headers['idempotency-key'] as string | undefined;
      const arrival: Arrival = {
        idempotencyKey: key,
        eventId: request.headers['x-event-id'] as string | undefined,
        receivedAt: Date.now(),
        body: body.toString('utf8'),
        headers: request.headers,
      };
      arrivals.push(arrival);
      const reply = (key && scripts.get(key)?.shift()) || fallback(arrival);
      if (reply.kind === 'status') {
        response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        response.end(JSON.stringify({ error: `scripted ${reply.status}` }));
        return;
      }
      if (reply.kind === 'hang') {
        hanging.add(response);
        return;
      }
      consumer.receive(body, request.headers).then(
        (answer) => {
          if (reply.kind === 'consumer-then-cut') {
            request.socket.destroy();
            return;
          }
          response.writeHead(answer.status, { 'content-type': 'application/json' });
          response.end(JSON.stringify(answer.body));
        },
        // The consumer's own database is down: it answers 503 and applies nothing.
        () => {
          response.writeHead(503, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ error: 'temporarily unavailable' }));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/events`,
    script: (key, replies) => scripts.set(key, [...replies]),
    arrivals: (key) => arrivals.filter((arrival) => arrival.idempotencyKey === key),
    effects: async (key) => {
      const { rows } = await pool.query<{ count: string }>(
        `SELECT count(*) FROM ${schema}.shipment_request WHERE idempotency_key = $1`,
        [key],
      );
      return Number(rows[0]?.count ?? 0);
    },
    close: async () => {
      for (const response of hanging) response.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
