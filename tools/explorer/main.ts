// `npm run explore -- --seed N --runs N`: a model-based explorer. fast-check generates sequences of
// deliveries, faults, operator decisions and clock jumps, runs them against a real stack of the
// service (API and worker as processes, PostgreSQL, Temporal) and checks the service's promises
// after every step and once the run's workflows are idle. A broken promise is shrunk to the
// shortest sequence that still breaks it and printed as a story; exit 1. Exit 0 when none broke.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Store } from '../../services/db/stores/store-of-url.js';
import fc from 'fast-check';
import { BROKEN_RULES, type BrokenRule, isBrokenRule } from './broken-rules.js';
import { COMMAND_KINDS, commandArbitraries } from './commands.js';
import { checkAtRest, waitForQuiescence } from './invariants.js';
import { runProgram, type Stack, startStack } from './stack.js';
import { InvariantViolation, type Model, World } from './world.js';

const USAGE = `usage: npm run explore -- [options]

Runs random sequences of deliveries, faults, operator decisions and clock jumps against a stack of
its own, checks the service's promises after every step, and shrinks any broken one to a short story.

options:
  --seed N             fast-check seed (default: random, always printed)
  --runs N             sequences to try (default 10)
  --max-commands N     longest sequence (default 8)
  --without K1,K2      leave these command kinds out
  --only K1,K2         run only these command kinds
                       (kinds: ${Object.keys(COMMAND_KINDS).join(', ')})
  --invariant TEXT     pursue only broken promises whose name contains TEXT; others are
                       reported as seen, and the search goes on
  --shrink-seconds N   time allowed for shrinking once something broke (default 300)
  --store STORE        the order store: postgres (default) or mysql (a database of its own on the
                       MySQL/MariaDB at MYSQL_TEST_URL, default mysql://root@127.0.0.1:3306)
  --broken-rule RULE   start the service with a rule broken on purpose (${Object.keys(BROKEN_RULES).join(', ')})
  --out FILE           also write the result as JSON
  --then               the options after it are another exploration, run after this one on the
                       same stack (the API, worker or CLI started again when its broken rule differs)
  -h, --help           this help

exit codes: 0 no promise broken, 1 a promise broken (or the stack failed), 2 usage error`;

interface Options {
  seed: number;
  runs: number;
  maxCommands: number;
  without: Set<string>;
  shrinkSeconds: number;
  invariant: string | undefined;
  brokenRule: BrokenRule | undefined;
  store: Store;
  out: string | undefined;
}

function parseOptions(argv: string[]): Options | 'help' {
  const { values, positionals } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: true,
    options: {
      seed: { type: 'string' },
      runs: { type: 'string' },
      'max-commands': { type: 'string' },
      without: { type: 'string' },
      only: { type: 'string' },
      invariant: { type: 'string' },
      'shrink-seconds': { type: 'string' },
      'broken-rule': { type: 'string' },
      store: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  if (positionals.length > 0) throw new Error(`unexpected argument: ${positionals[0]}`);
  const integer = (name: string, raw: string | undefined, fallback: number, min: number, max: number) => {
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^-?\d+$/.test(raw) || value < min || value > max)
      throw new Error(`--${name} must be an integer ${min}..${max}`);
    return value;
  };
  const kinds = (option: 'without' | 'only') => {
    const listed = new Set((values[option] ?? '').split(',').filter(Boolean));
    for (const kind of listed) {
      if (!(kind in COMMAND_KINDS)) throw new Error(`--${option}: unknown command kind ${kind}`);
    }
    return listed;
  };
  if (values.without !== undefined && values.only !== undefined) throw new Error('give --without or --only, not both');
  const only = kinds('only');
  const without =
    only.size > 0 ? new Set(Object.keys(COMMAND_KINDS).filter((kind) => !only.has(kind))) : kinds('without');
  const brokenRule = values['broken-rule'];
  if (brokenRule !== undefined && !isBrokenRule(brokenRule)) {
    throw new Error(`--broken-rule must be one of ${Object.keys(BROKEN_RULES).join(', ')}`);
  }
  if (values.store !== undefined && values.store !== 'postgres' && values.store !== 'mysql') {
    throw new Error('--store must be postgres or mysql');
  }
  return {
    store: values.store === 'mysql' ? 'mysql' : 'postgresql',
    seed: integer('seed', values.seed, Math.floor(Math.random() * 2 ** 31), 0, 2 ** 31 - 1),
    runs: integer('runs', values.runs, 10, 1, 100_000),
    maxCommands: integer('max-commands', values['max-commands'], 8, 1, 100),
    without,
    shrinkSeconds: integer('shrink-seconds', values['shrink-seconds'], 300, 0, 86_400),
    invariant: values.invariant,
    brokenRule,
    out: values.out,
  };
}

