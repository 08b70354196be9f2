// The probes: `/livez` (the process answers), `/healthz` (its dependencies, and where each held
// event connection stands) and `/readyz` (what a platform's readiness probe asks: the
// dependencies, and the worker this process hosts).
import type { FastifyInstance } from 'fastify';
import type { Client } from '@temporalio/client';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import {
  databaseMigratedCheck,
  type PolledWorker,
  readiness,
  sharedCheck,
  temporalAnswers,
  workerPolling,
} from '../../../services/health/readiness.js';
import type { EventConnections } from '../../../services/health/event-connections.js';

export interface HealthRouteDeps {
  prisma: PrismaClient;
  temporal: Client;
  /** The worker this process hosts (API_HOSTS_WORKER): `/readyz` is ready only while it polls. */
  hostedWorker?: PolledWorker;
  /** The outbound event connections this process holds: /healthz's body says where each stands. */
  eventConnections?: EventConnections;
}

export function registerHealthRoutes(app: FastifyInstance, deps: HealthRouteDeps): void {
  // While draining, the only route the drain hook (edges/http/app.ts) lets through.
  app.get('/livez', (_request, reply) => reply.send({ status: 'ok' }));

  // Both name the part that is down, never its own error text (services/health/readiness.ts), and
  // share one check a second however many probes ask (docs/architecture.md, decision 42).
  const databaseMigrated = databaseMigratedCheck(deps.prisma, app.log);
  const dependencies = sharedCheck(async () => {
    const [database, temporal] = await Promise.all([databaseMigrated(), temporalAnswers(deps.temporal, app.log)]);
    return { database, temporal };
  });
  // A held connection that is down changes the body, not the status: the callbacks still work.
  app.get('/healthz', async (_request, reply) => {
    const answer = readiness(await dependencies());
    const connections = deps.eventConnections?.states() ?? {};
    const held = Object.keys(connections).length > 0;
    return reply.code(answer.statusCode).send(held ? { ...answer.body, connections } : answer.body);
  });
  // What a platform's readiness probe asks: the dependencies, and the worker this process hosts.
  // While the process drains, the drain hook answers it 503, as it answers /healthz.
  app.get('/readyz', async (_request, reply) => {
    const worker = deps.hostedWorker;
    const answer = readiness({
      ...(await dependencies()),
      ...(worker ? { worker: workerPolling(worker) } : {}),
    });
    return reply.code(answer.statusCode).send(answer.body);
  });
}
