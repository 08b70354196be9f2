// A vendor's callback sent as the platform sends it: a 503 (the door's deadline passed on a busy
// machine) is not the end, the platform sends the callback again after the Retry-After it was told.
import { parseRetryAfterMs } from '../../domain/retry-after.js';
import { sleep } from './time.js';

/** What the sender needs of one answer. */
export interface CallbackAnswer {
  status: number;
  retryAfter: string | null | undefined;
}

/**
 * Sends with `sendOnce` until the answer is not 503, at most `attempts` times, waiting as each 503's
 * Retry-After says (a second at most: enough for the door to take it). Answers every status seen,
 * the last one the callback's outcome. A 503 without a Retry-After throws: the platform would be
 * left guessing, and that is the door's defect, not the machine's.
 */
export async function sentAsThePlatformDoes(sendOnce: () => Promise<CallbackAnswer>, attempts = 10): Promise<number[]> {
  const statuses: number[] = [];
  while (statuses.length < attempts) {
    const answer = await sendOnce();
    statuses.push(answer.status);
    if (answer.status !== 503) return statuses;
    const waitMs = parseRetryAfterMs(answer.retryAfter);
    if (!(waitMs !== undefined && waitMs > 0)) {
      throw new Error(`a 503 without a Retry-After the platform could wait by: ${answer.retryAfter}`);
    }
    await sleep(Math.min(waitMs, 1_000));
  }
  return statuses;
}
