import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import fc from 'fast-check';
import { raceDeadline } from '../../../submission/deadline.js';

const START = Date.parse('2026-12-01T12:00:00Z');

/** A promise that resolves with `value` (or rejects with `error`) `ms` from now, on the mocked clock. */
function settlesAfter<T>(ms: number, outcome: { value: T } | { error: Error }): Promise<T> {
  return new Promise<T>((resolve, reject) =>
    setTimeout(() => ('error' in outcome ? reject(outcome.error) : resolve(outcome.value)), ms),
  );
}

/** Whether `promise` has settled once every microtask queued so far has run. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe('raceDeadline', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START }));
  afterEach(() => mock.timers.reset());

  it('answers with the work when it finishes first, and clears its timer', async () => {
    const lateError = mock.fn(() => new Error('late'));
    const race = raceDeadline(settlesAfter(50, { value: 'done' }), START + 100, { reject: lateError });
    mock.timers.tick(50);
    assert.equal(await race, 'done');
    mock.timers.tick(1_000);
    assert.equal(lateError.mock.callCount(), 0, 'the deadline never fired: its timer was cleared');
  });

  it("answers with the work's failure when it fails first", async () => {
    const race = raceDeadline(settlesAfter(10, { error: new Error('refused') }), START + 100, { resolve: 'late' });
    mock.timers.tick(10);
    await assert.rejects(race, /refused/);
  });

  it('rejects with the error made at the deadline when the work is late, not before', async () => {
    const race = raceDeadline(settlesAfter(500, { value: 'done' }), START + 100, {
      reject: () => new Error(`late at ${Date.now() - START} ms`),
    });
    mock.timers.tick(99);
    assert.equal(await hasSettled(race), false);
    mock.timers.tick(1);
    await assert.rejects(race, /^Error: late at 100 ms$/);
  });

  it('resolves the late value when the work is late', async () => {
    const race = raceDeadline(settlesAfter(500, { value: 'done' }), START + 100, { resolve: 'late' as const });
    mock.timers.tick(100);
    assert.equal(await race, 'late');
  });

  it('answers late at once for a deadline already past', async () => {
    const race = raceDeadline(settlesAfter(1, { value: 'done' }), START - 5_000, { resolve: 'late' as const });
    mock.timers.tick(0);
    assert.equal(await race, 'late');
  });

  it('answers the work when it finishes before the deadline, and the late outcome when after (property)', async () => {
    await fc.assert(
      // Node runs a timer of under 1 ms after 1 ms: the times start at 1, so that none tie.
      fc.asyncProperty(
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 1, max: 2_000 }),
        fc.nat(2_000),
        async (workMs, deadlineMs, startOffset) => {
          fc.pre(workMs !== deadlineMs);
          mock.timers.reset();
          mock.timers.enable({ apis: ['setTimeout', 'Date'], now: START + startOffset });
          const lateError = mock.fn(() => new Error('late'));
          const outcome = raceDeadline(settlesAfter(workMs, { value: 'done' }), Date.now() + deadlineMs, {
            reject: lateError,
          }).then(
            (value) => value,
            (error: Error) => error.message,
          );
          // The first to come, then what its answer does, then the rest of the time.
          mock.timers.tick(Math.min(workMs, deadlineMs));
          await new Promise((resolve) => setImmediate(resolve));
          mock.timers.tick(Math.abs(workMs - deadlineMs) + 1);
          assert.equal(await outcome, workMs < deadlineMs ? 'done' : 'late');
          assert.equal(
            lateError.mock.callCount(),
            workMs < deadlineMs ? 0 : 1,
            'the timer is cleared once the work wins',
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('raceDeadline, on the real clock', () => {
  it('raises no unhandled rejection when the work fails after the deadline', async () => {
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      let failLate: (error: Error) => void = () => undefined;
      const work = new Promise((_resolve, reject) => {
        failLate = reject;
      });
      assert.equal(await raceDeadline(work, Date.now(), { resolve: 'late' as const }), 'late');
      // The work fails once the race has answered; a rejection nobody handles is reported when the
      // loop turns after it.
      failLate(new Error('failed late'));
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });
});
