// What a platform's probes see. The worker process with WORKER_HEALTH_PORT, its database reached
// through a proxy the test turns off and on: /readyz follows the database and the worker's own
// state, /livez stays 200, and without the setting the process listens on nothing. The API's
// /readyz: the dependencies /healthz checks, the drain, and the worker it hosts.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import pg from 'pg';
import { pino } from 'pino';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { buildApp } from '../../edges/http/app.js';
import { migrate } from '../../services/db/migrate.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { clientOn } from '../../services/temporal/connection.js';
import { freshDatabaseOn } from '../../tools/harness/stack.js';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import { freePort, isPortOpen } from '../../tools/harness/ports.js';
import { startTcpProxy, type TcpProxy } from '../../tools/harness/tcp-proxy.js';
import { processEnv, workerProcess } from '../../tools/harness/processes.js';
import { startProxiedEdge, type ProxiedEdge } from '../../tools/harness/proxied-edge.js';
import {
  approval,
  createSku,
  eventually,
  postApproval,
  stackEnv,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

interface Probe {
  status: number;
  body: Record<string, unknown>;
}

/** GET on a worker's probe port; a refused connection is `status: 0`. */
async function probe(port: number, path: string): Promise<Probe> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5_000) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  } catch {
    return { status: 0, body: {} };
  }
}

/** Waits until `path` answers `status` with exactly `body`. */
async function answers(port: number, path: string, status: number, body: Record<string, unknown>) {
  return eventually(
    `${path} to answer ${status} ${JSON.stringify(body)}`,
    async () => {
      const answer = await probe(port, path);
      assert.deepEqual(answer, { status, body });
      return answer;
    },
    20_000,
  );
}

