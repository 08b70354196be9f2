// How busy one process's intake is: the deliveries it is taking now, the rate it takes them at, and
// from those two whether one more may come in and how long a sender that is turned away should
// wait (docs/architecture.md, decision 34). Plain arithmetic over a clock and a random source that
// are passed in, so the rules are tested without a server.

/** Deliveries taken per second are counted over this many one-second buckets. */
const RATE_WINDOW_SECONDS = 10;
/** The most a shed sender is asked to wait: beyond it an OA gives up on the event altogether. */
export const MAX_RETRY_AFTER_SECONDS = 30;
/** What a shed sender hears before this process has taken a single delivery it could count. */
export const RETRY_AFTER_WITHOUT_A_RATE_SECONDS = 5;

export interface IntakeLoadOptions {
  /** The most deliveries taken at once; a delivery beyond it is shed at once. Unset: no cap. */
  maxInFlight?: number | undefined;
  now?: () => number;
  random?: () => number;
}

export interface IntakeLoad {
  /** Takes a place for one delivery, or says the process is full (the caller sheds it). */
  enter(): boolean;
  /** Gives the place back; `taken` when the delivery was accepted (it counts toward the rate). */
  leave(taken: boolean): void;
  /** A delivery was shed: the senders coming back after their Retry-After count as load. */
  shed(): void;
  /**
   * Whole seconds a shed sender waits: the time this process needs, at the rate it has been taking
   * deliveries, to take the ones in flight and those just shed (which come back), spread at random
   * over up to twice that so they do not all come back in the same second. 1 to 30.
   */
  retryAfterSeconds(): number;
  readonly inFlight: number;
  /** Temporal confirmed a start this process asked for. */
  startConfirmed(): void;
  /** Epoch ms of the last start Temporal confirmed to this process; undefined before the first. */
  readonly lastStartConfirmedAt: number | undefined;
}

export function intakeLoad({ maxInFlight, now = Date.now, random = Math.random }: IntakeLoadOptions = {}): IntakeLoad {
  let inFlight = 0;
  let lastStartConfirmedAt: number | undefined;
  // Per one-second bucket (indexed by whole seconds since the epoch): deliveries taken, and shed.
  const taken = new Map<number, number>();
  const shedAt = new Map<number, number>();

  const second = () => Math.floor(now() / 1000);
  const count = (buckets: Map<number, number>) => {
    const current = second();
    buckets.set(current, (buckets.get(current) ?? 0) + 1);
    for (const bucket of buckets.keys()) if (bucket <= current - RATE_WINDOW_SECONDS) buckets.delete(bucket);
  };
  const sumSince = (buckets: Map<number, number>, fromSecond: number) => {
    let sum = 0;
    for (const [bucket, n] of buckets) if (bucket >= fromSecond) sum += n;
    return sum;
  };

  return {
    enter() {
      if (maxInFlight !== undefined && inFlight >= maxInFlight) return false;
      inFlight += 1;
      return true;
    },
    leave(wasTaken) {
      inFlight = Math.max(0, inFlight - 1);
      if (wasTaken) count(taken);
    },
    shed() {
      count(shedAt);
    },
    retryAfterSeconds() {
      const current = second();
      // The time the window has been counting, at least a second, so a young process does not read
      // its first deliveries as its rate.
      const oldest = Math.min(...taken.keys(), current);
      const elapsed = Math.max(1, Math.min(RATE_WINDOW_SECONDS, (now() - oldest * 1000) / 1000));
      const perSecond = sumSince(taken, current - RATE_WINDOW_SECONDS + 1) / elapsed;
      const waiting = inFlight + sumSince(shedAt, current - 1);
      const drainSeconds = perSecond > 0 ? waiting / perSecond : RETRY_AFTER_WITHOUT_A_RATE_SECONDS;
      const spread = drainSeconds * (1 + random());
      return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(spread)));
    },
    get inFlight() {
      return inFlight;
    },
    startConfirmed() {
      lastStartConfirmedAt = now();
    },
    get lastStartConfirmedAt() {
      return lastStartConfirmedAt;
    },
  };
}
