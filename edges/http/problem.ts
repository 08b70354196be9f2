// RFC 9457 problem details: every error answer of the HTTP API. A failure's meaning comes from
// services/failure-outcome.ts; this file only says it in HTTP — status, type, title, detail and
// Retry-After. The refusals only HTTP has (body size, media type, signature, malformed JSON, no
// such route) are built where fastify meets them, in app.ts.
import type { FieldError } from '../../domain/order-input.js';
import type { FailureOutcome } from '../../services/failure-outcome.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
// Relative references (RFC 9457 §3.1.1), documented in docs/http-api.md, "Errors".
const TYPE_BASE = '/problems/';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export class HttpProblem extends Error {
  constructor(
    readonly problem: Problem,
    readonly headers: Record<string, string> = {},
  ) {
    super(problem.detail);
    this.name = 'HttpProblem';
  }
}

export function problem(
  slug: string,
  status: number,
  title: string,
  detail: string,
  extensions: Record<string, unknown> = {},
): Problem {
  return { type: TYPE_BASE + slug, title, status, detail, ...extensions };
}

const UNAVAILABLE = 'Service unavailable';
const REDELIVER = 'redeliver later (the same key never starts twice)';

/** The answer to a failure. Only a retry-later outcome carries Retry-After. */
export function problemFor(outcome: FailureOutcome): HttpProblem {
  const { slug } = outcome;
  switch (outcome.slug) {
    case 'idempotency-key-conflict': {
      const { idempotencyKey, differences } = outcome;
      const detail =
        `${idempotencyKey} was already used for a different order` +
        (differences.length > 0 ? `: ${differences.join(', ')} differ` : '');
      return new HttpProblem(problem(slug, 422, 'Idempotency key conflict', detail, { idempotencyKey, differences }));
    }
    case 'workflow-already-started':
      return new HttpProblem(
        problem(slug, 409, 'Conflict', `${outcome.workflowId} has already run; nothing new was started`, {
          workflowId: outcome.workflowId,
        }),
      );
    case 'temporal-unavailable':
      return retryLater(
        outcome.retryAfterSeconds,
        problem(
          slug,
          503,
          UNAVAILABLE,
          `the workflow service cannot be reached or did not confirm the start; ${REDELIVER}`,
        ),
      );
    case 'database-unavailable':
      return retryLater(
        outcome.retryAfterSeconds,
        problem(slug, 503, UNAVAILABLE, `the database cannot be reached; ${REDELIVER}`),
      );
    case 'order-not-found':
      return new HttpProblem(problem(slug, 404, 'Not found', outcome.message));
    case 'validation-failed':
      return new HttpProblem(problem(slug, 400, 'Invalid approval', outcome.message, { errors: outcome.errors }));
    case 'invalid-key':
      return new HttpProblem(
        problem(slug, 400, 'Invalid idempotency key', outcome.message, { errors: outcome.errors }),
      );
    case 'decision-refused':
      return new HttpProblem(problem(slug, 403, 'Decision refused', outcome.message));
    case 'internal-error':
      // 5xx details stay in the log, not in the answer.
      return new HttpProblem(problem(slug, 500, 'Internal server error', 'an unexpected error occurred'));
    default:
      return outcome satisfies never;
  }
}

function retryLater(seconds: number, body: Problem): HttpProblem {
  return new HttpProblem(body, { 'retry-after': String(seconds) });
}
