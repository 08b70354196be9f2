// The rules the explorer can run the service with broken on purpose, so that its own test shows it
// finds a broken promise and shrinks it to a short story. A broken rule is an entry point of its
// own (tools/explorer/broken/) that the stack starts instead of the product's: the product carries
// no switch for it.
import { nodeArgsFor } from '../harness/test-build.js';
export const BROKEN_RULES = {
  /** A redelivery starts its key's workflow again, also after an operator abandoned the key. */
  'redelivery-restarts-after-abandon': { api: 'tools/explorer/broken/api-restarts-started-keys.ts' },
  /** `orders-cli awaiting` leaves out the claims whose start was never confirmed. */
  'awaiting-hides-unconfirmed-claims': { cli: 'tools/explorer/broken/cli-hides-unconfirmed-claims.ts' },
  /** `orders-cli resubmit`/`abandon` report a decision the workflow refused (another door decided first) as taken. */
  'refused-decision-reported-taken': { cli: 'tools/explorer/broken/cli-reports-refused-decisions-taken.ts' },
  /** The worker posts a receipt without looking for one posted before (a retried attempt posts again). */
  'receipt-posted-without-looking': { worker: 'tools/explorer/broken/worker-posts-receipts-blind.ts' },
} satisfies Record<string, { api?: string; cli?: string; worker?: string }>;

export type BrokenRule = keyof typeof BROKEN_RULES;

export function isBrokenRule(name: string): name is BrokenRule {
  return Object.hasOwn(BROKEN_RULES, name);
}

/**
 * What a stack runs: the API's and the worker's entry points (the product's unless `rule` replaces
 * one), and the node arguments that start `orders-cli` — the product's entry point (its test-run
 * build when there is one), unless `rule` replaces it.
 */
export function entryPointsFor(rule: BrokenRule | undefined): { api: string; worker?: string; cli: string[] } {
  const broken: { api?: string; cli?: string; worker?: string } = rule ? BROKEN_RULES[rule] : {};
  return {
    api: broken.api ?? 'app/api-main.ts',
    ...(broken.worker ? { worker: broken.worker } : {}),
    cli: nodeArgsFor(broken.cli ?? 'app/cli-main.ts'),
  };
}
