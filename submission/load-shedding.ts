// Load shedding around a delivery (docs/architecture.md, decision 34): the entry points of
// ./submit-approval.ts take every delivery through `shedUnderLoad`, which holds the delivery's place
// in the process's intake (./intake-load.ts) — one beyond INTAKE_MAX_IN_FLIGHT is turned away before
// it claims anything — and answers a delivery the start path shed for want of its caller's time the
// same way: `IntakeOverloadedError`, a 503 with the Retry-After the intake's rate gives.
import { type IntakeLoad, RETRY_AFTER_WITHOUT_A_RATE_SECONDS } from './intake-load.js';

/**
 * This process could not take the delivery inside its caller's deadline: too many at once, or too
 * little time left after waiting in the process. Calling again later is safe and the answer says
 * when (docs/architecture.md, decision 34): nothing was claimed, or what was claimed or started
 * goes on and is kept, for the resend to find.
 */
export class IntakeOverloadedError extends Error {
  constructor(
    readonly retryAfterSeconds: number,
    reason: string,
  ) {
    super(`this instance is too busy to take the delivery in time (${reason}); send it again after the Retry-After`);
    this.name = 'IntakeOverloadedError';
  }
}

/** Inside the start path: the delivery is shed for the reason given (see `IntakeOverloadedError`). */
export class Shed extends Error {}

/** A delivery's place in the intake, as the start path sees it. */
export interface IntakePlace {
  /**
   * A claim or a start the answer did not wait for: it still holds a connection, so the place is
   * given back only once all of these have settled.
   */
  goingOn: Promise<unknown>[];
  /** Temporal confirmed this delivery's start. */
  startConfirmed(): void;
  /** Epoch ms of the last start Temporal confirmed to this process; undefined before the first, or with no intake. */
  readonly lastStartConfirmedAt: number | undefined;
}

/**
 * Takes one delivery (`deliver`) through the process's intake: refuses it when the intake is full,
 * gives its place back when it is done, and turns a `Shed` into the `IntakeOverloadedError` its
 * caller hears. With no intake (the MCP tool over stdio), nothing is capped and only a `Shed` is
 * turned into the error.
 */
export async function shedUnderLoad<T>(
  intake: IntakeLoad | undefined,
  deliver: (place: IntakePlace) => Promise<T>,
): Promise<T> {
  const overloaded = (reason: string) => {
    intake?.shed();
    return new IntakeOverloadedError(intake?.retryAfterSeconds() ?? RETRY_AFTER_WITHOUT_A_RATE_SECONDS, reason);
  };
  if (intake && !intake.enter()) throw overloaded(`${intake.inFlight} deliveries in flight, INTAKE_MAX_IN_FLIGHT`);
  // A claim or a start the answer did not wait for still holds a connection: the delivery's place
  // is given back when that settles, so INTAKE_MAX_IN_FLIGHT bounds the work, not only the answers.
  const goingOn: Promise<unknown>[] = [];
  const place: IntakePlace = {
    goingOn,
    startConfirmed: () => intake?.startConfirmed(),
    get lastStartConfirmedAt() {
      return intake?.lastStartConfirmedAt;
    },
  };
  let taken = false;
  try {
    const submission = await deliver(place);
    taken = true;
    return submission;
  } catch (error) {
    if (error instanceof Shed) throw overloaded(error.message);
    throw error;
  } finally {
    if (goingOn.length === 0) intake?.leave(taken);
    else void Promise.allSettled(goingOn).then(() => intake?.leave(taken));
  }
}
