// `npm test`: every test file under node's own runner, against a real Temporal dev server and a
// real PostgreSQL that this script starts once for the whole run (node --test has no global setup),
// with lint, formatting and types checked beside them. DATABASE_URL / TEMPORAL_ADDRESS point it at
// other servers instead.
//
// Files run side by side (`--concurrency N`, 4 by default; 1 runs them one after another), each
// then in a database of its own copied from the migrated template
// (tools/scripts/test-own-database.mjs) and on task queues of its own. The few files with stacks
// of their own — they start a Temporal and a PostgreSQL of their own and kill parts of them, or put
// a gateway's timeouts in front of instances slowed on purpose — run two at a time in a lane of
// their own, beside the others. A DATABASE_URL of the caller's own runs every file one after
// another in that one database. Debian packages some files need are installed beside the start;
// those files wait for them.
import { type ChildProcessByStdio, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Readable } from 'node:stream';
import pg from 'pg';
import { startStack } from '../harness/stack.js';
import { UNIT_FILES_OF_THEIR_OWN } from './unit-own-process.js';
import { CONTAINER_PACKAGES, missingContainerTools } from '../harness/container-tools.js';
import { writeWorkflowBundles } from '../../worker/workflow-bundle.js';
import { builtTestFile, TEST_BUILD_ENV, writeTestBuild } from '../harness/test-build.js';
import { redactUrl } from '../../domain-node/redact-url.js';
import { withoutTemporalCredentials } from '../../services/temporal/settings.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'skip-checks': { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '4' },
  },
});

/**
 * Files with stacks of their own, and the release build: two at a time, in this order. The chaos
 * run and the explorer mostly wait (on their faults' pauses, their decision windows and their
 * stacks' starts), and they start first: the chaos run waits longest when its worker is killed
 * while it posts a receipt (the attempt is taken up again when its 5-minute start-to-close has
 * passed), and that wait then runs beside the other files instead of after them. The build starts
 * when the first of the two ends, the gateway when the second does: a minute or more later as a
 * rule, which keeps the build's minute of both cores away from the gateway's read timeouts.
 */
const OWN_STACKS = [
  // Starts a Temporal and a PostgreSQL of its own and kills and restarts them.
  'test/chaos/fault-proof.test.ts',
  // Starts a stack of its own and times its faults against it.
  'test/chaos/explorer.test.ts',
  // Builds, packs and installs the release before its first test: a minute of both cores.
  'test/integration/production-install.test.ts',
  // nginx's read timeouts in front of instances that are slow or killed on purpose.
  'test/integration/gateway.test.ts',
];
const OWN_STACKS_AT_ONCE = 2;

/** Every file of test/unit, imported into one process (tools/scripts/unit-files.ts). */
const UNIT_FILES = 'tools/scripts/unit-files.ts';

/**
 * The longest of the other files start first, so that none of them begins last and keeps the
 * run going alone at its end (measured: the time table at the end of every run).
 */
const LONGEST_FIRST = [
  // 20 writes one after another on a pool of two, each holding its connection for 2.5 s.
  'test/integration/bounded-writes.test.ts',
  'test/integration/mcp.test.ts',
  'test/integration/temporal-tls.test.ts',
  'test/integration/delivery.test.ts',
  UNIT_FILES,
  'test/integration/mcp-inspector.test.ts',
  'test/integration/broker-consumer.test.ts',
  'test/integration/api-hosts-worker.test.ts',
  'test/integration/scale-out.test.ts',
  'test/integration/dingtalk-stream.test.ts',
  'test/integration/mcp-revisions.test.ts',
  'test/integration/operator-cli.test.ts',
  'test/integration/prometheus-rules.test.ts',
  'test/integration/broker-chain.test.ts',
  'test/integration/health-probes.test.ts',
  'test/integration/oa-vendors.test.ts',
  'test/integration/start-path.test.ts',
  'test/integration/load-shedding.test.ts',
  'test/integration/worker-versioning.test.ts',
  'test/integration/mysql-store.test.ts',
  'test/integration/broker-delivery.test.ts',
  'test/integration/local-write.test.ts',
  'test/integration/key-sources.test.ts',
  'test/integration/feishu-long-connection.test.ts',
  'test/integration/no-secret-leaks.test.ts',
  'test/integration/transaction-pooler.test.ts',
  'test/integration/webhook-wait.test.ts',
  'test/integration/entry-points.test.ts',
];

