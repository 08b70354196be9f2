// The model-based explorer (tools/explorer) against a stack of its own: a short seeded exploration
// must break no promise, and the explorer must be able to fail — with a rule broken on purpose it
// has to find the broken promise and shrink it to a short story. One explorer runs them all on one
// stack of its own; the runs here are sized for the suite's budget, and `npm run explore` runs the
// long search (`npm run explore -- --seed 2026 --runs 100`).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { runToolForResult } from '../../tools/harness/tool-result.js';

interface Exploration {
  failed: boolean;
  executions: number;
  failure: { invariant: string; detail: string; steps: string[] } | null;
  counts: Record<string, number>;
}

const commandsOf = (steps: string[]) => steps.filter((step) => !step.startsWith('('));

/**
 * The explorations, run one after another by one explorer on one stack (`--then`): the product's,
 * then each rule broken on purpose, for which only that rule's entry point is started anew.
 */
const EXPLORATIONS = {
  // About 50 s alone; after the first runs each costs 2 s, and fewer leave command kinds unfired
  // (14 runs fire 13 kinds, 6 fire 9). Left out: the commands that wait out a timeout of the
  // product's (the decision window; a receipt's request and its retry, 20 s): `npm run explore` runs them.
  bounded: [
    '--seed',
    '20261130',
    '--runs',
    '14',
    '--max-commands',
    '6',
    '--without',
    'window-passes,receipt-answer-lost',
    '--shrink-seconds',
    '40',
  ],
  // Two commands: the first run that breaks it has two, which the explorer shrinks to one (with
  // three, finding and shrinking the same story took twice as long: 92 s against 47 s).
  awaiting: [
    '--seed',
    '1',
    '--runs',
    '5',
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
  ],
  decision: [
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
  ],
  receipt: [
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
  ],
  redelivery: [
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
  ],
};

describe('the model-based explorer', () => {
  let explored: { code: number; output: string; explorations: Record<keyof typeof EXPLORATIONS, Exploration> };

  before(
    async () => {
      const names = Object.keys(EXPLORATIONS) as (keyof typeof EXPLORATIONS)[];
      const { code, result, output } = await runToolForResult<{ explorations: Exploration[] }>(
        'tools/explorer/main.ts',
        names.flatMap((name, index) => [...(index > 0 ? ['--then'] : []), ...EXPLORATIONS[name]]),
      );
      assert.equal(result.explorations.length, names.length, output.slice(-4_000));
      explored = {
        code,
        output,
        explorations: Object.fromEntries(names.map((name, index) => [name, result.explorations[index]])) as Record<
          keyof typeof EXPLORATIONS,
          Exploration
        >,
      };
    },
    // The five explorations and one stack's start: about 6 minutes on a loaded 2-core machine.
    { timeout: 1_500_000 },
  );

  /** The explorer's output from `name`'s exploration on, for a failure's message. */
  const outputOf = (name: keyof typeof EXPLORATIONS) => {
    const seed = EXPLORATIONS[name][1];
    const from = explored.output.indexOf(`seed ${seed}, `);
    return explored.output.slice(from === -1 ? 0 : from).slice(0, 4_000);
  };

  it('ends 1, since the rules broken on purpose broke their promises', () => {
    assert.equal(explored.code, 1, explored.output.slice(-4_000));
  });

  it('BOUNDED EXPLORATION: a short seeded exploration of deliveries, faults, operators and clocks breaks no promise', () => {
    const { bounded } = explored.explorations;
    assert.ok(bounded.executions >= 1, outputOf('bounded'));
    assert.equal(bounded.failed, false, outputOf('bounded'));
    assert.equal(bounded.failure, null);
  });

  it('finds the rule broken on purpose (a redelivery restarts an abandoned key) and shrinks it to a few commands', () => {
    const { failure } = explored.explorations.redelivery;
    assert.equal(
      failure?.invariant,
      'an abandoned key stays abandoned: never an order, never opened again',
      outputOf('redelivery'),
    );
    const steps = commandsOf(failure.steps);
    assert.ok(steps.length <= 5, `shrunk to ${steps.length} commands:\n${steps.join('\n')}`);
    assert.ok(
      steps.some((step) => step.startsWith('operator: orders-cli abandon')),
      `the story has the abandon:\n${steps.join('\n')}`,
    );
  });

  it('finds the rule broken on purpose (awaiting leaves out a claim whose start was never confirmed) in one command', () => {
    const { failure } = explored.explorations.awaiting;
    assert.equal(
      failure?.invariant,
      'every unsettled key has a running workflow or is listed by `orders-cli awaiting`',
      outputOf('awaiting'),
    );
    const steps = commandsOf(failure.steps);
    assert.deepEqual(steps.length, 1, steps.join('\n'));
    assert.match(steps[0] ?? '', /while Temporal is unreachable/);
  });

  it('finds the rule broken on purpose (the CLI reports a decision the card took first as its own) and shrinks it to the click', () => {
    const { failure } = explored.explorations.decision;
    assert.equal(failure?.invariant, 'one decision per waiting episode', outputOf('decision'));
    const steps = commandsOf(failure.steps);
    assert.ok(steps.length <= 3, `shrunk to ${steps.length} commands:\n${steps.join('\n')}`);
    assert.match(steps.at(-1) ?? '', /Feishu card's \w+ clicked .*orders-cli at the same moment/);
  });

  it("finds the rule broken on purpose (a receipt posted without looking for one) when a receipt's answer is lost", () => {
    const { failure } = explored.explorations.receipt;
    assert.equal(failure?.invariant, 'one receipt per order', outputOf('receipt'));
    assert.match(failure.detail, /carries 2 receipts/);
    const steps = commandsOf(failure.steps);
    assert.ok(steps.length <= 3, `shrunk to ${steps.length} commands:\n${steps.join('\n')}`);
    assert.match(steps.at(-1) ?? '', /its answer is lost/);
  });
});
