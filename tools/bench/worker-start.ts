// How long a worker process takes from its start to `worker polling`, with the workflow bundle a
// release ships (dist/workflow-bundles) and with the bundling a worker run from source does at
// start. A third variant runs the source on the shipped bundle, so the bundling's own share shows
// apart from tsx compiling the source. Needs `npm run build` first; starts its own stack, or uses
// DATABASE_URL / TEMPORAL_ADDRESS. Prints figures (docs/benchmark.md, "Worker start-up").
//
//   npx tsx tools/bench/worker-start.ts [--rounds 5]
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { workerProcess } from '../harness/service-processes.js';
import { givenServers, startStack } from '../harness/stack.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHIPPED = path.join(ROOT, 'dist', 'workflow-bundles');

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const ROUNDS = Number(values.rounds);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error('usage: npx tsx tools/bench/worker-start.ts [--rounds <starts per variant>]');
  process.exit(2);
}
if (!existsSync(path.join(ROOT, 'dist', 'app', 'worker-main.js')) || !existsSync(path.join(SHIPPED, 'workflows.js'))) {
  console.error('run `npm run build` first: the built worker and its workflow bundle are measured');
  process.exit(2);
}

interface Variant {
  name: string;
  entry: string;
  nodeArgs: string[];
  /** WORKFLOW_BUNDLE_DIR; empty is unset. */
  bundleDir: string;
}

const VARIANTS: Variant[] = [
  { name: 'dist/, the shipped bundle', entry: 'dist/app/worker-main.js', nodeArgs: [], bundleDir: '' },
  { name: 'source (tsx), bundled at start', entry: 'app/worker-main.ts', nodeArgs: ['--import', 'tsx'], bundleDir: '' },
  {
    name: 'source (tsx), the shipped bundle',
    entry: 'app/worker-main.ts',
    nodeArgs: ['--import', 'tsx'],
    bundleDir: SHIPPED,
  },
];

/** Milliseconds from spawning the worker to the time on its `worker polling` line; stops it after. */
async function startOnce(variant: Variant, stack: { databaseUrl: string; temporalAddress: string }): Promise<number> {
  const worker = workerProcess({
    name: variant.name,
    stack,
    entry: variant.entry,
    nodeArgs: variant.nodeArgs,
    env: { NODE_ENV: 'production', LOG_LEVEL: 'info', NODE_OPTIONS: '', WORKFLOW_BUNDLE_DIR: variant.bundleDir },
  });
  const spawnedAt = Date.now();
  await worker.start();
  await worker.kill('SIGTERM');
  const polling = worker
    .output()
    .split('\n')
    .find((line) => line.includes('"worker polling"'));
  const said = polling ? (JSON.parse(polling) as { time?: number; workflows?: string }) : undefined;
  if (!said?.time) throw new Error(`${variant.name}: no timed \`worker polling\` line:\n${worker.output()}`);
  const expected = variant.bundleDir || variant.entry.startsWith('dist/') ? 'prebuilt ' : 'bundled at start';
  if (!said.workflows?.startsWith(expected)) throw new Error(`${variant.name} ran ${said.workflows}`);
  return said.time - spawnedAt;
}

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  return [median, sorted[0], sorted.at(-1)].map((ms) => String(ms).padStart(7)).join('');
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'orders-worker-start-'));
// As root, PostgreSQL runs as its own user, which must reach the data folder.
chmodSync(dataDir, 0o755);
const stack = await startStack({
  dataDir,
  ...givenServers(),
  namespace: 'default',
  headless: true,
});
try {
  const samples = new Map<string, number[]>(VARIANTS.map((variant) => [variant.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Each round in another order, so no variant always starts right after the same one.
    const order = VARIANTS.map((_, index) => VARIANTS[(index + round) % VARIANTS.length]!);
    for (const variant of order) samples.get(variant.name)!.push(await startOnce(variant, stack));
  }
  console.log(
    `worker start → \`worker polling\`, ms (${ROUNDS} starts each; ${os.cpus().length} cores, node ${process.version})`,
  );
  console.log(`${''.padEnd(34)} median    min    max`);
  for (const [name, measured] of samples) console.log(`${name.padEnd(34)}${summary(measured)}`);
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
