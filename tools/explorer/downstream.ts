// The explorer's downstream: the project's reference consumer behind a plain HTTP server, except
// for the customers the model marks as refused, whose events are answered 422 for good — so both
// DELIVERED and DELIVERY_FAILED happen.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { createConsumer } from '../../examples/consumer/consumer.js';

export const REFUSED_CUSTOMER = 'CUST-REFUSED';

export interface Downstream {
  url: string;
  requests: () => number;
  close: () => Promise<void>;
}

export async function startDownstream(pool: pg.Pool, secret: string, schema: string): Promise<Downstream> {
  const consumer = createConsumer({ pool, secret, schema });
  await consumer.migrate();
  let requests = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests += 1;
      const body = Buffer.concat(chunks);
      const answer = (status: number, payload: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(payload));
      };
      if (body.includes(REFUSED_CUSTOMER)) {
        answer(422, { error: 'this customer is not known here' });
        return;
      }
      consumer.receive(body, request.headers).then(
        (result) => answer(result.status, result.body),
        () => answer(503, { error: 'temporarily unavailable' }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/events`,
    requests: () => requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