const byLength = (a: string, b: string) => rank(a) - rank(b);
const rank = (file: string) => {
  const index = LONGEST_FIRST.indexOf(file);
  return index === -1 ? LONGEST_FIRST.length : index;
};

const TEMPLATE_DATABASE = 'orders_template';

/** `npm run test:image`: builds the Dockerfile and runs what it built. */
const IMAGE_TEST = 'test/image/image.test.ts';

/** Debian packages some test files need from the machine, and the files that need them. */
const MACHINE_PACKAGES = [
  {
    packages: ['nginx'],
    recommends: false,
    files: ['test/integration/gateway.test.ts'],
    present: () => ['nginx', '/usr/sbin/nginx'].some((bin) => spawnSync(bin, ['-v'], { stdio: 'ignore' }).status === 0),
  },
  {
    // promtool checks the alert rules and runs their unit tests.
    packages: ['prometheus'],
    recommends: false,
    files: ['test/integration/prometheus-rules.test.ts'],
    present: () => spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0,
  },
  {
    // A transaction-mode pooler in front of the application role's PostgreSQL.
    packages: ['pgbouncer'],
    recommends: false,
    files: ['test/integration/transaction-pooler.test.ts'],
    present: () =>
      ['pgbouncer', '/usr/sbin/pgbouncer'].some(
        (bin) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0,
      ),
  },
  {
    packages: CONTAINER_PACKAGES,
    recommends: true,
    files: [IMAGE_TEST],
    present: () => missingContainerTools().length === 0,
  },
];

/** The Debian packages the chosen files need and the machine lacks, and the files that need them. */
interface MissingPackages {
  names: string;
  files: string[];
  /** The install under way; settles with `ok`, or with what went wrong. */
  installing: Promise<string>;
}

/**
 * Starts installing what the chosen files need from Debian when it is missing and this runs as
 * root (or sudo needs no password), beside the rest of the run's start: the files that need the
 * packages wait for it (tools/scripts/machine-packages-gate.mjs), the others do not. Where it
 * cannot install, says the one command that would, before any test runs, and answers `false`: a
 * newcomer never sees a test fail for a package nobody tried to install; one whose install
 * failed fails its files with apt's words.
 */
function installMachinePackages(files: string[]): MissingPackages | undefined | false {
  const missing = MACHINE_PACKAGES.filter((pkg) => pkg.files.some((file) => files.includes(file)) && !pkg.present());
  if (missing.length === 0) return undefined;
  const names = missing.flatMap((pkg) => pkg.packages).join(', ');
  // One install for the packages without their recommendations, one for those with them.
  const installs = [false, true]
    .map((recommends) => missing.filter((pkg) => pkg.recommends === recommends))
    .filter((group) => group.length > 0)
    .map((group) => [
      ...(group[0]?.recommends ? [] : ['--no-install-recommends']),
      ...group.flatMap((pkg) => pkg.packages),
    ]);
  const install = ['apt-get update', ...installs.map((args) => `apt-get install -y ${args.join(' ')}`)].join(' && ');
  const asRoot =
    process.getuid?.() === 0
      ? []
      : spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0
        ? ['sudo', '-n']
        : undefined;
  if (!asRoot) {
    console.error(`\nthe tests chosen need ${names} from Debian; install it first:\n  sudo sh -c '${install}'`);
    return false;
  }
  console.log(`\n== installing ${names} from Debian, beside the start, for the tests that need it`);
  // sudo resets the environment: the frontend is passed through `env`.
  const [command = 'apt-get', ...prefix] = [
    ...asRoot,
    ...(asRoot.length > 0 ? ['env', 'DEBIAN_FRONTEND=noninteractive'] : []),
    'apt-get',
  ];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const started = Date.now();
  const installing = (async () => {
    for (const args of [['update', '-qq'], ...installs.map((each) => ['install', '-y', '-qq', ...each])]) {
      const { code, output } = await runQuietly(command, [...prefix, ...args], env);
      if (code !== 0) return `\`${[command, ...prefix, ...args].join(' ')}\` exited ${code}:\n${output}`;
    }
    console.log(`\n== ${names} from Debian: installed in ${Math.round((Date.now() - started) / 1000)} s`);
    return 'ok';
  })();
  return { names, files: missing.flatMap((pkg) => pkg.files.filter((file) => files.includes(file))), installing };
}

