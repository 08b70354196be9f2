// What a failure means to whoever called: the start path, an operator decision or a read failed,
// and the caller learns one of five kinds, with the facts each edge needs to say it
// (docs/architecture.md, decision 15). HTTP (edges/http/problem.ts), MCP
// (edges/mcp/tool-results.ts) and the CLI (edges/cli/failure-output.ts) only render an outcome.
// Database and Temporal failures are recognised by the classification table that also decides
// which activity failures are retried (domain/error-classification.ts).
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { errorInChain, isDatabaseTransient, isTemporalUnreachable } from '../domain/error-classification.js';
import { IdempotencyConflictError, KeySourceConflictError, messageOf } from '../domain/errors.js';
import type { FieldError } from '../domain/order-input.js';
import { NothingToCompensateError } from './operator-decisions/compensation.js';
import { NoPendingDecisionError } from './operator-decisions/shared.js';
import { IntakeOverloadedError } from './load-shedding.js';
import { TemporalUnavailableError } from './take-delivery.js';

/**
 * - conflict: the request contradicts what already exists; calling again is refused again.
 * - retry-later: a dependency was unavailable; calling again with the same request is safe.
 * - not-found: nothing is known under what was asked for.
 * - refused: the request itself is wrong, or not allowed in the state things are in.
 * - unexpected: nobody classified it; the details stay in the log.
 */
export const FAILURE_KINDS = ['conflict', 'retry-later', 'not-found', 'refused', 'unexpected'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

/** How long a caller waits before calling again after a dependency was unavailable. */
export const RETRY_AFTER_SECONDS = 5;

interface Said {
  /**
   * The failure in its own words, for an operator and the log. Answers to outsiders (HTTP, MCP)
   * never echo it for an unexpected failure.
   */
  message: string;
}

/**
 * One failure, as a caller should understand it. `slug` names the case: stable, and the problem
 * type of an HTTP answer (`/problems/<slug>`).
 */
export type FailureOutcome = Said &
  (
    | {
        kind: 'conflict';
        slug: 'idempotency-key-conflict';
        idempotencyKey: string;
        /** What differs from the key's order; none when the key is held through another door. */
        differences: readonly string[];
        /** The key belongs to another door (docs/architecture.md, decision 38): said alike at every door. */
        heldElsewhere: boolean;
      }
    | { kind: 'conflict'; slug: 'workflow-already-started'; workflowId: string }
    | {
        kind: 'retry-later';
        slug: 'temporal-unavailable' | 'database-unavailable' | 'overloaded';
        retryAfterSeconds: number;
      }
    | { kind: 'not-found'; slug: 'order-not-found'; idempotencyKey: string }
    | { kind: 'refused'; slug: 'validation-failed' | 'invalid-key'; errors: readonly FieldError[] }
    | { kind: 'refused'; slug: 'decision-refused'; idempotencyKey: string; reason: string }
    | { kind: 'unexpected'; slug: 'internal-error' }
  );

export type FailureSlug = FailureOutcome['slug'];

/** A failure whose meaning the code that throws it already knows: a missing order, refused input. */
export class KnownFailure extends Error {
  constructor(readonly outcome: FailureOutcome) {
    super(outcome.message);
    this.name = 'KnownFailure';
  }
}

export function orderNotFound(idempotencyKey: string): FailureOutcome {
  return {
    kind: 'not-found',
    slug: 'order-not-found',
    idempotencyKey,
    message: `no order is known for ${idempotencyKey}`,
  };
}

/**
 * What a key conflict says to its caller, in the same words at every door (HTTP, MCP). A key held
 * through another door is said alike whoever holds it and whatever they sent: no holder, no
 * difference, nothing to aim the next guess with. A conflict within one door names the fields that
 * differ: its sender holds both orders and needs them to find its mistake (docs/security.md).
 */
export function conflictSentence(outcome: {
  idempotencyKey: string;
  differences: readonly string[];
  heldElsewhere: boolean;
}): string {
  const { idempotencyKey, differences } = outcome;
  if (outcome.heldElsewhere) return `${idempotencyKey} is already taken by an earlier delivery`;
  return (
    `${idempotencyKey} was already used for a different order` +
    (differences.length > 0 ? `: ${differences.join(', ')} differ` : '')
  );
}

/** Input refused field by field, each named by its JSON pointer; nothing was started. */
export function invalidInput(errors: readonly FieldError[]): FailureOutcome {
  return { kind: 'refused', slug: 'validation-failed', errors, message: `${errors.length} field(s) are invalid` };
}

/** Something that is not an idempotency key was asked about; `pointer` is where it was given. */
export function invalidKey(pointer: string): FailureOutcome {
  return {
    kind: 'refused',
    slug: 'invalid-key',
    errors: [{ pointer, message: 'not an idempotency key' }],
    message: 'the key must look like APPROVAL:<approvalNo>:MAIN|SUPPLEMENT',
  };
}

/**
 * What `error` means to the caller. First match wins: what the code already decided, then typed
 * failures of the start path and the operator decisions, then Temporal before the database (a
 * refused connection to Temporal also carries a socket's code), and anything else is unexpected.
 */
export function failureOutcome(error: unknown): FailureOutcome {
  if (error instanceof KnownFailure) return error.outcome;
  const message = messageOf(error);
  const conflict = errorInChain(error, IdempotencyConflictError);
  if (conflict) {
    return {
      kind: 'conflict',
      slug: 'idempotency-key-conflict',
      idempotencyKey: conflict.key,
      differences: conflict.differences,
      heldElsewhere: conflict instanceof KeySourceConflictError,
      message,
    };
  }
  if (error instanceof NoPendingDecisionError || error instanceof NothingToCompensateError) {
    return {
      kind: 'refused',
      slug: 'decision-refused',
      idempotencyKey: error.idempotencyKey,
      reason: error.reason,
      message,
    };
  }
  if (error instanceof WorkflowExecutionAlreadyStartedError) {
    return { kind: 'conflict', slug: 'workflow-already-started', workflowId: error.workflowId, message };
  }
  if (error instanceof IntakeOverloadedError) {
    return { kind: 'retry-later', slug: 'overloaded', retryAfterSeconds: error.retryAfterSeconds, message };
  }
  if (error instanceof TemporalUnavailableError || isTemporalUnreachable(error)) {
    return { kind: 'retry-later', slug: 'temporal-unavailable', retryAfterSeconds: RETRY_AFTER_SECONDS, message };
  }
  if (isDatabaseTransient(error)) {
    return { kind: 'retry-later', slug: 'database-unavailable', retryAfterSeconds: RETRY_AFTER_SECONDS, message };
  }
  return { kind: 'unexpected', slug: 'internal-error', message };
}
