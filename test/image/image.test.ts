// The container image as shipped: the repository's Dockerfile built with podman on a Node base made
// from Debian's packages (tools/harness/node-base-image.ts), what it holds, then the image run
// against the suite's Temporal dev server and PostgreSQL — the migrations into an empty database,
// the API and the worker as containers with a read-only root, one approval through them, the
// operator CLI, SIGTERM.
// `npm run test:image`; not part of `npm test`, as a first build takes minutes. The tests run in
// order, each on what the one before left.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { CONTAINER_TOOLS_INSTALL, missingContainerTools } from '../../tools/harness/container-tools.js';
import { freePort } from '../../tools/harness/ports.js';
import { freshMysqlDatabase, MYSQL_TEST_URL } from '../../tools/harness/mysql.js';
import { freshDatabaseOn } from '../../tools/harness/stack.js';
import { nodeBaseImage } from '../../tools/harness/node-base-image.js';
import { type Container, podman, runOnce, startContainer } from '../../tools/harness/podman.js';
import { sendApproval } from '../../tools/harness/processes.js';
import { approval, createSku, eventually, stackEnv, uniqueApprovalNo } from '../../tools/harness/service.js';
import { TEST_WEBHOOK_SECRET } from '../../tools/harness/signed-webhook.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const IMAGE = 'localhost/exactly-once-orders:test';
/** What `podman stop` waits after SIGTERM before it kills: the manifests' grace is no shorter. */
const STOP_GRACE_SECONDS = 30;
const MIGRATIONS = readdirSync(new URL('../../prisma/migrations', import.meta.url), { withFileTypes: true }).filter(
  (entry) => entry.isDirectory(),
).length;

/** `podman build` of the Dockerfile at the root, as its header says, on the base made here. */
async function buildImage(base: string): Promise<{ seconds: number; cachedSteps: number; steps: number }> {
  const started = Date.now();
  const { stdout, stderr } = await podman(
    ['build', '--isolation', 'chroot', '--network', 'host', '--build-arg', `NODE_IMAGE=${base}`, '--tag', IMAGE, '.'],
    { cwd: ROOT },
  );
  const log = stdout + stderr;
  return {
    seconds: (Date.now() - started) / 1000,
    steps: log.match(/^\[\d+\/\d+\] STEP /gm)?.length ?? 0,
    cachedSteps: log.match(/^--> Using cache /gm)?.length ?? 0,
  };
}

const get = async (url: string) => {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(5_000) })).status;
  } catch {
    return 0;
  }
};

