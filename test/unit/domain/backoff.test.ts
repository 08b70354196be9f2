import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jitteredBackoffMs } from '../../../domain/backoff.js';

const policy = { initialIntervalMs: 500, backoffCoefficient: 2, maximumIntervalMs: 30_000 };

describe('retry backoff', () => {
  it('grows attempt by attempt even at the extremes of the jitter', () => {
    const lowest = (attempt: number) => jitteredBackoffMs(attempt, policy, () => 0);
    const highest = (attempt: number) => jitteredBackoffMs(attempt, policy, () => 0.999999);
    for (let attempt = 1; attempt < 5; attempt += 1) {
      assert.ok(
        lowest(attempt + 1) >= highest(attempt),
        `attempt ${attempt + 1} must wait at least as long as ${attempt}`,
      );
    }
    assert.equal(lowest(1), 250);
    assert.equal(lowest(2), 500);
    assert.equal(lowest(3), 1000);
  });

  it('is jittered: many callers failing together do not retry together', () => {
    const delays = new Set(Array.from({ length: 50 }, () => jitteredBackoffMs(2, policy)));
    assert.ok(delays.size > 10, `expected spread-out delays, got ${[...delays].join(', ')}`);
    for (const delay of delays) assert.ok(delay >= 500 && delay <= 1000, `delay ${delay} outside [500, 1000]`);
  });

  it('never exceeds the configured maximum interval', () => {
    for (let attempt = 1; attempt <= 40; attempt += 1) {
      assert.ok(jitteredBackoffMs(attempt, policy, () => 0.999999) <= policy.maximumIntervalMs);
    }
  });
});
