// The model-based explorer (tools/explorer) against a stack of its own: a short seeded exploration
// must break no promise, and the explorer must be able to fail — with a rule broken on purpose it
// has to find the broken promise and shrink it to a short story. Each test starts a stack of its
// own (most of its time); the runs here are sized for the suite's budget, and `npm run explore`
// runs the long search (`npm run explore -- --seed 2026 --runs 100`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runToolForResult } from '../../tools/harness/tool-result.js';

interface ExplorerResult {
  failed: boolean;
  executions: number;
  failure: { invariant: string; detail: string; steps: string[] } | null;
  counts: Record<string, number>;
}

function explore(args: string[]) {
  return runToolForResult<ExplorerResult>('tools/explorer/main.ts', args);
}

const commandsOf = (steps: string[]) => steps.filter((step) => !step.startsWith('('));

describe('the model-based explorer', () => {
  it(
    'BOUNDED EXPLORATION: a short seeded exploration of deliveries, faults, operators and clocks breaks no promise',
    // About 50 s alone, a third of it the stack's start; after the first runs each costs 2 s, and
    // fewer leave command kinds unfired (14 runs fire 13 kinds, 6 fire 9). The bound is for a loaded machine.
    { timeout: 420_000 },
    async () => {
      const { code, result, output } = await explore([
        '--seed',
        '20261130',
        '--runs',
        '14',
        '--max-commands',
        '6',
        // Each of these waits out a timeout of the product's (the decision window; a receipt's
        // request and its retry, 20 s): `npm run explore` runs them.
        '--without',
        'window-passes,receipt-answer-lost',
        '--shrink-seconds',
        '40',
      ]);
      assert.ok(result.executions >= 1, output.slice(-4_000));
      assert.equal(code, 0, output.slice(-4_000));
      assert.equal(result.failure, null);
    },
  );

  it(
    'finds the rule broken on purpose (a redelivery restarts an abandoned key) and shrinks it to a few commands',
    { timeout: 420_000 },
    async () => {
      const { code, result, output } = await explore([
        '--seed',
        '2',
        '--runs',
        '10',
        '--max-commands',
        '6',
        '--only',
        'deliver,redeliver,abandon',
        '--invariant',
        'abandoned',
        '--broken-rule',
        'redelivery-restarts-after-abandon',
        '--shrink-seconds',
        '150',
      ]);
      assert.equal(code, 1, output.slice(-4_000));
      assert.equal(
        result.failure?.invariant,
        'an abandoned key stays abandoned: never an order, never opened again',
        output.slice(-4_000),
      );
      const steps = commandsOf(result.failure?.steps ?? []);
      assert.ok(steps.length <= 5, `shrunk to ${steps.length} commands:\n${steps.join('\n')}`);
      assert.ok(
        steps.some((step) => step.startsWith('operator: orders-cli abandon')),
        `the story has the abandon:\n${steps.join('\n')}`,
      );
    },
  );

  it(
    'finds the rule broken on purpose (awaiting leaves out a claim whose start was never confirmed) in one command',
    { timeout: 240_000 },
    async () => {
      const { code, result, output } = await explore([
        '--seed',
        '1',
        '--runs',
        '5',
        // Two: the first run that breaks it has two commands, which the explorer shrinks to one
        // (with three, finding and shrinking the same story took twice as long: 92 s against 47 s).
        '--max-commands',
        '2',
        '--only',
        'temporal-down',
        '--invariant',
        'orders-cli awaiting',
        '--broken-rule',
        'awaiting-hides-unconfirmed-claims',
        '--shrink-seconds',
        '60',
      ]);
      assert.equal(code, 1, output.slice(-4_000));
      assert.equal(
        result.failure?.invariant,
        'every unsettled key has a running workflow or is listed by `orders-cli awaiting`',
        output.slice(-4_000),
      );
      const steps = commandsOf(result.failure?.steps ?? []);
      assert.deepEqual(steps.length, 1, steps.join('\n'));
      assert.match(steps[0] ?? '', /while Temporal is unreachable/);
    },
  );

  it(
    'finds the rule broken on purpose (the CLI reports a decision the card took first as its own) and shrinks it to the click',
    { timeout: 300_000 },
    async () => {
      const { code, result, output } = await explore([
        '--seed',
        '5',
        '--runs',
        '15',
        '--max-commands',
        '6',
        '--only',
        'deliver,card-click,abandon',
        '--invariant',
        'one decision',
        '--broken-rule',
        'refused-decision-reported-taken',
        '--shrink-seconds',
        '30',
      ]);
      assert.equal(code, 1, output.slice(-4_000));
      assert.equal(result.failure?.invariant, 'one decision per waiting episode', output.slice(-4_000));
      const steps = commandsOf(result.failure?.steps ?? []);
      assert.ok(steps.length <= 3, `shrunk to ${steps.length} commands:\n${steps.join('\n')}`);
      assert.match(steps.at(-1) ?? '', /Feishu card's \w+ clicked .*orders-cli at the same moment/);
    },
  );

  it(
    "finds the rule broken on purpose (a receipt posted without looking for one) when a receipt's answer is lost",
    { timeout: 300_000 },
    async () => {
      const { code, result, output } = await explore([
        '--seed',
        '3',
        '--runs',
        '8',
        '--max-commands',
        '3',
        '--only',
        'long-connection,receipt-answer-lost',
        '--invariant',
        'receipt',
        '--broken-rule',
        'receipt-posted-without-looking',
        '--shrink-seconds',
        '30',
      ]);
      assert.equal(code, 1, output.slice(-4_000));
      assert.equal(result.failure?.invariant, 'one receipt per order', output.slice(-4_000));
      assert.match(result.failure?.detail ?? '', /carries 2 receipts/);
      const steps = commandsOf(result.failure?.steps ?? []);
      assert.ok(steps.length <= 3, `shrunk to ${steps.length} commands:\n${steps.join('\n')}`);
      assert.match(steps.at(-1) ?? '', /its answer is lost/);
    },
  );
});
