// Starts the OA approvals whose key was claimed and whose start nobody confirmed, once the claim is
// old enough that no delivery is still at work on it. An OA connector's reply needs the claim only
// (docs/architecture.md, decision 17): a start still running when the reply is due goes on after
// it, and the vendor, answered success, never sends the event again. A process that dies before
// that start is confirmed leaves a claim that only this finds. Every API process with a connector
// on runs it; several at once still start one workflow per key, because each start goes through
// the one start path.
import type { Logger } from 'pino';
import { IdempotencyConflictError } from '../../domain/errors.js';
import { isOaVendor, OA_VENDORS } from '../../domain/oa-approval.js';
import { findUnstartedClaims } from '../db/idempotency-records.js';
import { type SubmissionDeps, submitApprovalForm } from './submit-approval.js';

/** The most claims one sweep starts; the next sweep takes the rest. */
const CLAIMS_PER_SWEEP = 50;
/** The longest pause between two sweeps. */
const MAX_SWEEP_INTERVAL_MS = 10_000;

export interface UnstartedClaims {
  /** One sweep now (what the timer runs): how many claims it started. */
  sweep(): Promise<number>;
  /** No further sweep; resolves once the one under way has ended. */
  stop(): Promise<void>;
}

export function startUnstartedClaims(options: {
  /** Without an intake: these starts are the service's own work, never shed. */
  deps: Omit<SubmissionDeps, 'intake'>;
  /** OA_UNSTARTED_CLAIM_AFTER_MS: how old an unstarted claim is before it is started here. */
  afterMs: number;
  log: Pick<Logger, 'info' | 'warn'>;
}): UnstartedClaims {
  const { deps, afterMs, log } = options;
  let running: Promise<number> | undefined;
  let stopped = false;

  const sweepOnce = async (): Promise<number> => {
    const claims = await findUnstartedClaims(deps.prisma, {
      sources: OA_VENDORS,
      claimedBefore: new Date(Date.now() - afterMs),
      limit: CLAIMS_PER_SWEEP,
    });
    let started = 0;
    for (const claim of claims) {
      if (stopped) break;
      if (!isOaVendor(claim.source)) continue;
      try {
        const submission = await submitApprovalForm(deps, { vendor: claim.source, instanceId: claim.approvalNo });
        started += 1;
        log.info(
          { idempotencyKey: claim.idempotencyKey, status: submission.status, claimedAt: claim.updatedAt },
          `claimed approval started: no start was confirmed within ${afterMs} ms of its claim`,
        );
      } catch (error) {
        if (error instanceof IdempotencyConflictError) continue;
        // Temporal or the database is away: the next sweep tries again, from the oldest.
        log.warn({ err: error, idempotencyKey: claim.idempotencyKey }, 'claimed approval still not started');
        break;
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
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
