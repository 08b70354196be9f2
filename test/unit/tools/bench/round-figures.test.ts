// The bench's figures across rounds: a median and a range per figure, CPU per order in all and by
// process, a change against an earlier run called outside the noise only when the ranges part, and
// measurements in a new order every round.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  changesBetween,
  figuresOf,
  pairedRatios,
  type RoundMeasurement,
  roundOrders,
  roundSpread,
} from '../../../../tools/bench/round-figures.js';
import { seededRandom } from '../../../../tools/chaos/prng.js';

/** One round of `ours` at c=32 with `temporal` and `api` CPU per order and the throughput given. */
const round = (temporal: number, api: number, throughput = 36): RoundMeasurement => ({
  name: 'ours',
  concurrency: 32,
  throughput,
  p50: 40,
  p99: 90,
  cpuMsPerItem: { temporal, api, 'outside the bench': 100 },
});

describe("the bench's figures", () => {
  it('a figure is the median of its rounds with the lowest and highest round; an even count takes the middle two', () => {
    assert.deepEqual(roundSpread([3, 1, 2]), { median: 2, low: 1, high: 3, rounds: 3 });
    assert.deepEqual(roundSpread([4, 1, 3, 2]), { median: 2.5, low: 1, high: 4, rounds: 4 });
    assert.equal(roundSpread([]).rounds, 0);
  });

  it("CPU per order is the bench's processes together, by process beside it, what ran outside the bench left out", () => {
    const [ours] = figuresOf([round(24, 20), round(23, 21), round(25, 19)]);
    assert.deepEqual(ours?.cpuMsPerOrder, { median: 44, low: 44, high: 44, rounds: 3 });
    assert.deepEqual(ours?.cpuMsPerOrderByProcess?.temporal, { median: 24, low: 23, high: 25, rounds: 3 });
    assert.equal(ours?.cpuMsPerOrderByProcess?.['outside the bench'], undefined);
  });

  it('a change is outside the noise exactly when the two runs’ ranges do not overlap (generated)', () => {
    const rounds = fc.array(fc.double({ min: 1, max: 100, noNaN: true }), { minLength: 1, maxLength: 7 });
    fc.assert(
      fc.property(rounds, rounds, (before, after) => {
        const [change] = changesBetween(
          figuresOf(before.map((ms) => round(ms, 0))),
          figuresOf(after.map((ms) => round(ms, 0))),
        );
        const apart = Math.min(...after) > Math.max(...before) || Math.max(...after) < Math.min(...before);
        assert.equal(change?.figure, 'CPU ms per order');
        assert.equal(change?.outsideTheNoise, apart);
      }),
    );
    // The issue's own figures: 41.8 ms per order before, 52.5 after, each within a few ms over its rounds.
    const [dearer] = changesBetween(
      figuresOf([round(17, 24), round(18, 24), round(17.6, 24.2)]),
      figuresOf([round(24, 28), round(23, 29), round(24.5, 28)]),
    );
    assert.equal(dearer?.outsideTheNoise, true);
    assert.ok((dearer?.change ?? 0) > 9);
  });

  it('a ratio is taken within each round: a machine that speeds up or slows down between rounds leaves it alone (generated)', () => {
    const speeds = fc.array(fc.double({ min: 0.4, max: 2.5, noNaN: true }), { minLength: 1, maxLength: 9 });
    fc.assert(
      fc.property(speeds, fc.double({ min: 0.3, max: 3, noNaN: true }), (speedOfRound, ratio) => {
        const rounds = speedOfRound.flatMap((speed, index): RoundMeasurement[] => [
          { ...round(20, 20, 40 * speed * ratio), round: index + 1 },
          { ...round(30, 3, 40 * speed), name: 'engine floor', round: index + 1 },
        ]);
        const [paired] = pairedRatios(rounds, ['ours'], ['engine floor']);
        assert.equal(paired?.perRound.length, speedOfRound.length);
        for (const value of [paired?.spread.median, paired?.spread.low, paired?.spread.high]) {
          assert.ok(Math.abs((value ?? Number.NaN) - ratio) < 1e-9, `${value} against ${ratio}`);
        }
      }),
    );
  });

  it("the median of the rounds' ratios, not the ratio of the medians, which may pair a fast round with a slow one", () => {
    const pairs = [
      [60, 40],
      [70, 70],
      [120, 100],
    ];
    const rounds = pairs.flatMap(([ours, floor], index): RoundMeasurement[] => [
      { ...round(20, 20, ours), round: index + 1 },
      { ...round(30, 3, floor), name: 'engine floor', round: index + 1 },
    ]);
    const [paired] = pairedRatios(rounds, ['ours'], ['engine floor']);
    assert.deepEqual(paired?.perRound, [1.5, 1, 1.2]);
    assert.equal(paired?.spread.median, 1.2);
  });

  it('a round that measured only one side of a ratio is left out of it, and a level without the yardstick has no ratio', () => {
    const rounds: RoundMeasurement[] = [
      { ...round(20, 20, 50), round: 1 },
      { ...round(30, 3, 40), name: 'engine floor', round: 1 },
      { ...round(20, 20, 30), round: 2 },
      { ...round(30, 3, 20), name: 'engine floor', round: 3 },
      { ...round(20, 20, 30), concurrency: 8, round: 1 },
    ];
    assert.deepEqual(pairedRatios(rounds, ['ours', 'ours on MySQL'], ['engine floor']), [
      {
        name: 'ours',
        yardstick: 'engine floor',
        concurrency: 32,
        perRound: [1.25],
        spread: { median: 1.25, low: 1.25, high: 1.25, rounds: 1 },
      },
    ]);
  });

  it('measurements run in a new order every round, each of them once, the same orders from the same seed (generated)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 }), fc.integer({ min: 2, max: 8 }), (seed, count) => {
        const names = Array.from({ length: count }, (_, index) => `m${index}`);
        const orders = roundOrders(names, 5, seededRandom(seed));
        for (const order of orders) assert.deepEqual([...order].sort(), [...names].sort());
        for (let at = 1; at < orders.length; at += 1) assert.notDeepEqual(orders[at], orders[at - 1]);
        assert.deepEqual(roundOrders(names, 5, seededRandom(seed)), orders);
      }),
    );
  });
});