const CHECKS = [
  // `npm run typecheck` and `npm run lint` on one TypeScript program (tools/scripts/lint-and-typecheck.mjs).
  { name: 'types and lint', command: process.execPath, args: ['tools/scripts/lint-and-typecheck.mjs'] },
  { name: 'format', command: 'npx', args: ['prettier', '--check', '.'] },
];

async function runChecks(): Promise<{ name: string; code: number; output: string; seconds: number }[]> {
  const results = [];
  for (const { name, command, args } of CHECKS) {
    const started = Date.now();
    const { code, output } = await runQuietly(command, args);
    results.push({ name, code, output, seconds: Math.round((Date.now() - started) / 1000) });
  }
  return results;
}

/** Runs a command with its output kept, not shown: for work done beside the tests. */
function runQuietly(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

/**
 * The files named, or the whole suite: every folder of test/ but test/image, which builds the
 * container image and is run on its own (`npm run test:image`, once per CI run). The whole suite
 * runs the unit files in one process (UNIT_FILES): they share most of the modules they load.
 */
function testFiles(): string[] {
  if (positionals.length > 0) return positionals;
  return [
    UNIT_FILES,
    ...UNIT_FILES_OF_THEIR_OWN,
    ...['test/replay', 'test/integration', 'test/chaos'].flatMap((dir) =>
      readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
        .filter((name) => name.endsWith('.test.ts'))
        .sort()
        .map((name) => path.join(dir, name)),
    ),
  ];
}

/** The closing figures of one lane's run, as its spec reporter prints them. */
type Summary = Map<string, number>;
const SUMMARY_LINE = /^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ([\d.]+)$/;

/**
 * Runs node's test runner over `files`, in their order (tools/scripts/test-lane.mjs), and returns its summary. `live`: its output passed through as it
 * comes; otherwise kept and returned whole, so two runs at once never mix their lines.
 */
function nodeTest(
  files: string[],
  concurrency: number,
  env: NodeJS.ProcessEnv,
  timesFile: string,
  live: boolean,
  /** The run's build: the files run as its JavaScript under plain node; none, as TypeScript under tsx. */
  build?: string,
) {
  const args = [
    ...(build ? ['--enable-source-maps'] : ['--import', 'tsx']),
    ...(env.TEST_DATABASE_TEMPLATE ? ['--import', './tools/scripts/test-own-database.mjs'] : []),
    '--import',
    './tools/scripts/test-file-cpu.mjs',
    '--import',
    './tools/scripts/test-file-watchdog.mjs',
    ...(env.MACHINE_PACKAGES_GATE ? ['--import', './tools/scripts/machine-packages-gate.mjs'] : []),
    'tools/scripts/test-lane.mjs',
    '--concurrency',
    String(concurrency),
    '--times',
    timesFile,
    ...(build ? files.map((file) => builtTestFile(build, file)) : files),
  ];
  return new Promise<{ code: number; summary: Summary; output: string }>((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env,
      stdio: ['inherit', 'pipe', live ? 'inherit' : 'pipe'],
    }) as ChildProcessByStdio<null, Readable, Readable | null>;
    const summary: Summary = new Map();
    let pending = '';
    let output = '';
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stdout.on('data', (chunk: Buffer) => {
      if (live) process.stdout.write(chunk);
      else output += chunk.toString('utf8');
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const match = SUMMARY_LINE.exec(line.trim());
        if (match) summary.set(match[1] as string, Number(match[2]));
      }
    });
    // 'close', not 'exit': the summary is the last output, and it may still be in the pipe at exit.
    child.once('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), summary, output }));
  });
}

/** A copy of the migrated database that every file's own database is made from. */
async function makeTemplate(databaseUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${TEMPLATE_DATABASE}"`);
    await admin.query(`CREATE DATABASE "${TEMPLATE_DATABASE}" TEMPLATE "${new URL(databaseUrl).pathname.slice(1)}"`);
  } finally {
    await admin.end();
  }
}

type Ticks = { busy: number; idle: number };

/** The CPU time of every core so far, busy and idle, in the kernel's ticks. */
function cpuTicks(): Ticks {
  return os.cpus().reduce(
    (sum, { times }) => ({
      busy: sum.busy + times.user + times.nice + times.sys + times.irq,
      idle: sum.idle + times.idle,
    }),
    { busy: 0, idle: 0 },
  );
}

