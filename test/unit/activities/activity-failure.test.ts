// How an activity's error becomes the ApplicationFailure Temporal acts on, beyond the table's rows
// (test/unit/domain/error-classification.test.ts walks those): a decision already made is kept, the
// original error stays the cause, and a delay is only set where the policy's timing is known.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { toActivityFailure } from '../../../activities/activity-failure.js';
import { DownstreamHttpError, InsufficientStockError } from '../../../domain/errors.js';

const timing = { initialIntervalMs: 200, maxIntervalMs: 1_000, backoffCoefficient: 2 };
const connectionReset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

describe('turning an activity error into a failure Temporal acts on', () => {
  it('keeps a failure an inner step already decided, as it is', () => {
    const decided = ApplicationFailure.nonRetryable('already judged', 'InsufficientStock');
    assert.equal(toActivityFailure(decided, 3, timing), decided);
  });

  it('keeps the original error as the cause, with the attempt, the class and why in its details', () => {
    const error = new InsufficientStockError('SKU-1', 5, 2);
    const failure = toActivityFailure(error, 4, timing);
    assert.equal(failure.cause, error);
    assert.equal(failure.message, 'insufficient stock for SKU-1: requested 5, available 2');
    assert.deepEqual(failure.details, [
      { attempt: 4, errorClass: 'InsufficientStock', why: 'a business rule: retrying cannot create stock' },
    ]);
  });

  it("leaves the delay of a retried failure to Temporal's own backoff when the policy's timing is not given", () => {
    const failure = toActivityFailure(connectionReset(), 1);
    assert.equal(failure.nonRetryable, false);
    assert.equal(failure.nextRetryDelay, undefined);
  });

  it('never asks for an immediate retry, even when the downstream says Retry-After: 0', () => {
    assert.equal(Number(toActivityFailure(new DownstreamHttpError(429, 0, ''), 1, timing).nextRetryDelay), 1);
  });

  it('fails for good on something thrown that is not an Error, naming it', () => {
    const failure = toActivityFailure('a string was thrown', 1, timing);
    assert.equal(failure.type, 'Unclassified');
    assert.equal(failure.nonRetryable, true);
    assert.equal(failure.message, 'a string was thrown');
    assert.equal(failure.cause, undefined);
  });
});
