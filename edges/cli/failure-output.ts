// How the CLI tells an operator that a command failed: the failure in its own words on stderr
// (`{"error": …}` with --json) and the exit code its kind means — 2 for input refused field by
// field (a usage error), 1 for every other failure. The meaning comes from
// submission/failure-outcome.ts (docs/architecture.md, decision 15).
import type { FailureOutcome } from '../../submission/failure-outcome.js';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export interface FailureOutput {
  exitCode: number;
  /** One line for stderr. */
  text: string;
}

export function failureOutput(commandName: string, outcome: FailureOutcome, json: boolean): FailureOutput {
  const usage = outcome.slug === 'validation-failed' || outcome.slug === 'invalid-key';
  return {
    exitCode: usage ? EXIT_USAGE : EXIT_FAILURE,
    text: json ? JSON.stringify({ error: outcome.message }) : `${commandName} failed: ${outcome.message}`,
  };
}