const busyShare = (from: Ticks, to: Ticks) => (to.busy - from.busy) / (to.busy - from.busy + to.idle - from.idle || 1);

/** Seconds between two of the machine's samples: the stretches where the cores idled show. */
const SAMPLE_SECONDS = 30;

/** Samples the cores' ticks every SAMPLE_SECONDS until stopped, which answers every sample. */
function sampleMachine(): () => Ticks[] {
  const samples = [cpuTicks()];
  const timer = setInterval(() => samples.push(cpuTicks()), SAMPLE_SECONDS * 1_000);
  timer.unref();
  return () => {
    clearInterval(timer);
    return [...samples, cpuTicks()];
  };
}

/**
 * How busy the machine's cores were over the run, and in each stretch of it: near 100 % the suite
 * is bound by CPU, and more files at once would not end it sooner; a stretch well below is one
 * where the files running mostly wait, and another file could have run.
 */
function printMachineLoad(samples: Ticks[], wallSeconds: number): void {
  const from = samples[0] as Ticks;
  const to = samples.at(-1) as Ticks;
  console.log(
    `\n== the machine: ${os.cpus().length} cores, busy ${(busyShare(from, to) * 100).toFixed(0)} % of the ${wallSeconds} s the tests ran (${Math.round((to.busy - from.busy) / 1000)} CPU-s)`,
  );
  const stretches = samples.slice(1).map((sample, index) => busyShare(samples[index] as Ticks, sample));
  console.log(
    `   busy in each ${SAMPLE_SECONDS} s, %: ${stretches.map((share) => (share * 100).toFixed(0)).join(' ')}`,
  );
}

function readJson<T>(files: string[]): [string, T][] {
  return files.flatMap((file) => {
    try {
      return Object.entries(JSON.parse(readFileSync(file, 'utf8')) as Record<string, T>);
    } catch {
      return [];
    }
  });
}

/**
 * Each file's time, CPU, life and end, longest first. The CPU is its own process's and its
 * children's; the shared Temporal dev server and PostgreSQL are the rest of the machine's busy time
 * (printed after). Its life is its process's, start to exit: well past its tests' time, something
 * (a timer, a handle) held the process open and its place in the lane with it. The end is seconds
 * after the tests began: the last files to end hold the run's end.
 */
function printFileTimes(timesFiles: string[], processDir: string, testsStarted: number): void {
  const times = readJson<{ seconds: number; endedAt: number }>(timesFiles).sort((a, b) => b[1].seconds - a[1].seconds);
  const processes = new Map(
    readJson<{ cpu: number; lived: number }>(readdirSync(processDir).map((name) => path.join(processDir, name))),
  );
  console.log(
    "\n== each test file: its time (s, its tests one after another), its CPU (s), its process's life (s), when it ended (s)",
  );
  const column = (value: number | undefined, digits: number, width: number) =>
    value === undefined ? ' '.repeat(width) : value.toFixed(digits).padStart(width);
  const line = (seconds: number | undefined, file: string, ended?: number) => {
    const own = processes.get(file);
    return `${column(seconds, 1, 7)}  ${column(own?.cpu, 0, 5)}  ${column(own?.lived, 0, 5)}  ${column(ended, 0, 5)}  ${file}`;
  };
  for (const [file, { seconds, endedAt }] of times) console.log(line(seconds, file, (endedAt - testsStarted) / 1000));
  // A file whose tests are declared in a helper is timed under the helper's name.
  const timed = new Set(times.map(([file]) => file));
  for (const file of processes.keys()) if (!timed.has(file)) console.log(line(undefined, file));
  const total = [...processes.values()].reduce((sum, { cpu }) => sum + cpu, 0);
  console.log(`         ${total.toFixed(0).padStart(5)}  CPU of every file's processes`);
}

/**
 * The CPU the runner's own children spent so far (the Temporal dev server and PostgreSQL it
 * started, by their command's name), from the kernel's table; empty where there is none.
 */
function stackCpu(): Map<string, number> {
  const byName = new Map<string, number>();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return byName;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== process.pid) continue;
      const ticks = fields.slice(11, 15).reduce((sum, value) => sum + Number(value), 0);
      byName.set(name, (byName.get(name) ?? 0) + ticks / 100);
    } catch {
      // Ended meanwhile.
    }
  }
  return byName;
}

