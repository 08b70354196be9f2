// The worker process's probe endpoints, for a platform's liveness and readiness probes:
// `GET /livez` answers 200 while the event loop runs; `GET /readyz` answers 200 while the worker
// polls its task queue and both the database and Temporal answer, else 503 naming the part that is
// not ready. (The SDK keeps a worker RUNNING while its polls fail, so its state alone would report
// a worker cut off from Temporal as ready.) The database and Temporal checks are shared by every
// probe for a second (services/health/readiness.ts, `sharedCheck`).
// Plain node:http: the worker serves nothing else over HTTP.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { PrismaClient } from '../services/db/prisma-client.js';
import {
  databaseAnswers,
  type PolledWorker,
  readiness,
  sharedCheck,
  temporalAnswers,
  workerPolling,
} from '../services/health/readiness.js';

/** What `/readyz` checks once the worker exists. */
export interface ProbedWorker {
  worker: PolledWorker;
  prisma: PrismaClient;
  temporal: Client;
}

export interface WorkerProbes {
  /** The port listened on (the one asked for, or the one the system chose for 0). */
  port: number;
  /** From now on `/readyz` reports this worker, its database and Temporal; before, the worker is `starting`. */
  watch(target: ProbedWorker): void;
  close(): Promise<void>;
}

/** Listens at once, so that liveness answers while the worker is still being set up. */
export async function serveWorkerProbes(options: { host: string; port: number; log: Logger }): Promise<WorkerProbes> {
  const { log } = options;
  let target:
    | { worker: PolledWorker; dependencies: () => Promise<Record<'database' | 'temporal', string>> }
    | undefined;

  const ready = async () => {
    if (!target) return readiness({ worker: 'starting' });
    // The worker's state is read at each probe (it costs nothing); the dependencies' reasons go to
    // the log only, and their checks are shared, one a second (services/health/readiness.ts).
    const { worker, dependencies } = target;
    return readiness({ worker: workerPolling(worker), ...(await dependencies()) });
  };

  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return send(response, 405, { status: 'method not allowed' });
    if (path === '/livez') return send(response, 200, { status: 'ok' });
    if (path !== '/readyz') return send(response, 404, { status: 'not found' });
    ready().then(
      (answer) => send(response, answer.statusCode, answer.body),
      (error: unknown) => {
        log.error({ err: error }, 'health check failed');
        send(response, 503, { status: 'unavailable' });
      },
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  log.info({ livez: '/livez', readyz: '/readyz' }, `worker probes at http://${hostForUrl(options.host)}:${port}`);

  return {
    port,
    watch: ({ worker, prisma, temporal }) => {
      const dependencies = sharedCheck(async () => {
        const [database, temporalState] = await Promise.all([
          databaseAnswers(prisma, log),
          temporalAnswers(temporal, log),
        ]);
        return { database, temporal: temporalState };
      });
      target = { worker, dependencies };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A probe's kept-alive connection would hold the close open.
        server.closeAllConnections();
      }),
  };
}

function send(response: ServerResponse, statusCode: number, body: object): void {
  response.writeHead(statusCode, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  response.end(JSON.stringify(body));
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
