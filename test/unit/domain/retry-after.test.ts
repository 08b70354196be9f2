import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRetryAfterMs } from '../../../domain/retry-after.js';

describe('Retry-After', () => {
  const now = Date.parse('2026-11-29T10:00:00Z');

  it('reads delay-seconds', () => {
    assert.equal(parseRetryAfterMs('2', now), 2_000);
    assert.equal(parseRetryAfterMs(' 120 ', now), 120_000);
  });

  it('reads an HTTP date as the time left until it', () => {
    assert.equal(parseRetryAfterMs('Sun, 29 Nov 2026 10:00:05 GMT', now), 5_000);
    assert.equal(parseRetryAfterMs('Sun, 29 Nov 2026 09:00:00 GMT', now), 0, 'a date in the past means now');
  });

  it('ignores a missing or unreadable value, so our own backoff applies', () => {
    assert.equal(parseRetryAfterMs(undefined, now), undefined);
    assert.equal(parseRetryAfterMs('soon', now), undefined);
    assert.equal(parseRetryAfterMs('-1', now), undefined);
  });
});
