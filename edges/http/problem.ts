// RFC 9457 problem details: every error answer of the HTTP API. A failure's meaning comes from
// submission/failure-outcome.ts; this file only says it in HTTP — status, type, title, detail and
// Retry-After. The refusals only HTTP has (body size, media type, signature, malformed JSON, no
// such route) are built where fastify meets them, in app.ts.
import type { FieldError } from '../../domain/order-input.js';
import { conflictSentence, type FailureOutcome } from '../../submission/failure-outcome.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
// Relative references (RFC 9457 §3.1.1), documented in docs/http-api.md, "Errors".
const TYPE_BASE = '/problems/';

/**
 * Every problem type the API answers with, its status and when: `problem()` takes only these, and
 * the OpenAPI document (openapi.ts) lists them per route, so a fuzzer checks the `type` as well as
 * the status.
 */
export const PROBLEM_TYPES = {
  'validation-failed': { status: 400, when: 'the body breaks the schema; one `errors[]` entry per field' },
  'malformed-json': { status: 400, when: 'the body is not JSON' },
  'invalid-key': { status: 400, when: 'GET /orders/{key} with something that is not a key' },
  'bad-request': { status: 400, when: 'any other request the HTTP framework refuses before a route runs' },
  'invalid-callback': {
    status: 401,
    when:
      'an OA connector callback not proven authentic (signature, timestamp, decryption or token); ' +
      'one answer, whichever check failed',
  },
  'invalid-signature': {
    status: 401,
    when:
      'missing or wrong signature, a stale timestamp, or signed in the scheme WEBHOOK_SIGNATURE_SCHEME does ' +
      'not name; one answer, whichever check failed',
  },
  'invalid-token': {
    status: 401,
    when: '/mcp, or GET /orders/{key} while STATUS_TOKEN is set, without the right bearer token (with WWW-Authenticate)',
  },
  'decision-refused': { status: 403, when: 'an operator decision the key cannot take in its status' },
  'origin-not-allowed': { status: 403, when: '/mcp from a browser origin MCP_ALLOWED_ORIGINS does not list' },
  'order-not-found': { status: 404, when: 'GET /orders/{key} for an unknown key' },
  'not-found': { status: 404, when: 'no such route (also /mcp or a connector route that is off)' },
  'method-not-allowed': { status: 405, when: 'GET or DELETE on /mcp (with Allow: POST)' },
  'workflow-already-started': { status: 409, when: 'the key’s workflow id has already run; nothing new started' },
  'request-timeout': {
    status: 408,
    when: 'the request did not arrive whole in time (HTTP_REQUEST_TIMEOUT_MS, or less where the sender gives up sooner); the connection closes',
  },
  'payload-too-large': { status: 413, when: 'the body is over the size limit (256 KiB)' },
  'unsupported-media-type': { status: 415, when: 'not application/json' },
  'idempotency-key-conflict': { status: 422, when: 'the key was used for a different order; `differences`' },
  'internal-error': { status: 500, when: 'anything unexpected; the details stay in the log' },
  'temporal-unavailable': { status: 503, when: 'Temporal unreachable or the start unconfirmed; Retry-After' },
  'database-unavailable': { status: 503, when: 'PostgreSQL unreachable, busy or the statement rolled back' },
  overloaded: {
    status: 503,
    when: 'this instance could not take the delivery inside its deadline (a burst); Retry-After from its drain rate',
  },
  'shutting-down': { status: 503, when: 'the instance is draining after SIGTERM; Retry-After: 1' },
} as const satisfies Record<string, { status: number; when: string }>;

export type ProblemSlug = keyof typeof PROBLEM_TYPES;

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
  slug: ProblemSlug,
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
      return new HttpProblem(
        problem(slug, 422, 'Idempotency key conflict', conflictSentence(outcome), { idempotencyKey, differences }),
      );
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
    case 'overloaded':
      return retryLater(
        outcome.retryAfterSeconds,
        problem(slug, 503, UNAVAILABLE, `this instance is too busy to take the delivery in time; ${REDELIVER}`),
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

/** A door's refusal of a request that could not be authenticated: the slug names the door. */
export type RefusalSlug = 'invalid-signature' | 'invalid-callback' | 'invalid-token';

/**
 * The one answer a door gives to every request it refuses for a reason that depends on a secret —
 * a missing or wrong signature or token, a stale or replayed timestamp, a body that does not
 * decrypt or does not parse after decryption. Status, headers and body are the same whichever
 * check failed, so a caller without the secret learns nothing from the answer (a padding oracle
 * needs two different answers); the precise reason goes to the log, never into the answer.
 */
export function refusedAtTheDoor(slug: RefusalSlug, headers: Record<string, string> = {}): HttpProblem {
  return new HttpProblem(problem(slug, 401, 'Unauthorized', 'the request could not be authenticated'), headers);
}

function retryLater(seconds: number, body: Problem): HttpProblem {
  return new HttpProblem(body, { 'retry-after': String(seconds) });
}
