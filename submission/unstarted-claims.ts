// Starts the OA approvals whose key was claimed and whose start nobody confirmed, once the claim is
// old enough that no delivery is still at work on it. An OA connector's reply needs the claim only
// (docs/architecture.md, decision 17): a start still running when the reply is due goes on after
// it, and the vendor, answered success, never sends the event again. A process that dies before
// that start is confirmed leaves a claim that only this finds. Every API process with a connector
// on runs it; several at once still start one workflow per key: the workflow id is the key's, and a
// start attaches to a running run and never replaces a closed one, as a delivery's start does.
import type { Logger } from 'pino';
import { findUnstartedClaims, type IdempotencyRecord } from '../services/db/idempotency-records.js';
import { isTemporalUnreachable } from '../services/temporal/connection.js';
import { settledWithin } from './accept-oa-event.js';
import { startClaimFromRecord } from './operator-decisions/claims.js';
import type { SubmissionDeps } from './start-path-types.js';

/** The most claims one sweep starts; the next sweep takes the rest. */
const CLAIMS_PER_SWEEP = 50;
/** The longest pause between two sweeps. */
const MAX_SWEEP_INTERVAL_MS = 10_000;

export interface UnstartedClaims {
  /** One sweep now (what the timer runs): how many claims it started. */
  sweep(): Promise<number>;
  /** No further sweep; resolves once the one under way has ended, or after `withinMs`. */
  stop(withinMs: number): Promise<void>;
}

export function startUnstartedClaims(options: {
  deps: Pick<SubmissionDeps, 'prisma' | 'temporal' | 'taskQueue' | 'writePolicy' | 'startTimeoutMs'>;
  /** OA_UNSTARTED_CLAIM_AFTER_MS: how old an unstarted claim is before it is started here. */
  afterMs: number;
  log: Pick<Logger, 'info' | 'warn'>;
}): UnstartedClaims {
  const { deps, afterMs, log } = options;
  let running: Promise<number> | undefined;
  let stopped = false;
  // Claims this process leaves to an operator (a closed run holds the id) or saw fail: each is
  // said once, not every sweep.
  const leftAlone = new Set<string>();

  const startOne = async (key: string, claim: IdempotencyRecord) => {
    // The edge's start, never an operator's: a closed run that holds the id is not replaced (a
    // run terminated before its first status is for a person to judge, and `awaiting` lists it).
    const started = await deps.temporal.withDeadline(Date.now() + deps.startTimeoutMs, () =>
      startClaimFromRecord(deps, claim, 'REJECT_DUPLICATE'),
    );
    if (started.closedRunExists) {
      if (!leftAlone.has(key)) {
        leftAlone.add(key);
        log.warn(
          { idempotencyKey: key },
          'claimed approval not started: a closed run holds its id; see `orders-cli awaiting`',
        );
      }
      return false;
    }
    log.info(
      { idempotencyKey: key, claimedAt: claim.updatedAt },
      `claimed approval started: no start was confirmed within ${afterMs} ms of its claim`,
    );
    return true;
  };

  const sweepOnce = async (): Promise<number> => {
    const claims = await findUnstartedClaims(deps.prisma, {
      claimedBefore: new Date(Date.now() - afterMs),
      limit: CLAIMS_PER_SWEEP + leftAlone.size,
    });
    let started = 0;
    for (const claim of claims) {
      if (stopped || started >= CLAIMS_PER_SWEEP) break;
      const key = claim.idempotencyKey;
      if (leftAlone.has(key)) continue;
      try {
        if (await startOne(key, claim)) started += 1;
      } catch (error) {
        // Temporal away: the next sweep tries again, from the oldest. Any other failure is this
        // claim's: said once, and the others go on.
        if (isTemporalUnreachable(error)) {
          log.warn({ err: error, idempotencyKey: key }, 'claimed approval not started: Temporal is not reachable');
          break;
        }
        leftAlone.add(key);
        log.warn({ err: error, idempotencyKey: key }, 'claimed approval not started; see `orders-cli awaiting`');
      }
    }
    return started;
  };
  const sweep = () =>
    (running ??= sweepOnce()
      .catch((error: unknown) => {
        log.warn({ err: error }, 'could not look for unstarted approval claims; the next sweep tries again');
        return 0;
      })
      .finally(() => (running = undefined)));
  const timer = setInterval(() => void sweep(), Math.min(afterMs, MAX_SWEEP_INTERVAL_MS));
  timer.unref();
  return {
    sweep,
    stop: async (withinMs) => {
      stopped = true;
      clearInterval(timer);
      if (running) await settledWithin([running], withinMs);
    },
  };
}