describe('the container image built from the Dockerfile', () => {
  const suffix = randomBytes(3).toString('hex');
  /** What `after` undoes: the empty database. */
  const stops: (() => Promise<void>)[] = [];
  let databaseUrl: string;
  let prisma: PrismaClient | undefined;
  /** Removed after the tests however they ended, even a start that failed half-way. */
  const names = { api: `orders-image-api-${suffix}`, worker: `orders-image-worker-${suffix}` };
  let api: Container;
  let worker: Container;
  let apiUrl: string;
  let workerProbes: string;
  /** What every process of the image is given: the suite's stack and a task queue of the test's own. */
  let serviceEnv: Record<string, string>;
  let key: string;

  before(async () => {
    const missing = missingContainerTools();
    assert.deepEqual(missing, [], `the image test needs ${missing.join(', ')}: ${CONTAINER_TOOLS_INSTALL}`);
    const base = await nodeBaseImage();
    console.log(
      `node base ${base.image}: ${base.made ? 'made' : 'from an earlier run'} in ${base.seconds.toFixed(0)} s`,
    );
    const build = await buildImage(base.image);
    const size = Number((await podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).stdout.trim());
    console.log(
      `${IMAGE}: built in ${build.seconds.toFixed(0)} s (${build.cachedSteps} of ${build.steps} steps from the layer cache), ` +
        `${(size / 1_000_000).toFixed(0)} MB`,
    );
    databaseUrl = await freshDatabaseOn(stackEnv().databaseUrl, stops);
    prisma = createPrismaClient({ databaseUrl, poolSize: 2, statementTimeoutMs: 5_000 });
    serviceEnv = {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: stackEnv().temporalAddress,
      TEMPORAL_TASK_QUEUE: `image-${suffix}`,
    };
  });

  after(async () => {
    for (const name of Object.values(names)) await podman(['rm', '--force', '--ignore', name], { allowFailure: true });
    await prisma?.$disconnect();
    for (const stop of stops) await stop();
  });

  it('holds the release and its runtime dependencies: no TypeScript source, no development package', async () => {
    // Hoisted packages the lockfile installs only for development, or only as an optional peer.
    const { packages } = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; devOptional?: boolean }>;
    };
    const development = Object.entries(packages)
      .filter(([where, entry]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(where) && (entry.dev || entry.devOptional))
      .map(([where]) => where);
    assert.ok(development.includes('node_modules/typescript'), 'the lockfile marks development packages');
    const look = await runOnce(IMAGE, {}, [
      'sh',
      '-c',
      `find . -name node_modules -prune -o -name '*.ts' -print; ls -d ${development.join(' ')} 2>/dev/null; true`,
    ]);
    assert.equal(look.code, 0, look.stderr);
    assert.equal(look.stdout.trim(), '', 'TypeScript sources or development packages in /app');
  });

  it("names its release: the OCI labels carry package.json's version, and the bill of materials is in it", async () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const labels = JSON.parse(
      (await podman(['image', 'inspect', '--format', '{{json .Config.Labels}}', IMAGE])).stdout,
    ) as Record<string, string>;
    assert.equal(labels['org.opencontainers.image.version'], version);
    assert.equal(labels['org.opencontainers.image.licenses'], 'MIT');
    const bom = await runOnce(IMAGE, {}, ['node', '-p', "require('/app/dist/sbom.cdx.json').bomFormat"]);
    assert.equal(bom.stdout.trim(), 'CycloneDX', bom.stderr);
    // Source maps on: a stack trace from the built code names the TypeScript file it came from.
    const trace = await runOnce(IMAGE, {}, [
      'node',
      '--input-type=module',
      '-e',
      "const { loadConfig } = await import('/app/dist/app/env.js'); try { loadConfig({ DB_POOL_SIZE: 'x' }); } catch (e) { console.log(e.stack); }",
    ]);
    assert.match(trace.stdout, /\/app\/env\.ts:\d+/, trace.stdout + trace.stderr);
  });

  it('applies every migration of the image to an empty database', async () => {
    const migrate = await runOnce(IMAGE, serviceEnv, ['node', 'dist/app/migrate-main.js']);
    assert.equal(migrate.code, 0, migrate.stdout + migrate.stderr);
    assert.match(migrate.stdout, new RegExp(`applied ${MIGRATIONS} migration\\(s\\)`));
    const applied = await prisma!.$queryRaw<{ count: bigint }[]>`SELECT count(*) FROM "_prisma_migrations"`;
    assert.equal(Number(applied[0]?.count), MIGRATIONS);
  });

  it('runs the API by default and the worker by command, which write one order for an approval', async () => {
    const [apiPort, healthPort] = [await freePort(), await freePort()];
    // On the host's network the loopback is enough; the image listens on every interface by default.
    api = await startContainer(names.api, IMAGE, {
      ...serviceEnv,
      WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
      HOST: '127.0.0.1',
      PORT: String(apiPort),
    });
    worker = await startContainer(
      names.worker,
      IMAGE,
      { ...serviceEnv, WORKER_HEALTH_PORT: String(healthPort), WORKER_HEALTH_HOST: '127.0.0.1' },
      ['node', 'dist/app/worker-main.js'],
    );
    apiUrl = `http://127.0.0.1:${apiPort}`;
    workerProbes = `http://127.0.0.1:${healthPort}`;
    const ready = async (url: string, container: Container) =>
      eventually(
        `${container.name} to answer ${url} with 200`,
        async () => {
          if ((await get(url)) === 200) return true;
          throw new Error(`not yet; its log:\n${(await container.logs()).slice(-3_000)}`);
        },
        120_000,
      );
    await Promise.all([ready(`${apiUrl}/readyz`, api), ready(`${workerProbes}/readyz`, worker)]);
    assert.equal(await get(`${apiUrl}/livez`), 200);
    assert.equal(await get(`${workerProbes}/livez`), 200);

    const approvalNo = uniqueApprovalNo('IMAGE');
    key = idempotencyKeyFor(approvalNo, 'MAIN');
    const sku = await createSku(prisma!, 10);
    assert.equal((await sendApproval(apiUrl, approval(approvalNo, sku))).status, 202);
    await eventually(`${key} to be SUBMITTED`, async () => {
      const response = await fetch(`${apiUrl}/orders/${encodeURIComponent(key)}`);
      const view = (await response.json()) as { status?: string };
      if (view.status === 'SUBMITTED') return view;
      throw new Error(`GET /orders answered ${response.status} ${JSON.stringify(view)}`);
    });
    const orders = await prisma!.orderMain.findMany({ where: { idempotentKey: key }, include: { lines: true } });
    assert.equal(orders.length, 1);
    assert.deepEqual(
      orders[0]?.lines.map((line) => ({
        sku: line.sku,
        quantity: line.quantity,
        unitPrice: line.unitPrice.toFixed(2),
      })),
      [{ sku, quantity: 2, unitPrice: '10.50' }],
    );
  });

  it('finds the order with orders-cli from the image', async () => {
    const status = await runOnce(IMAGE, serviceEnv, ['orders-cli', 'status', key, '--json']);
    assert.equal(status.code, 0, status.stdout + status.stderr);
    const view = JSON.parse(status.stdout) as { status: string; orderNo?: string };
    const order = await prisma!.orderMain.findUniqueOrThrow({ where: { idempotentKey: key } });
    assert.deepEqual({ status: view.status, orderNo: view.orderNo }, { status: 'SUBMITTED', orderNo: order.orderNo });
  });

  it('on a mysql:// URL: migrates a fresh MariaDB database, and orders-cli finds its schema and key columns right', async () => {
    const mysqlEnv = { ...serviceEnv, DATABASE_URL: await freshMysqlDatabase(MYSQL_TEST_URL, stops) };
    const behind = await runOnce(IMAGE, mysqlEnv, ['orders-cli', 'awaiting', '--json']);
    assert.equal(behind.code, 1, behind.stdout + behind.stderr);
    assert.match(behind.stdout + behind.stderr, /the database schema is behind this build/);
    const migrate = await runOnce(IMAGE, mysqlEnv, ['node', 'dist/app/migrate-main.js']);
    assert.equal(migrate.code, 0, migrate.stdout + migrate.stderr);
    const mysqlMigrations = readdirSync(new URL('../../prisma/mysql/migrations', import.meta.url), {
      withFileTypes: true,
    }).filter((entry) => entry.isDirectory()).length;
    assert.match(migrate.stdout, new RegExp(`applied ${mysqlMigrations} migration\\(s\\)`));
    const awaiting = await runOnce(IMAGE, mysqlEnv, ['orders-cli', 'awaiting', '--json']);
    assert.equal(awaiting.code, 0, awaiting.stdout + awaiting.stderr);
  });

  it('runs the API and the worker as the unprivileged node user', async () => {
    assert.equal((await podman(['image', 'inspect', '--format', '{{.Config.User}}', IMAGE])).stdout.trim(), 'node');
    for (const container of [api, worker]) {
      assert.equal(await container.processUid(), 1000, `${container.name}'s process runs as uid 1000`);
      assert.equal((await podman(['exec', container.name, 'id', '-u'])).stdout.trim(), '1000');
    }
  });

  it('stops both on SIGTERM with exit code 0 within the grace period', async () => {
    const [apiStop, workerStop] = await Promise.all([api.stop(STOP_GRACE_SECONDS), worker.stop(STOP_GRACE_SECONDS)]);
    console.log(`SIGTERM to exit: API ${apiStop.seconds.toFixed(1)} s, worker ${workerStop.seconds.toFixed(1)} s`);
    for (const [container, stop] of [
      [api, apiStop],
      [worker, workerStop],
    ] as const) {
      assert.equal(
        stop.exitCode,
        0,
        `${container.name} exited ${stop.exitCode}:\n${(await container.logs()).slice(-3_000)}`,
      );
      assert.ok(stop.seconds < STOP_GRACE_SECONDS, `${container.name} stopped before podman's kill`);
    }
    assert.match(await worker.logs(), /worker stopped/);
  });
});
