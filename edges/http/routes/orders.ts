// The order status read, `GET /orders/:key`: where one key stands, as the public view shows it
// (submission/order-status-view.ts), open to all or to STATUS_TOKEN's holders only.
import type { FastifyInstance } from 'fastify';
import type { Client } from '@temporalio/client';
import { parseIdempotencyKey } from '../../../domain/idempotency-key.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import { invalidKey, KnownFailure, orderNotFound } from '../../../submission/failure-outcome.js';
import { publicStatusView, readOrderStatus } from '../../../submission/order-status-view.js';
import { bearerTokenRefusal } from '../../mcp/bearer-token.js';
import { refusedAtTheDoor } from '../problem.js';

export interface OrderRouteDeps {
  /** STATUS_TOKEN: the bearer token the route asks for; undefined: the route is open. */
  config: { statusToken: string | undefined };
  prisma: PrismaClient;
  temporal: Client;
}

export function registerOrderRoutes(app: FastifyInstance, deps: OrderRouteDeps): void {
  const { config } = deps;
  // A status for whoever asks, or with STATUS_TOKEN for its holders only. Either way the last error
  // is the classification table's code and sentence: the raw text stays with the operator.
  const statusToken = config.statusToken;
  app.get<{ Params: { key: string } }>('/orders/:key', async (request, reply) => {
    if (statusToken !== undefined) {
      // Before the key is even parsed: one answer whatever was wrong, the log says what.
      const refusal = bearerTokenRefusal(request.headers.authorization, statusToken, 'STATUS_TOKEN');
      if (refusal) {
        request.log.warn({ reason: refusal }, 'GET /orders refused: the request could not be authenticated');
        throw refusedAtTheDoor('invalid-token', { 'www-authenticate': 'Bearer realm="orders"' });
      }
    }
    const key = request.params.key;
    if (!parseIdempotencyKey(key)) throw new KnownFailure(invalidKey('/key'));
    const view = await readOrderStatus(deps, key);
    if (!view) throw new KnownFailure(orderNotFound(key));
    return reply.send(publicStatusView(view));
  });
}