const log = (line: string) => console.log(`[explore ${new Date().toISOString().slice(11, 19)}] ${line}`);

interface Failure {
  invariant: string;
  detail: string;
  steps: string[];
  prefix: string;
}

/** What one exploration found, as `--out` writes it. */
interface ExplorationResult {
  seed: number;
  runs: number;
  brokenRule: BrokenRule | null;
  executions: number;
  shrinks: number;
  seconds: number;
  failed: boolean;
  failure: Failure | null;
  alsoSeen: Failure[];
  counts: Record<string, number>;
}

/** The explorations one invocation asks for: `--then` starts the next one's options. */
function explorationArgs(argv: string[]): string[][] {
  const explorations: string[][] = [[]];
  for (const arg of argv) {
    if (arg === '--then') explorations.push([]);
    else explorations.at(-1)?.push(arg);
  }
  return explorations;
}

async function main(argv: string[]): Promise<number> {
  const segments = explorationArgs(argv);
  let explorations: Options[];
  try {
    if (segments.length > 1 && segments.some((segment) => segment.length === 0)) {
      throw new Error('--then must stand between two explorations’ options');
    }
    const parsed = segments.map(parseOptions);
    if (parsed.includes('help')) {
      console.log(USAGE);
      return 0;
    }
    explorations = parsed as Options[];
    if (new Set(explorations.map((options) => options.store)).size > 1) {
      throw new Error('--store must be the same for every exploration of one invocation');
    }
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const [first] = explorations as [Options, ...Options[]];
  const out = explorations.findLast((options) => options.out !== undefined)?.out;
  const started = Date.now();
  const stack = await startStack({
    ...(first.brokenRule ? { brokenRule: first.brokenRule } : {}),
    store: first.store,
    log,
  });
  try {
    log(`stack ready in ${Math.round((Date.now() - started) / 1000)} s`);
    const results: ExplorationResult[] = [];
    for (const [index, options] of explorations.entries()) {
      if (index > 0) {
        console.log('');
        // An API started again knows no session of the one before.
        await World.closeMcp(stack);
        await stack.useBrokenRule(options.brokenRule);
      }
      // Each exploration's approvals are its own, also when two share a seed.
      const tag = explorations.length > 1 ? `${index + 1}-` : '';
      results.push(await explore(stack, options, tag, segments[index] ?? []));
    }
    if (out) {
      writeFileSync(
        out,
        JSON.stringify({ failed: results.some((result) => result.failed), explorations: results }, null, 2) + '\n',
      );
    }
    return results.some((result) => result.failed) ? 1 : 0;
  } finally {
    await World.closeMcp(stack);
    await stack.stop();
  }
}

/** Runs one exploration on the stack and prints what it found. */
async function explore(stack: Stack, options: Options, tag: string, argv: string[]): Promise<ExplorationResult> {
  const { seed, runs, maxCommands, without, shrinkSeconds, brokenRule, invariant } = options;
  const started = Date.now();
  log(
    `seed ${seed}, ${runs} run(s) of up to ${maxCommands} command(s)${brokenRule ? `, BROKEN RULE: ${brokenRule}` : ''}`,
  );
  const cliCommands = await availableCliCommands(stack);
  const counts = new Map<string, number>();
  // One delivery first, so the API holds its connection to Temporal before any fault is staged
  // on it (a lost answer must be a start's, not the connection's first handshake).
  await new World(stack, `WARM${seed}-${tag}`, new Map(), cliCommands).deliver({ keys: new Map() }, 0, {
    kind: 'right',
  });
  const arbitraries = commandArbitraries(without, cliCommands);
  if (arbitraries.length === 0) throw new Error('--without left no command to run');

  let executions = 0;
  let lastFailure: Failure | undefined;
  const alsoSeen = new Map<string, Failure>();
  let shrinkDeadline = Infinity;
  const property = fc.asyncProperty(fc.commands(arbitraries, { maxCommands, size: 'max' }), async (commands) => {
    // Past the shrinking budget every candidate "passes": the smallest failure so far stands.
    if (Date.now() > shrinkDeadline) return;
    executions += 1;
    const world = new World(stack, `EX${seed}-${tag}${executions}-`, counts, cliCommands);
    const model: Model = { keys: new Map() };
    try {
      await fc.asyncModelRun(() => ({ model, real: world }), commands);
      await waitForQuiescence(world, 60_000);
      world.steps.push('(quiescence: the run’s workflows are idle)');
      await checkAtRest(model, world);
      const rows = await stack.orders.idempotencyRecord.findMany({
        where: { approvalNo: { startsWith: world.prefix } },
        select: { idempotentKey: true, status: true },
      });
      world.trace(`at rest: ${rows.map((row) => `${row.idempotentKey} ${row.status}`).join(', ')}`);
    } catch (error) {
      const violation = error instanceof InvariantViolation;
      const failure: Failure = {
        invariant: violation ? error.invariant : 'the explorer itself failed',
        detail: violation ? error.message.slice(error.invariant.length + 2) : String(error),
        steps: [...world.steps],
        prefix: world.prefix,
      };
      if (invariant !== undefined && violation && !failure.invariant.includes(invariant)) {
        if (!alsoSeen.has(failure.invariant)) {
          log(`run ${executions} broke "${failure.invariant}" (not pursued): ${failure.detail}`);
          alsoSeen.set(failure.invariant, failure);
        }
        return;
      }
      lastFailure = failure;
      if (shrinkDeadline === Infinity) {
        shrinkDeadline = Date.now() + shrinkSeconds * 1000;
        log(`run ${executions} broke "${failure.invariant}": ${failure.detail}`);
        log(`shrinking (up to ${shrinkSeconds} s)`);
      }
      throw error;
    }
    if (executions % 5 === 0) log(`${executions} run(s) done`);
  });
  const details = await fc.check(property, { seed, numRuns: runs });
  const seconds = Math.round((Date.now() - started) / 1000);

  console.log('');
  console.log(`seed: ${seed}`);
  console.log(
    `runs: ${details.numRuns} generated, ${executions} executed (shrinks: ${details.numShrinks}), ${seconds} s`,
  );
  console.log('command kinds fired:');
  for (const [kind, count] of [...counts].sort(([a], [b]) => a.localeCompare(b))) {
    console.log(`  ${String(count).padStart(5)}  ${kind}`);
  }
  for (const [name, seen] of alsoSeen) {
    console.log(`also broken, not pursued: ${name} — ${seen.detail}`);
    seen.steps.forEach((step, index) => console.log(`    ${index + 1}. ${step}`));
  }
  const failure = details.failed ? lastFailure : undefined;
  if (failure) {
    console.log('');
    console.log(`BROKEN PROMISE: ${failure.invariant}`);
    console.log(`  ${failure.detail}`);
    console.log(
      `shrunk sequence (${failure.steps.filter((step) => !step.startsWith('(')).length} command(s), approvals ${failure.prefix}*):`,
    );
    failure.steps.forEach((step, index) => console.log(`  ${index + 1}. ${step}`));
    console.log(
      `replay: npm run explore -- ${argv.some((arg) => arg.startsWith('--seed')) ? '' : `--seed ${seed} `}${argv.join(' ')}`,
    );
  } else if (details.failed) {
    console.log(`FAILED without a recorded failure: ${String(details.errorInstance)}`);
  } else {
    console.log('RESULT: no promise broken');
  }
  return {
    seed,
    runs,
    brokenRule: brokenRule ?? null,
    executions,
    shrinks: details.numShrinks,
    seconds,
    failed: details.failed,
    failure: failure ?? null,
    alsoSeen: [...alsoSeen.values()],
    counts: Object.fromEntries(counts),
  };
}

/** The commands this version of `orders-cli` has (redeliver and mark-handled may be missing). */
async function availableCliCommands(stack: Stack): Promise<Set<string>> {
  const help = await runProgram(process.execPath, [...stack.cliArgs, '--help'], stack.cliEnv);
  return new Set([...help.stdout.matchAll(/^ {2}([a-z-]+) {2}/gm)].map((match) => match[1] as string));
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