async function main(): Promise<number> {
  const packages = installMachinePackages(testFiles());
  if (packages === false) return 1;
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    console.error('--concurrency must be a whole number of files, at least 1');
    return 2;
  }

  // Lint, formatting and types are checked beside the tests, one after another on one core, and
  // fail the run at its end; `npm run lint` and `npm run typecheck` give the same answers alone.
  const checks = values['skip-checks'] ? Promise.resolve([]) : runChecks();
  console.log('\n== starting Temporal dev server and PostgreSQL for the test run');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'orders-test-'));
  // As root, PostgreSQL runs as its own user, which must reach the data folder.
  chmodSync(dataDir, 0o755);
  const started = Date.now();
  const ownDatabase = process.env.DATABASE_URL;
  // The workflow code is bundled once for the run, beside the stack's start, and every worker of
  // every file (in-process or child) loads that bundle instead of making its own.
  const bundleDir = path.join(dataDir, 'workflow-bundles');
  // The service's processes the files start run its sources transpiled once here, under plain node.
  const buildDir = path.join(dataDir, 'build');
  // Settled, not raced: when one of the two fails, the other is still waited for, and a stack that
  // did start is stopped rather than left running after the runner exits.
  const [startedStack, bundled, built] = await Promise.allSettled([
    startStack({
      dataDir,
      ...(ownDatabase ? { databaseUrl: ownDatabase } : {}),
      ...(process.env.TEMPORAL_ADDRESS ? { temporalAddress: process.env.TEMPORAL_ADDRESS } : {}),
      namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
      headless: true,
      persistTemporal: false,
      // Files side by side, each with its pools, workers and child processes.
      maxDatabaseConnections: 400,
      // An idle poll answered after a minute, as in production. On the dev server's seconds, every
      // idle worker of every file cost the server about four times the CPU (measured: 6 idle
      // workers, 3.1 s of the server's CPU a minute against 1.1 s, and 0.5 s with none). The
      // rollout test, which needs the seconds, starts a Temporal of its own.
      temporalServerDefaults: true,
    }),
    writeWorkflowBundles(bundleDir),
    writeTestBuild(buildDir),
  ]);
  const failed = [startedStack, bundled, built].find((step) => step.status === 'rejected');
  if (startedStack.status === 'rejected' || failed) {
    if (startedStack.status === 'fulfilled') await startedStack.value.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw (failed as PromiseRejectedResult).reason;
  }
  const stack = startedStack.value;
  console.log(
    // A DATABASE_URL of the caller's own is shown without its password (CI logs are widely read).
    `   ready in ${Date.now() - started} ms: PostgreSQL ${ownDatabase ? redactUrl(stack.databaseUrl) : stack.databaseUrl}, Temporal ${stack.temporalAddress}`,
  );

  const timesDir = mkdtempSync(path.join(os.tmpdir(), 'orders-test-times-'));
  const cpuDir = mkdtempSync(path.join(os.tmpdir(), 'orders-test-cpu-'));
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      // The run's own dev server is plaintext: a profile, TLS settings or an API key in the shell
      // (for the temporal CLI's clusters) would send the tests' processes elsewhere.
      ...(process.env.TEMPORAL_ADDRESS ? {} : withoutTemporalCredentials(process.env)),
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      WORKFLOW_BUNDLE_DIR: bundleDir,
      [TEST_BUILD_ENV]: buildDir,
      LOG_LEVEL: 'warn',
      TEST_CPU_DIR: cpuDir,
    };
    if (packages) {
      // The install's outcome, written whole when it ends (a rename), for the files that wait on it.
      const outcome = path.join(timesDir, 'machine-packages');
      env.MACHINE_PACKAGES_GATE = JSON.stringify({ files: packages.files, outcome });
      void packages.installing.then((said) => {
        try {
          writeFileSync(`${outcome}.tmp`, said);
          renameSync(`${outcome}.tmp`, outcome);
        } catch (error) {
          // The files waiting on it are stopped by their fuse (TEST_FILE_LIMIT_S) and the run fails.
          console.error(`the install's outcome could not be written for the files waiting on it: ${String(error)}`);
        }
      });
    }
    const sideBySide = ownDatabase ? 1 : concurrency;
    if (sideBySide > 1) {
      await makeTemplate(stack.databaseUrl);
      env.TEST_DATABASE_TEMPLATE = TEMPLATE_DATABASE;
    }
    const files = testFiles();
    const ownStacks = OWN_STACKS.filter((file) => files.includes(file));
    const others = files.filter((file) => !ownStacks.includes(file)).sort(byLength);
    // Two at a time, the files with stacks of their own run beside the others (which then get the
    // rest of the concurrency, or all of it when there are none); with a concurrency of 1
    // everything runs one file after another.
    const othersAtOnce = ownStacks.length > 0 ? sideBySide - 1 : sideBySide;
    // The unit files run under tsx, one at a time (the whole suite's in one process): some read
    // the checkout's folders as they are, where the build has a `.js` beside every `.ts`. So does
    // the image test, which installs into the checkout's own folders (npm ci --prefix
    // .ci/node24). Every other file runs from the build.
    const underTsx = (file: string) =>
      file === UNIT_FILES || file.startsWith('test/unit/') || file.startsWith('test/image/');
    const built = others.filter((file) => !underTsx(file));
    const lanes: { name: string; files: string[]; concurrency: number; live: boolean; build?: string }[] =
      sideBySide > 1
        ? [
            {
              name: `the files with stacks of their own and the release build, ${OWN_STACKS_AT_ONCE} at a time`,
              files: ownStacks,
              concurrency: OWN_STACKS_AT_ONCE,
              live: false,
            },
            {
              name: `the other files, ${othersAtOnce} at a time, from the run's build`,
              files: built,
              concurrency: othersAtOnce,
              live: true,
              build: buildDir,
            },
            {
              name: 'the unit files, under tsx',
              files: others.filter(underTsx),
              concurrency: 1,
              live: false,
            },
          ]
        : [{ name: 'every file, one at a time', files: [...ownStacks, ...others], concurrency: 1, live: true }];
    const testsStarted = Date.now();
    const machineSamples = sampleMachine();
    const running = lanes
      .filter((lane) => lane.files.length > 0)
      .map((lane, index) => {
        const timesFile = path.join(timesDir, `lane-${index}.json`);
        console.log(`\n== tests: ${lane.name}`);
        const result = nodeTest(lane.files, lane.concurrency, env, timesFile, lane.live, lane.build).then((ended) => ({
          ...ended,
          seconds: Math.round((Date.now() - testsStarted) / 1000),
        }));
        return { lane, timesFile, result };
      });
    const total: Summary = new Map();
    const laneTimes: string[] = [];
    let code = 0;
    const installed = await packages?.installing;
    if (installed !== undefined && installed !== 'ok') {
      console.log(`\n== installing ${packages?.names} from Debian FAILED\n${installed}`);
      code = 1;
    }
    for (const { lane, result } of running) {
      const { code: laneCode, summary, output, seconds } = await result;
      if (!lane.live) process.stdout.write(`\n== tests: ${lane.name}\n${output}`);
      laneTimes.push(`${seconds} s: ${lane.name}`);
      if (laneCode !== 0) code = laneCode;
      for (const [name, value] of summary) total.set(name, (total.get(name) ?? 0) + value);
    }
    const samples = machineSamples();
    const testsSeconds = Math.round((Date.now() - testsStarted) / 1000);
    const timesFiles = running.map(({ timesFile }) => timesFile);
    for (const check of await checks) {
      console.log(`\n== ${check.name}: ${check.code === 0 ? 'ok' : 'FAILED'} (${check.seconds} s)`);
      if (check.code !== 0) {
        process.stdout.write(check.output);
        code = check.code;
      }
    }
    printFileTimes(timesFiles, cpuDir, testsStarted);
    const shared = [...stackCpu()].filter(([name]) => name !== 'node' && name !== 'npm');
    if (shared.length > 0) {
      console.log(
        `\n== the shared stack's CPU: ${shared.map(([name, used]) => `${name} ${used.toFixed(0)} s`).join(', ')}`,
      );
    }
    if (running.length > 1) console.log(`\n== each lane ended after\n${laneTimes.join('\n')}`);
    printMachineLoad(samples, testsSeconds);
    if (running.length > 1) {
      // The closing summary covers every lane, in the spec reporter's own form.
      console.log('\n== all tests');
      for (const [name, value] of total) {
        console.log(`ℹ ${name} ${name === 'duration_ms' ? value.toFixed(3) : value}`);
      }
    }
    return code;
  } finally {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(timesDir, { recursive: true, force: true });
    rmSync(cpuDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
