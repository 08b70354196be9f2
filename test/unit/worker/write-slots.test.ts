// The order writes' slot supplier against a model of how Temporal uses it: a write reserves a
// slot, is marked as using it, runs holding a pooled connection, and either returns before its
// slot is released or times out — Temporal releases the slot while the write still runs. However
// the writes interleave, no more of them hold a connection at once than there are slots.
import assert from 'node:assert/strict';
import { setImmediate as flushed } from 'node:timers/promises';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { CustomSlotSupplier, LocalActivitySlotInfo, SlotPermit } from '@temporalio/worker';
import { WriteSlots } from '../../../worker/write-slots.js';

type Supplier = CustomSlotSupplier<LocalActivitySlotInfo> & {
  track<T>(write: () => Promise<T>): Promise<T>;
};

/** Temporal's own fixed-size supplier, as it counts: permits only. The broken variant. */
class PermitsOnly implements Supplier {
  readonly type = 'custom';
  private permits = 0;
  private readonly waiting: ((permit: SlotPermit) => void)[] = [];
  constructor(private readonly size: number) {}
  reserveSlot(): Promise<SlotPermit> {
    if (this.permits < this.size) {
      this.permits += 1;
      return Promise.resolve({});
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  tryReserveSlot(): SlotPermit | null {
    return null;
  }
  markSlotUsed(): void {}
  releaseSlot(): void {
    const next = this.waiting.shift();
    if (next) next({});
    else this.permits -= 1;
  }
  track<T>(write: () => Promise<T>): Promise<T> {
    return write();
  }
}

const slotInfo: LocalActivitySlotInfo = { type: 'local-activity', activityType: 'writeOrder' };

interface Write {
  timesOut: boolean;
  state: 'asking' | 'granted' | 'running' | 'released-running' | 'returned' | 'done';
  permit?: SlotPermit;
  finish?: () => void;
}

/**
 * Plays `writes` through `supplier`, taking at each step the action `choices` picks among those
 * possible; the most writes seen holding a connection at once.
 */
async function play(supplier: Supplier, writes: Write[], choices: number[]): Promise<number> {
  let holding = 0;
  let most = 0;
  const never = new AbortController().signal;
  for (const write of writes) {
    void supplier.reserveSlot({} as never, never).then((permit) => {
      write.permit = permit;
      write.state = 'granted';
    });
  }
  await flushed();
  let step = 0;
  for (;;) {
    const possible = writes.filter((write) => write.state !== 'asking' && write.state !== 'done');
    if (possible.length === 0) break;
    const write = possible[(choices[step % choices.length] ?? 0) % possible.length] as Write;
    step += 1;
    const permit = write.permit as SlotPermit;
    if (write.state === 'granted') {
      supplier.markSlotUsed({ slotInfo, permit });
      write.state = 'running';
      holding += 1;
      most = Math.max(most, holding);
      void supplier.track(() => new Promise<void>((resolve) => (write.finish = resolve)));
    } else if (write.state === 'running' && write.timesOut) {
      // The attempt's start-to-close ran out: Temporal frees the slot, the write goes on.
      supplier.releaseSlot({ slotInfo, permit });
      write.state = 'released-running';
    } else if (write.state === 'running' || write.state === 'released-running') {
      // The COMMIT answered: the write returns and gives its connection back.
      write.finish?.();
      holding -= 1;
      write.state = write.state === 'running' ? 'returned' : 'done';
    } else if (write.state === 'returned') {
      supplier.releaseSlot({ slotInfo, permit });
      write.state = 'done';
    }
    await flushed();
  }
  assert.deepEqual(
    writes.filter((write) => write.state !== 'done').length,
    0,
    'every write was given a slot in the end',
  );
  return most;
}

const cases = fc.record({
  size: fc.integer({ min: 1, max: 4 }),
  timeouts: fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }),
  choices: fc.array(fc.nat({ max: 50 }), { minLength: 1, maxLength: 40 }),
});

const newWrites = (timeouts: boolean[]): Write[] =>
  timeouts.map((timesOut) => ({ timesOut, state: 'asking' as const }));

describe("the order writes' slots", () => {
  it('never let more writes hold a connection than there are slots, timed-out attempts included', async () => {
    await fc.assert(
      fc.asyncProperty(cases, async ({ size, timeouts, choices }) => {
        const most = await play(new WriteSlots(size), newWrites(timeouts), choices);
        assert.ok(most <= size, `${most} writes held a connection at once on ${size} slot(s)`);
      }),
      { numRuns: 300 },
    );
  });

  it('counting permits only, as the fixed-size supplier does, is caught by the same cases', async () => {
    const found = await fc.check(
      fc.asyncProperty(cases, async ({ size, timeouts, choices }) => {
        const most = await play(new PermitsOnly(size), newWrites(timeouts), choices);
        return most <= size;
      }),
      { numRuns: 300 },
    );
    assert.ok(found.failed, 'a timed-out attempt let one write too many hold a connection');
  });

  it('hands a waiting reservation its slot when a timed-out write returns, and lets a cancelled one go', async () => {
    const slots = new WriteSlots(1);
    const never = new AbortController().signal;
    const first = await slots.reserveSlot({}, never);
    slots.markSlotUsed({ slotInfo, permit: first });
    let finish = () => {};
    const running = slots.track(() => new Promise<void>((resolve) => (finish = resolve)));
    slots.releaseSlot({ slotInfo, permit: first });

    const cancelled = new AbortController();
    const givenUp = slots.reserveSlot({}, cancelled.signal);
    let granted = false;
    const second = slots.reserveSlot({}, never).then((permit) => ((granted = true), permit));
    await flushed();
    assert.equal(granted, false, 'no slot while the timed-out write still holds its connection');
    cancelled.abort(Object.assign(new Error('no longer needed'), { name: 'AbortError' }));
    await assert.rejects(givenUp, { name: 'AbortError' });

    finish();
    await running;
    assert.ok(await second, 'the slot comes free once the write has returned');
    assert.equal(slots.taken(), 1);
    assert.equal(slots.tryReserveSlot(), null);
  });
});
