// What the service does with one approval event of an OA connector (docs/architecture.md,
// decision 17), within the time the vendor waits for its reply: record the event, then — for an
// APPROVED instance — claim its key and start its order workflow through the one start path; for a
// revocation after the order was written, raise an operator alert; for anything else, nothing more.
// The claim is what must happen before the reply: a start that is merely slow finishes in the
// background, and the vendor's redelivery is a duplicate of the same key.
import type { Logger } from 'pino';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import type { OaInstanceStatus, OaVendor } from '../../domain/oa-approval.js';
import { alertLogLine, type AlertChange } from '../db/duplicate-scan.js';
import { recordOaEvent } from '../db/oa-events.js';
import { recordRevocationAlert } from '../db/revocation-alerts.js';
import { invalidInput, KnownFailure, RETRY_AFTER_SECONDS } from '../failure-outcome.js';
import type { ProductMetrics } from '../metrics/product-metrics.js';
import { type Submission, type SubmissionDeps, submitApprovalForm } from './submit-approval.js';

/** One approval event as a connector read it (edges/connectors/connector.ts `OaEvent`). */
export interface ApprovalEvent {
  vendor: OaVendor;
  eventId: string;
  eventType: string;
  instanceId: string;
  status: OaInstanceStatus;
}

export type ApprovalEventOutcome =
  /** The order workflow was started, or the key's workflow already existed (`submission.duplicate`). */
  | { kind: 'submitted'; idempotencyKey: string; submission: Submission }
  /** The key is claimed; its start was still running when the reply was due and goes on without it. */
  | { kind: 'claimed'; idempotencyKey: string }
  /** A revocation after the order was written: one alert for the key (undefined: alerted before). */
  | { kind: 'alerted'; idempotencyKey: string; alert: AlertChange | undefined }
  /** Recorded, nothing else to do (rejected, pending, a revocation before any order). */
  | { kind: 'recorded'; idempotencyKey: string };

/** A revocation of an instance: its order, if one was written, stands and an operator is told. */
const REVOCATIONS: readonly OaInstanceStatus[] = ['REVOKED', 'CANCELED', 'DELETED'];

export interface ApprovalEventDeps extends SubmissionDeps {
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  metrics: ProductMetrics;
}

/**
 * Handles the event within `replyWithinMs`. Throws (the vendor is answered 503 and redelivers)
 * when the event could not be recorded or the key not claimed in that time, or the database or
 * Temporal failed before the claim or the start answered; never releases a claim.
 */
export async function acceptApprovalEvent(
  deps: ApprovalEventDeps,
  event: ApprovalEvent,
  replyWithinMs: number,
): Promise<ApprovalEventOutcome> {
  let idempotencyKey: string;
  try {
    idempotencyKey = idempotencyKeyFor(event.instanceId, 'MAIN');
  } catch (error) {
    throw new KnownFailure(invalidInput([{ pointer: '', message: `instance id: ${(error as Error).message}` }]));
  }
  let claimed = false;
  const work = (async (): Promise<ApprovalEventOutcome> => {
    const first = await recordOaEvent(deps.prisma, { ...event, idempotencyKey });
    deps.log.info(
      { vendor: event.vendor, eventId: event.eventId, instanceId: event.instanceId, status: event.status, first },
      first ? 'approval event recorded' : 'approval event redelivered',
    );
    if (event.status === 'APPROVED') {
      const submission = await submitApprovalForm(deps, event, () => (claimed = true));
      return { kind: 'submitted', idempotencyKey, submission };
    }
    if (REVOCATIONS.includes(event.status)) {
      const alert = await recordRevocationAlert(deps.prisma, idempotencyKey);
      if (alert) {
        deps.metrics.alertRecorded(alert.kind, alert.change);
        deps.log.warn({ alertId: alert.alertId, kind: alert.kind, idempotencyKey }, alertLogLine(alert));
        return { kind: 'alerted', idempotencyKey, alert };
      }
    }
    return { kind: 'recorded', idempotencyKey };
  })();

  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), replyWithinMs);
  });
  try {
    const outcome = await Promise.race([work, late]);
    if (outcome !== 'late') return outcome;
  } finally {
    clearTimeout(timer);
  }
  // The reply is due. What is still running finishes on its own; its end is only logged.
  work.then(
    (outcome) => deps.log.info({ idempotencyKey, outcome: outcome.kind }, 'approval event finished after its reply'),
    (error: unknown) => deps.log.warn({ err: error, idempotencyKey }, 'approval event failed after its reply'),
  );
  if (claimed) return { kind: 'claimed', idempotencyKey };
  throw new KnownFailure({
    kind: 'retry-later',
    slug: 'database-unavailable',
    retryAfterSeconds: RETRY_AFTER_SECONDS,
    message: `the key ${idempotencyKey} could not be claimed within ${replyWithinMs} ms; send the event again`,
  });
}
