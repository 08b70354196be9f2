// Tool answers a model can act on. Business and input failures are results with `isError: true`
// and plain sentences (what went wrong, whether anything was written, whether calling again
// helps); protocol errors stay for protocol misuse. No stack trace ever leaves the server: details
// of the unexpected stay in the log. What a failure means is decided in submission/failure-outcome.ts
// (docs/architecture.md, decision 15); this file only words it for a model.
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { FieldError } from '../../domain/order-input.js';
import {
  conflictSentence,
  failureOutcome,
  type FailureOutcome,
  invalidInput,
} from '../../submission/failure-outcome.js';

/** The answer itself, plus the same JSON as text for clients that do not read structuredContent. */
export function successResult(structured: Record<string, unknown>, sentence: string): CallToolResult {
  return {
    content: [
      { type: 'text', text: sentence },
      { type: 'text', text: JSON.stringify(structured) },
    ],
    structuredContent: structured,
  };
}

function refusal(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** Each bad field by its JSON pointer, as the webhook's 400 names them. */
export function invalidArgumentsResult(toolName: string, errors: readonly FieldError[]): CallToolResult {
  return failureResult(toolName, invalidInput(errors));
}

function fieldHint(pointer: string, message: string): string {
  if (pointer === '/idempotencyKey' && message === 'unknown field') {
    return 'unknown field: the idempotency key is computed from approvalNo and operation and cannot be passed';
  }
  return message;
}

/**
 * The tool's answer to a failure; `expected` is false for failures nobody classified (they are
 * logged as errors).
 */
export function errorResult(toolName: string, error: unknown): { result: CallToolResult; expected: boolean } {
  const outcome = failureOutcome(error);
  return { result: failureResult(toolName, outcome), expected: outcome.kind !== 'unexpected' };
}

/**
 * An outcome in words a model can act on. Calling again is safe for every tool here — a
 * submission is keyed by its approval and a second decision is refused — so the answers to an
 * unavailable dependency say so.
 */
export function failureResult(toolName: string, outcome: FailureOutcome): CallToolResult {
  const again = `It is safe to call ${toolName} again with the same arguments in a few seconds.`;
  switch (outcome.slug) {
    case 'idempotency-key-conflict': {
      return refusal(
        `Conflict: ${conflictSentence(outcome)}. Nothing was written and what holds the key is unchanged. ` +
          'Calling again with these arguments will be refused again; an approval whose order really changed ' +
          'needs a person to decide.',
      );
    }
    case 'workflow-already-started':
      return refusal(
        `Conflict: ${outcome.workflowId} has already run; nothing new was started. Calling again with these ` +
          'arguments will be refused again.',
      );
    case 'temporal-unavailable':
      return refusal(
        `The workflow service cannot be reached right now. ${again} If this call got through after all, ` +
          'the same call finds it instead of doing it twice.',
      );
    case 'database-unavailable':
      return refusal(`The database cannot be reached right now. ${again}`);
    case 'overloaded':
      return refusal(
        `The service is too busy to take this call right now; nothing was started. It is safe to call ${toolName} ` +
          `again with the same arguments after ${outcome.retryAfterSeconds} seconds.`,
      );
    case 'order-not-found':
      return refusal(`No order is known for ${outcome.idempotencyKey}: nothing was submitted under it.`);
    case 'validation-failed':
    case 'invalid-key': {
      const lines = outcome.errors.map(
        ({ pointer, message }) => `- ${pointer || '(the arguments)'}: ${fieldHint(pointer, message)}`,
      );
      return refusal(
        `The arguments were refused and nothing was started. Fix these fields and call ${toolName} again:\n` +
          lines.join('\n'),
      );
    }
    case 'decision-refused':
      return refusal(
        `Nothing was decided: ${outcome.reason}. list_orders_awaiting_decision shows the orders waiting for a decision.`,
      );
    case 'internal-error':
      return refusal(`An unexpected error occurred; its details are in the server log. ${again}`);
    default:
      return outcome satisfies never;
  }
}
