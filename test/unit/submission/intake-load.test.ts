import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { intakeLoad, MAX_RETRY_AFTER_SECONDS } from '../../../submission/intake-load.js';

/** A clock the test moves by hand. */
function clock(start = Date.parse('2026-12-01T23:59:50Z')) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('intake load', () => {
  it('takes at most INTAKE_MAX_IN_FLIGHT deliveries at once, and one more once a place is given back', () => {
    const load = intakeLoad({ maxInFlight: 2 });
    assert.equal(load.enter(), true);
    assert.equal(load.enter(), true);
    assert.equal(load.enter(), false, 'the third is refused while two are in flight');
    load.leave(true);
    assert.equal(load.enter(), true);
    assert.equal(load.inFlight, 2);
  });

  it('remembers when Temporal last confirmed a start, not when a delivery was merely taken', () => {
    const time = clock();
    const load = intakeLoad({ now: time.now });
    assert.equal(load.lastStartConfirmedAt, undefined);
    load.startConfirmed();
    const confirmed = time.now();
    time.advance(1_500);
    // A redelivery answered from its record is taken without asking Temporal anything.
    load.enter();
    load.leave(true);
    assert.equal(load.lastStartConfirmedAt, confirmed);
  });

  it('takes every delivery when no cap is set', () => {
    const load = intakeLoad();
    for (let i = 0; i < 10_000; i++) assert.equal(load.enter(), true);
  });

  it('never holds more than its cap, and refuses only when full, whatever the order of arrivals and departures', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.array(fc.boolean(), { maxLength: 300 }), (cap, steps) => {
        const load = intakeLoad({ maxInFlight: cap });
        let held = 0;
        for (const arrive of steps) {
          if (arrive) {
            const taken = load.enter();
            assert.equal(taken, held < cap, `enter() with ${held} of ${cap} held`);
            if (taken) held += 1;
          } else if (held > 0) {
            load.leave(true);
            held -= 1;
          }
          assert.equal(load.inFlight, held);
          assert.ok(load.inFlight <= cap);
        }
      }),
    );
  });

  it('asks a shed sender to wait as long as the deliveries ahead of it take at the measured rate', () => {
    const time = clock();
    const load = intakeLoad({ now: time.now, random: () => 0 });
    // 20 deliveries a second for five seconds...
    for (let second = 0; second < 5; second++) {
      for (let i = 0; i < 20; i++) {
        load.enter();
        load.leave(true);
      }
      time.advance(1_000);
    }
    // ...then 100 in flight: five seconds of work at 20 a second.
    for (let i = 0; i < 100; i++) load.enter();
    assert.equal(load.retryAfterSeconds(), 5);
    // Those shed in the last second come back too: 40 more are two more seconds.
    for (let i = 0; i < 40; i++) load.shed();
    assert.equal(load.retryAfterSeconds(), 7);
  });

  it('spreads the senders it sheds over up to twice the drain time, so they do not all come back at once', () => {
    const time = clock();
    const at = (random: number) => {
      const load = intakeLoad({ now: time.now, random: () => random });
      for (let i = 0; i < 10; i++) {
        load.enter();
        load.leave(true);
      }
      time.advance(1_000);
      for (let i = 0; i < 40; i++) load.enter();
      return load.retryAfterSeconds();
    };
    assert.equal(at(0), 4);
    assert.equal(at(0.5), 6);
    assert.equal(at(0.999), 8);
  });

  it('answers between 1 and 30 seconds whatever the load, the rate and the chance', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('enter', 'leave-taken', 'leave-failed', 'shed', 'tick'), { maxLength: 400 }),
        fc.double({ min: 0, max: 0.999_999, noNaN: true }),
        (steps, chance) => {
          const time = clock();
          const load = intakeLoad({ now: time.now, random: () => chance });
          for (const step of steps) {
            if (step === 'enter') load.enter();
            else if (step === 'leave-taken') load.leave(true);
            else if (step === 'leave-failed') load.leave(false);
            else if (step === 'shed') load.shed();
            else time.advance(700);
            const seconds = load.retryAfterSeconds();
            assert.ok(Number.isInteger(seconds), `${seconds} is whole seconds`);
            assert.ok(seconds >= 1 && seconds <= MAX_RETRY_AFTER_SECONDS, `${seconds} within 1..30`);
          }
        },
      ),
    );
  });

  it('forgets deliveries older than its window: a rate that fell is the rate it reports', () => {
    const time = clock();
    const load = intakeLoad({ now: time.now, random: () => 0 });
    for (let i = 0; i < 1_000; i++) {
      load.enter();
      load.leave(true);
    }
    time.advance(30_000);
    for (let i = 0; i < 2; i++) {
      load.enter();
      load.leave(true);
    }
    for (let i = 0; i < 10; i++) load.enter();
    // 2 a second now, not the 1,000 of half a minute ago: ten in flight take five seconds.
    assert.equal(load.retryAfterSeconds(), 5);
  });
});
