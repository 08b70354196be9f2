// Tool answers a model can act on. Business and input failures are results with `isError: true`
// and plain sentences (what went wrong, whether anything was written, whether calling again
// helps); protocol errors stay for protocol misuse. No stack trace ever leaves the server: details
// of the unexpected stay in the log. Failures are told apart by the project's one classification.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isDatabaseUnreachable } from '../../domain/error-classification.js';
import { IdempotencyConflictError } from '../../domain/errors.js';
import type { FieldError } from '../../domain/order-input.js';
import { NoPendingDecisionError } from '../../services/submission/operator-decisions.js';
import { TemporalUnavailableError } from '../../services/submission/submit-approval.js';
import { isTemporalUnreachable } from '../../services/temporal/connection.js';

/** What the tool was asked about does not exist; the message says what, for the model. */
export class NotFoundError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}

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

export function refusal(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** Each bad field by its JSON pointer, as the webhook's 400 names them. */
export function invalidArgumentsResult(toolName: string, errors: readonly FieldError[]): CallToolResult {
  const lines = errors.map(
    ({ pointer, message }) => `- ${pointer || '(the arguments)'}: ${fieldHint(pointer, message)}`,
  );
  return refusal(
    `The arguments were refused and nothing was started. Fix these fields and call ${toolName} again:\n` +
      lines.join('\n'),
  );
}

function fieldHint(pointer: string, message: string): string {
  if (pointer === '/idempotencyKey' && message === 'unknown field') {
    return 'unknown field: the idempotency key is computed from approvalNo and operation and cannot be passed';
  }
  return message;
}

/**
 * Maps a failure to the tool's answer; `expected` is false for failures nobody classified (they
 * are logged as errors). Calling again is safe for every tool here — a submission is keyed by its
 * approval and a second decision is refused — so the infrastructure answers say so.
 */
export function errorResult(toolName: string, error: unknown): { result: CallToolResult; expected: boolean } {
  const again = `It is safe to call ${toolName} again with the same arguments in a few seconds.`;
  if (error instanceof IdempotencyConflictError) {
    const what = error.differences.length > 0 ? `: ${error.differences.join(', ')} differ` : '';
    return {
      expected: true,
      result: refusal(
        `Conflict: ${error.key} was already submitted with a different order${what}. Nothing was written and the ` +
          'first order is unchanged. Calling again with these arguments will be refused again; an approval whose ' +
          'order really changed needs a person to decide.',
      ),
    };
  }
  if (error instanceof NotFoundError) return { expected: true, result: refusal(error.message) };
  if (error instanceof NoPendingDecisionError) {
    return {
      expected: true,
      result: refusal(
        `Nothing was decided: ${error.reason}. list_orders_awaiting_decision shows the orders waiting for a decision.`,
      ),
    };
  }
  if (error instanceof TemporalUnavailableError || isTemporalUnreachable(error)) {
    return {
      expected: true,
      result: refusal(
        `The workflow service cannot be reached right now. ${again} If this call got through after all, ` +
          'the same call finds it instead of doing it twice.',
      ),
    };
  }
  if (isDatabaseUnreachable(error)) {
    return { expected: true, result: refusal(`The database cannot be reached right now. ${again}`) };
  }
  return {
    expected: false,
    result: refusal(`An unexpected error occurred; its details are in the server log. ${again}`),
  };
}
