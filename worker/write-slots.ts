// The order writes' slots: one per pooled connection the worker leaves them, and never one more
// while a write still runs. Temporal's fixed-size supplier frees a local activity's slot the
// moment its attempt times out, though the write goes on holding its connection until its COMMIT
// answers; the next write would then wait for a connection inside its own attempt — the queue the
// slots exist to prevent (docs/architecture.md, decision 30). Here a slot that Temporal has let go
// stays taken until the write that held it has returned.
import type {
  CustomSlotSupplier,
  LocalActivitySlotInfo,
  SlotMarkUsedContext,
  SlotPermit,
  SlotReleaseContext,
} from '@temporalio/worker';

interface WritePermit extends SlotPermit {
  used: boolean;
}

export class WriteSlots implements CustomSlotSupplier<LocalActivitySlotInfo> {
  readonly type = 'custom';
  /** Handed out and not yet released by Temporal. */
  private permits = 0;
  /** Of those, the ones a write was started on. */
  private usedPermits = 0;
  /** Write functions running now, whether or not Temporal still waits for them. */
  private running = 0;
  /** reserveSlot calls waiting for a slot, first come first served. */
  private readonly waiting: ((permit: WritePermit) => void)[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`WriteSlots: size must be a positive integer, not ${size}`);
  }

  /** Slots taken: the permits out, and the writes still running after Temporal released theirs. */
  taken(): number {
    return this.permits + Math.max(0, this.running - this.usedPermits);
  }

  reserveSlot(_ctx: unknown, abortSignal: AbortSignal): Promise<SlotPermit> {
    const permit = this.tryReserveSlot();
    if (permit) return Promise.resolve(permit);
    // The SDK's own abort reason, as it expects it back (an AbortError).
    const aborted = () => abortSignal.reason as Error;
    return new Promise((resolve, reject) => {
      if (abortSignal.aborted) return reject(aborted());
      const waiter = (granted: WritePermit) => {
        abortSignal.removeEventListener('abort', abort);
        resolve(granted);
      };
      // Temporal no longer needs this slot (the worker shuts down): it gives up its place.
      const abort = () => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(aborted());
      };
      abortSignal.addEventListener('abort', abort, { once: true });
      this.waiting.push(waiter);
    });
  }

  tryReserveSlot(): WritePermit | null {
    if (this.taken() >= this.size) return null;
    this.permits += 1;
    return { used: false };
  }

  markSlotUsed(ctx: SlotMarkUsedContext<LocalActivitySlotInfo>): void {
    const permit = ctx.permit as WritePermit;
    if (permit.used) return;
    permit.used = true;
    this.usedPermits += 1;
  }

  releaseSlot(ctx: SlotReleaseContext<LocalActivitySlotInfo>): void {
    const permit = ctx.permit as WritePermit;
    this.permits -= 1;
    if (permit.used) this.usedPermits -= 1;
    this.wakeWaiting();
  }

  /** Runs one write, counting it as running until it has returned or thrown. */
  async track<T>(write: () => Promise<T>): Promise<T> {
    this.running += 1;
    try {
      return await write();
    } finally {
      this.running -= 1;
      this.wakeWaiting();
    }
  }

  private wakeWaiting(): void {
    while (this.waiting.length > 0) {
      const permit = this.tryReserveSlot();
      if (!permit) return;
      (this.waiting.shift() as (permit: WritePermit) => void)(permit);
    }
  }
}
