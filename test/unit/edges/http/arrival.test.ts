import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loopLag } from '../../../../edges/http/arrival.js';

/** Keeps the event loop busy for `ms`, as a burst's work does. */
function busyFor(ms: number) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // the loop cannot turn meanwhile
  }
}

describe('the event loop lag behind a request’s arrival', () => {
  it('remembers a turn of the loop that took 300 ms: a request read after it may have waited that long', async () => {
    const lag = loopLag();
    try {
      await sleep(120); // the sampling timer has run
      busyFor(300);
      // One more turn lets the late timer fire and measure its lateness.
      await sleep(120);
      // The timer was due within 50 ms of the block's start, so it fired at least 250 ms late
      // (more on a loaded machine, never less).
      assert.ok(lag.recentMaxMs() >= 250, `lag seen: ${lag.recentMaxMs()} ms`);
    } finally {
      lag.stop();
    }
  });
});