/** The TCP ports a process listens on (Linux: its socket descriptors matched against /proc/net). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        return [/^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]].filter(Boolean);
      } catch {
        return [];
      }
    }),
  );
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((table) =>
    readFileSync(table, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      // local_address is HEX_IP:HEX_PORT, state 0A is LISTEN, the inode is the tenth field.
      .filter((fields) => fields[3] === '0A' && inodes.has(fields[9]))
      .map((fields) => parseInt(fields[1]!.split(':')[1]!, 16)),
  );
}

/** An order-event receiver that holds every request until released: the delivery activity waits. */
async function silentReceiver() {
  const sockets = new Set<Socket>();
  let arrived: () => void = () => {};
  const firstRequest = new Promise<void>((resolve) => (arrived = resolve));
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once('data', () => arrived());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/events`,
    firstRequest,
    /** Answers every held request 200: the waiting delivery succeeds. */
    release: () => {
      for (const socket of sockets) socket.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Timings under which one delivery may wait on the held receiver for half a minute. */
const HOLDING = {
  ACTIVITY_START_TO_CLOSE_MS: '40000',
  ACTIVITY_SCHEDULE_TO_CLOSE_MS: '60000',
  // An MCP submit must wait longer than one attempt may run: the configuration refuses otherwise.
  MCP_SUBMIT_WAIT_MS: '50000',
};

describe('the worker process probes (WORKER_HEALTH_PORT)', () => {
  let service: TestService;
  let receiver: Awaited<ReturnType<typeof silentReceiver>>;
  let database: TcpProxy;
  let temporal: TcpProxy;
  let probed: ManagedProcess;
  let unprobed: ManagedProcess;
  let port: number;

  before(async () => {
    // A delivery may wait on the held receiver for half a minute: the SIGTERM test releases it
    // only once it saw the stopping worker answer 503, which a slow machine takes seconds to show.
    const config = testConfig(HOLDING);
    // The submitting side only: the orders are run by the worker processes below.
    service = await startTestService({ config, inProcessWorker: false });
    receiver = await silentReceiver();
    const databaseUrl = new URL(config.databaseUrl as string);
    database = await startTcpProxy(`${databaseUrl.hostname}:${databaseUrl.port}`);
    const proxied = new URL(databaseUrl);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(database.port);
    temporal = await startTcpProxy(config.temporal.address as string);
    port = await freePort();
    probed = workerProcess(
      'worker-probed',
      processEnv(config, {
        DATABASE_URL: proxied.href,
        TEMPORAL_ADDRESS: `127.0.0.1:${temporal.port}`,
        WORKER_HEALTH_PORT: String(port),
        DOWNSTREAM_URL: receiver.url,
        DOWNSTREAM_SECRET: 'downstream-secret-0123456789',
        ...HOLDING,
        DOWNSTREAM_TIMEOUT_MS: '35000',
        WORKER_SHUTDOWN_GRACE_MS: '60000',
      }),
    );
    // On a task queue of its own: the order below runs on the probed worker.
    unprobed = workerProcess(
      'worker-unprobed',
      processEnv(config, { ...HOLDING, TEMPORAL_TASK_QUEUE: `${config.temporal.taskQueue}-x` }),
    );
    await Promise.all([probed.start(), unprobed.start()]);
  });
  after(async () => {
    await Promise.all([probed.kill(), unprobed.kill()]);
    await Promise.all([database.close(), temporal.close(), receiver.close(), service.stop()]);
  });

  it('/readyz is 200 while polling, 503 naming the database while it refuses, 200 again once it answers', async () => {
    await answers(port, '/readyz', 200, { status: 'ok', worker: 'ok', database: 'ok', temporal: 'ok' });

    await database.setMode({ kind: 'refuse' });
    await answers(port, '/readyz', 503, {
      status: 'unavailable',
      worker: 'ok',
      database: 'unreachable',
      temporal: 'ok',
    });
    assert.deepEqual(await probe(port, '/livez'), { status: 200, body: { status: 'ok' } }, 'alive all the same');
    // The reason is in the log, at warn; the answer above carried only the word. The line may reach
    // this process's end of the pipe after the answer did.
    const warning = await eventually('the health check’s warning in the worker’s log', () =>
      Promise.resolve(
        probed
          .output()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message?: string } })
          .find((line) => line.msg === 'health check: database unreachable'),
      ),
    );
    assert.ok(warning.level === 40 && warning.err?.message, 'the driver’s reason is logged at warn');

    await database.setMode({ kind: 'pass' });
    await answers(port, '/readyz', 200, { status: 'ok', worker: 'ok', database: 'ok', temporal: 'ok' });
    assert.deepEqual(await probe(port, '/livez'), { status: 200, body: { status: 'ok' } });
  });

  it('/readyz is 503 naming Temporal while it refuses (the worker itself stays RUNNING), 200 again once it answers', async () => {
    await answers(port, '/readyz', 200, { status: 'ok', worker: 'ok', database: 'ok', temporal: 'ok' });
    await temporal.setMode({ kind: 'refuse' });
    await answers(port, '/readyz', 503, {
      status: 'unavailable',
      worker: 'ok',
      database: 'ok',
      temporal: 'unreachable',
    });
    await temporal.setMode({ kind: 'pass' });
    await answers(port, '/readyz', 200, { status: 'ok', worker: 'ok', database: 'ok', temporal: 'ok' });
  });

  it('listens on WORKER_HEALTH_PORT only when it is set: without it, on no port at all', () => {
    assert.deepEqual(listeningPorts(probed.pid()!), [port]);
    assert.deepEqual(listeningPorts(unprobed.pid()!), []);
  });

  it('SIGTERM: /readyz is 503 naming the worker while it finishes an activity, the port closes once it stopped', async () => {
    // An order whose delivery waits on a receiver that holds it: the shutdown's grace period lets
    // that activity run, and the probes are asked meanwhile; then the receiver answers.
    const answer = await postApproval(
      service,
      approval(uniqueApprovalNo('PROBE'), await createSku(service.prisma, 10)),
    );
    assert.equal(answer.statusCode, 202, answer.body);
    await receiver.firstRequest;
    const stopping = probed.kill('SIGTERM');
    const draining = await eventually('/readyz to answer 503', async () => {
      const ready = await probe(port, '/readyz');
      assert.equal(ready.status, 503, JSON.stringify(ready));
      return ready;
    });
    assert.equal(draining.body.status, 'unavailable');
    assert.equal(draining.body.database, 'ok');
    assert.ok(['stopping', 'draining', 'drained'].includes(draining.body.worker as string), JSON.stringify(draining));
    assert.deepEqual(await probe(port, '/livez'), { status: 200, body: { status: 'ok' } }, 'alive while it stops');
    receiver.release();
    await stopping;
    assert.deepEqual(probed.exit(), { code: 0, signal: null });
    assert.equal(await isPortOpen(port), false, 'the probe port is closed');
  });
});

describe('the API’s /readyz', () => {
  let service: TestService;
  let edge: ProxiedEdge;
  let draining = false;
  let drainable: ReturnType<typeof buildApp>;
  let hosting: ReturnType<typeof buildApp>;
  const get = (app: ReturnType<typeof buildApp>, url: string) => app.inject({ method: 'GET', url });

  before(async () => {
    service = await startTestService();
    edge = await startProxiedEdge(service);
    const deps = { config: service.config, prisma: service.prisma, temporal: service.temporal };
    drainable = buildApp({ ...deps, draining: () => draining });
    hosting = buildApp({ ...deps, hostedWorker: service.worker! });
    await Promise.all([drainable.ready(), hosting.ready()]);
  });
  after(async () => {
    await Promise.all([drainable.close(), hosting.close(), edge.close()]);
    await service.stop();
  });

  it('is 200 with the body of /healthz while PostgreSQL and Temporal answer', async () => {
    const ready = await get(service.app, '/readyz');
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'ok', database: 'ok', temporal: 'ok' });
    assert.deepEqual(ready.json(), (await get(service.app, '/healthz')).json());
  });

  it('is 503 naming Temporal while it is unreachable, and 200 again once it answers', async () => {
    assert.equal((await get(edge.edge, '/readyz')).statusCode, 200);
    await edge.proxy.setMode({ kind: 'refuse' });
    // Within a second: the check before the refusal answers that long.
    const down = await eventually('/readyz to answer 503', async () => {
      const ready = await get(edge.edge, '/readyz');
      assert.equal(ready.statusCode, 503);
      return ready;
    });
    assert.deepEqual(down.json(), { status: 'unavailable', database: 'ok', temporal: 'unreachable' });
    assert.equal((await get(edge.edge, '/livez')).statusCode, 200);
    await edge.proxy.setMode({ kind: 'pass' });
    await eventually('/readyz to answer 200 again', async () => {
      const ready = await get(edge.edge, '/readyz');
      return ready.statusCode === 200 ? ready : undefined;
    });
  });

  it('is 503 with Retry-After from the moment the drain begins; /livez stays 200', async () => {
    assert.equal((await get(drainable, '/readyz')).statusCode, 200);
    draining = true;
    const ready = await get(drainable, '/readyz');
    assert.equal(ready.statusCode, 503);
    assert.equal(ready.json<{ type: string }>().type, '/problems/shutting-down');
    assert.equal(ready.headers['retry-after'], '1');
    assert.equal((await get(drainable, '/livez')).statusCode, 200);
  });

  it('names the worker it hosts: 200 while it polls, 503 once it is shutting down', async () => {
    const ready = await get(hosting, '/readyz');
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json(), { status: 'ok', database: 'ok', temporal: 'ok', worker: 'ok' });
    service.worker!.shutdown();
    const stopping = await get(hosting, '/readyz');
    assert.equal(stopping.statusCode, 503);
    const body = stopping.json<Record<string, string>>();
    assert.deepEqual(
      { ...body, worker: undefined },
      { status: 'unavailable', database: 'ok', temporal: 'ok', worker: undefined },
    );
    assert.ok(['stopping', 'draining', 'drained', 'stopped'].includes(body.worker!), body.worker);
  });
});

type GrpcInterceptor = NonNullable<ConnectionOptions['interceptors']>[number];

describe('probes cannot drain the pool the deliveries claim with', () => {
  const PROBES = 500;
  const APPROVALS = 40;
  let service: TestService;
  const stops: (() => Promise<void>)[] = [];
  /** The statements of the readiness checks, as the API's own database client sent them. */
  const checks = { select1: 0, migrationReads: 0, temporal: 0 };

  before(async () => {
    service = await startTestService();
  });
  after(async () => {
    for (const stop of stops.reverse()) await stop();
    await service.stop();
  });

  /**
   * An API like the product's on the service's task queue, with a pool of 3 connections, its
   * database client and Temporal connection counting what the checks send.
   */
  async function countedApi() {
    const config = testConfig({
      TEMPORAL_TASK_QUEUE: service.config.temporal.taskQueue,
      DB_POOL_SIZE: '3',
      // A start deadline a loaded machine does not reach: a refusal here is the pool's, not the clock's.
      WEBHOOK_START_TIMEOUT_MS: '15000',
    });
    const pooled = createPrismaClient({
      databaseUrl: config.databaseUrl as string,
      poolSize: config.dbPoolSize,
      statementTimeoutMs: config.writePolicy.statementTimeoutMs,
      // 40 deliveries queue for 3 connections: on a loaded machine their own wait passes the
      // statement timeout the pool otherwise waits for a slot. What the probes take is counted
      // below, and a probe that took a connection of its own would show there, not as a 503.
      connectTimeoutMs: 15_000,
    });
    // Counted on the client itself, not on an extension of it: the checks read what its pool answered.
    const send = pooled.$queryRawUnsafe.bind(pooled);
    const counting = (sql: string, ...values: unknown[]) => {
      if (sql === 'SELECT 1') checks.select1 += 1;
      if (sql.includes('_prisma_migrations')) checks.migrationReads += 1;
      return send(sql, ...values);
    };
    const prisma: PrismaClient = Object.assign(pooled, { $queryRawUnsafe: counting });
    const connection = await Connection.connect({
      address: config.temporal.address as string,
      interceptors: [
        (options, nextCall) => {
          if (options.method_definition.path.endsWith('/GetSystemInfo')) checks.temporal += 1;
          // gRPC's types want its class; the call the next interceptor returns is one at run time.
          return nextCall(options) as ReturnType<GrpcInterceptor>;
        },
      ],
    });
    const temporal = clientOn(connection, config.temporal.namespace);
    const app = buildApp({ config, prisma, temporal });
    await app.ready();
    stops.push(async () => {
      await app.close();
      await Promise.all([pooled.$disconnect(), connection.close()]);
    });
    return app;
  }

  it(`${PROBES} probes during a burst of ${APPROVALS} approvals: every approval is accepted, the checks run about once a second`, async (t) => {
    const app = await countedApi();
    const sku = await createSku(service.prisma, 10 * APPROVALS);
    // Connections made before the burst, and no check yet whose result the burst's probes could reuse.
    assert.equal((await postApproval({ app }, approval(uniqueApprovalNo('PROBE-WARM'), sku))).statusCode, 202);
    Object.assign(checks, { select1: 0, migrationReads: 0, temporal: 0 });

    const began = performance.now();
    const approvals = Array.from({ length: APPROVALS }, () => uniqueApprovalNo('PROBE-BURST'));
    const [answers, probes] = await Promise.all([
      Promise.all(approvals.map((approvalNo) => postApproval({ app }, approval(approvalNo, sku)))),
      Promise.all(
        Array.from({ length: PROBES }, (_, i) => app.inject({ method: 'GET', url: i % 2 ? '/readyz' : '/healthz' })),
      ),
    ]);
    const seconds = (performance.now() - began) / 1000;

    // One check at a time, each answering for a second after it: at most one a second and one more.
    const most = Math.ceil(seconds) + 1;
    const counted = `${JSON.stringify(checks)} for ${PROBES} probes in ${seconds.toFixed(1)} s`;
    t.diagnostic(counted);
    for (const count of Object.values(checks)) assert.ok(count <= most, counted);
    // The migrations are read when the pool can serve it; a check queued behind the deliveries
    // answers with their last reading.
    assert.ok(checks.select1 >= 1 && checks.temporal >= 1, counted);
    const refused = answers.filter((answer) => answer.statusCode !== 202 && answer.statusCode !== 201);
    assert.deepEqual(
      refused.map((answer) => `${answer.statusCode} ${answer.body}`),
      [],
      'every approval is answered 202 or 201, none 503',
    );
    // Every probe is answered from a check: as many different answers as checks at most.
    const bodies = new Set(probes.map((probe) => `${probe.statusCode} ${probe.body}`));
    assert.ok(bodies.size <= checks.select1, [...bodies].join('\n'));
    assert.ok(bodies.has('200 {"status":"ok","database":"ok","temporal":"ok"}'), [...bodies].join('\n'));
    for (const approvalNo of approvals) {
      await statusReaches(service, idempotencyKeyFor(approvalNo, 'MAIN'), 'SUBMITTED');
    }
  });

  it('a check queued past its deadline behind statements the database answers says ok, and the log says the pool is busy; behind a statement that holds the pool, unreachable', async () => {
    const prisma = createPrismaClient({
      databaseUrl: stackEnv().databaseUrl,
      poolSize: 1,
      statementTimeoutMs: 10_000,
      connectTimeoutMs: 30_000,
    });
    stops.push(() => prisma.$disconnect());
    async function apiLogging() {
      const lines: { msg: string; pool?: { waiting: number } }[] = [];
      const logger = pino(
        { level: 'warn' },
        { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
      );
      const app = buildApp({ config: service.config, prisma, temporal: service.temporal, logger });
      await app.ready();
      stops.push(() => app.close());
      return { app, lines };
    }

    // One statement holds the pool's only connection past the check's 2 s: nothing comes back.
    const held = await apiLogging();
    // A Prisma query runs once something awaits it: `then` sends it now.
    const hold = prisma.$queryRawUnsafe('SELECT 1 FROM pg_sleep(3)').then(() => undefined);
    const stuck = await held.app.inject({ method: 'GET', url: '/readyz' });
    await hold;
    assert.equal(stuck.statusCode, 503, stuck.body);
    assert.equal(stuck.json<{ database: string }>().database, 'unreachable');
    assert.ok(held.lines.some((line) => line.msg === 'health check: database unreachable'));

    // A queue of short statements longer than the deadline: each comes back answered.
    const busy = await apiLogging();
    const queue = Array.from({ length: 60 }, () =>
      prisma.$queryRawUnsafe('SELECT 1 FROM pg_sleep(0.05)').then(() => undefined),
    );
    const served = await busy.app.inject({ method: 'GET', url: '/readyz' });
    await Promise.all(queue);
    assert.equal(served.statusCode, 200, served.body);
    const said = busy.lines.find(
      (line) => line.msg === 'health check: every pooled connection busy; the database answers them',
    );
    assert.ok(said && said.pool!.waiting > 0, JSON.stringify(busy.lines));
  });

  it('a pending migration: the body says so without naming it, the log names it', async () => {
    const databaseUrl = await freshDatabaseOn(stackEnv().databaseUrl, stops);
    const applied = await migrate(databaseUrl);
    const last = applied.at(-1)!;
    const admin = new pg.Client({ connectionString: databaseUrl });
    await admin.connect();
    try {
      await admin.query('DELETE FROM "_prisma_migrations" WHERE migration_name = $1', [last]);
    } finally {
      await admin.end();
    }
    const prisma = createPrismaClient({ databaseUrl, poolSize: 1, statementTimeoutMs: 1_000 });
    const lines: { msg: string; pending?: string[] }[] = [];
    const logger = pino(
      { level: 'warn' },
      { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const app = buildApp({ config: service.config, prisma, temporal: service.temporal, logger });
    await app.ready();
    stops.push(async () => {
      await app.close();
      await prisma.$disconnect();
    });
    for (const url of ['/readyz', '/healthz']) {
      const ready = await app.inject({ method: 'GET', url });
      assert.equal(ready.statusCode, 503);
      assert.deepEqual(ready.json(), { status: 'unavailable', database: 'migrations pending', temporal: 'ok' });
      assert.ok(!ready.body.includes(last), ready.body);
    }
    const logged = lines.filter((line) => line.msg === 'health check: migrations pending');
    assert.ok(logged.length > 0, 'the log says which');
    for (const line of logged) assert.deepEqual(line.pending, [last]);
  });
});
