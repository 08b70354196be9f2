// What the service does with one approval event of an OA connector (docs/architecture.md,
// decision 17), within the time the vendor waits for its reply: record the event, then — for an
// APPROVED instance — claim its key and start its order workflow through the one start path; for a
// revocation after the order was written, raise an operator alert; for anything else, nothing more.
// The claim is what must happen before the reply: a start that is merely slow finishes in the
// background, and the vendor's redelivery is a duplicate of the same key.
import type { Logger } from 'pino';
import { idempotencyKeyFor } from '../domain/idempotency-key.js';
import type { OaInstanceStatus, OaVendor } from '../domain/oa-approval.js';
import { alertLogLine, type AlertChange } from '../services/db/duplicate-scan.js';
import { oaEventOutOfBounds, recordOaEvent } from '../services/db/oa-events.js';
import { recordRevocationAlert } from '../services/db/revocation-alerts.js';
import { IdempotencyConflictError, KeySourceConflictError } from '../domain/errors.js';
import { type FormMappingFile, isOrderDefinition } from '../domain/form-mapping.js';
import { raceDeadline } from './deadline.js';
import { KnownFailure, RETRY_AFTER_SECONDS } from './failure-outcome.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import type { Client } from '@temporalio/client';
import type { SubmissionConfig } from './settings.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { IntakeLoad } from './intake-load.js';
import type { DeliveryOptions, Submission, SubmissionDeps } from './start-path-types.js';
import { submissionDepsFrom, submitApprovalForm } from './submit-approval.js';

/** One approval event as a connector read it (vendors/connector.ts `OaEvent`). */
export interface ApprovalEvent {
  vendor: OaVendor;
  eventId: string;
  eventType: string;
  instanceId: string;
  status: OaInstanceStatus;
  /** The approval definition (Feishu `approval_code`, DingTalk `processCode`), when the event names it. */
  definitionCode?: string | undefined;
}

export type ApprovalEventOutcome =
  /** The order workflow was started, or the key's workflow already existed (`submission.duplicate`). */
  | { kind: 'submitted'; idempotencyKey: string; submission: Submission }
  /** The key is claimed; its start was still running when the reply was due and goes on without it. */
  | { kind: 'claimed'; idempotencyKey: string }
  /** A revocation after the order was written: one alert for the key (undefined: alerted before). */
  | { kind: 'alerted'; idempotencyKey: string; alert: AlertChange | undefined }
  /** Recorded, nothing else to do (rejected, pending, a revocation before any order). */
  | { kind: 'recorded'; idempotencyKey: string }
  /** An instance of an approval definition the mapping file does not list: acknowledged, ignored. */
  | { kind: 'not-an-order'; idempotencyKey: undefined; definitionCode: string | undefined }
  /**
   * Acknowledged and logged, nothing done: the instance id cannot be a key, or the key belongs to
   * another source (then also counted and listed by `orders-cli awaiting`). Answering an error
   * would only make the vendor send it again, forever.
   */
  | { kind: 'unusable'; idempotencyKey: string | undefined; reason: string };

/** A revocation of an instance: its order, if one was written, stands and an operator is told. */
const REVOCATIONS: readonly OaInstanceStatus[] = ['REVOKED', 'CANCELED', 'DELETED'];

export interface ApprovalEventDeps extends SubmissionDeps {
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  metrics: ProductMetrics;
  /** The mapping file: which approval definitions are orders. */
  formMapping: FormMappingFile | undefined;
  /** How this process takes every event's delivery: the worker it hosts and its intake. */
  deliveryOptions: DeliveryOptions;
  /** The process's events whose work goes on after their reply. */
  approvalsInFlight: ApprovalEventsInFlight;
}

/**
 * What the doors of OA events read of the settings: the start path's, the mapping file, and whether
 * the process hosts the worker.
 */
export type ApprovalEventConfig = SubmissionConfig & {
  http: { hostsWorker: boolean };
  connectors: { formMapping: { file: FormMappingFile } | undefined };
};

/** What every door of OA events (the callbacks, the connections) hands `acceptApprovalEvent`. */
export function approvalEventDepsFrom(parts: {
  config: ApprovalEventConfig;
  prisma: PrismaClient;
  temporal: Client;
  intake: IntakeLoad;
  log: ApprovalEventDeps['log'];
  metrics: ProductMetrics;
  approvalsInFlight: ApprovalEventsInFlight;
}): ApprovalEventDeps {
  return {
    ...submissionDepsFrom(parts.config, parts.prisma, parts.temporal),
    log: parts.log,
    metrics: parts.metrics,
    formMapping: parts.config.connectors.formMapping?.file,
    deliveryOptions: { workerInProcess: parts.config.http.hostsWorker, intake: parts.intake },
    approvalsInFlight: parts.approvalsInFlight,
  };
}

/** When the vendor's reply is due, in epoch milliseconds, and when its callback arrived. */
export interface ReplyDeadline {
  arrivedAt: number;
  replyBy: number;
}

/**
 * How long the service may take before it replies: the vendor's deadline less a margin for the
 * network and the reply itself (a third of it, at least half a second), e.g. 2 s of Feishu's 3 s.
 */
export function replyBudgetMs(vendorDeadlineMs: number): number {
  return Math.max(100, vendorDeadlineMs - Math.max(500, Math.round(vendorDeadlineMs / 3)));
}

/**
 * Handles the event by `replyBy`. Throws (the vendor is answered 503 and redelivers) when the event
 * could not be recorded or the key not claimed by then, or the database or Temporal failed before
 * the claim or the start answered; never releases a claim.
 */
export async function acceptApprovalEvent(
  deps: ApprovalEventDeps,
  event: ApprovalEvent,
  { arrivedAt, replyBy }: ReplyDeadline,
): Promise<ApprovalEventOutcome> {
  if (deps.formMapping && !isOrderDefinition(deps.formMapping, event.vendor, event.definitionCode)) {
    deps.log.info(
      { vendor: event.vendor, eventId: event.eventId, definitionCode: event.definitionCode },
      'approval event ignored: its approval definition is not an order (OA_FORM_MAPPING definitions)',
    );
    return { kind: 'not-an-order', idempotencyKey: undefined, definitionCode: event.definitionCode };
  }
  // An authentic event whose ids the columns cannot hold, or whose instance id cannot be a key, is
  // acknowledged and logged, and nothing is recorded: a 500 would bring it back, for ever.
  let idempotencyKey: string;
  try {
    idempotencyKey = idempotencyKeyFor(event.instanceId, 'MAIN');
  } catch (error) {
    return unusable(deps, event, `instance id: ${(error as Error).message}`);
  }
  const outOfBounds = oaEventOutOfBounds(event);
  if (outOfBounds) return unusable(deps, event, outOfBounds);
  let claimed = false;
  const work = (async (): Promise<ApprovalEventOutcome> => {
    const first = await recordOaEvent(deps.prisma, { ...event, idempotencyKey });
    deps.log.info(
      { vendor: event.vendor, eventId: event.eventId, instanceId: event.instanceId, status: event.status, first },
      first ? 'approval event recorded' : 'approval event redelivered',
    );
    if (event.status === 'APPROVED') {
      try {
        // Only a delivery that arrived too late to be claimed in time is shed here; the reply
        // itself is raced below, and what runs past it goes on to the start.
        const submission = await submitApprovalForm({
          deps,
          form: event,
          options: {
            ...deps.deliveryOptions,
            onClaimed: () => (claimed = true),
            deadline: { arrivedAt, answerBy: replyBy, goesOnAfterAnswer: true },
          },
        });
        return { kind: 'submitted', idempotencyKey, submission };
      } catch (error) {
        if (!(error instanceof IdempotencyConflictError)) throw error;
        // Another door claimed the instance's key first: the start path counted and recorded it
        // for `orders-cli awaiting` (docs/architecture.md, decision 38), the vendor is acknowledged.
        deps.log.warn(
          { idempotencyKey, err: error },
          error instanceof KeySourceConflictError
            ? 'approval event refused: another door holds its key; listed by `orders-cli awaiting`'
            : 'approval event unusable: its key belongs to another order',
        );
        return { kind: 'unusable', idempotencyKey, reason: error.message };
      }
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

  const outcome = await raceDeadline(work, replyBy, { resolve: 'late' as const });
  if (outcome !== 'late') return outcome;
  // The reply is due. What is still running finishes on its own. The vendor hears success and
  // will not send the event again, so a claimed key whose start then fails is started again here,
  // and one whose process dies first is started by ./unstarted-claims.ts.
  const finishing = work.then(
    (outcome) => deps.log.info({ idempotencyKey, outcome: outcome.kind }, 'approval event finished after its reply'),
    async (error: unknown) => {
      deps.log.warn({ err: error, idempotencyKey }, 'approval event failed after its reply');
      if (claimed) await startAfterReply(deps, event, idempotencyKey);
    },
  );
  deps.approvalsInFlight.keep(finishing);
  if (claimed) return { kind: 'claimed', idempotencyKey };
  throw new KnownFailure({
    kind: 'retry-later',
    slug: 'database-unavailable',
    retryAfterSeconds: RETRY_AFTER_SECONDS,
    message: `the event of ${idempotencyKey} was not taken within ${replyBy - arrivedAt} ms of its arrival; send it again`,
  });
}

/** The event's ids in the log are cut short: an unusable one may be as long as the body. */
const LOGGED_ID_LENGTH = 128;

function unusable(deps: ApprovalEventDeps, event: ApprovalEvent, reason: string): ApprovalEventOutcome {
  deps.log.warn(
    {
      vendor: event.vendor,
      eventId: event.eventId.slice(0, LOGGED_ID_LENGTH),
      instanceId: event.instanceId.slice(0, LOGGED_ID_LENGTH),
      reason,
    },
    'approval event unusable: acknowledged, nothing recorded',
  );
  return { kind: 'unusable', idempotencyKey: undefined, reason };
}

/** How long to wait before each start of a claimed key whose start failed after the reply. */
export const START_AFTER_REPLY_DELAYS_MS = [1_000, 5_000, 15_000, 30_000, 60_000];

/**
 * Starts a claimed key whose start failed after the vendor had its reply, through the same start
 * path (a found claim, not yet started, is started; one started meanwhile is left alone), a few
 * times with growing pauses. If every try fails, the claim stays, never released, never forgotten:
 * `orders-cli awaiting` lists it as an unconfirmed claim, and the sweep of ./unstarted-claims.ts
 * starts it once it is OA_UNSTARTED_CLAIM_AFTER_MS old.
 */
async function startAfterReply(deps: ApprovalEventDeps, event: ApprovalEvent, idempotencyKey: string): Promise<void> {
  for (const delayMs of START_AFTER_REPLY_DELAYS_MS) {
    if (deps.approvalsInFlight.stopping) break;
    // Unreferenced: a pause must not keep a stopping process alive.
    await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
    try {
      const submission = await submitApprovalForm({ deps, form: event, options: deps.deliveryOptions });
      deps.log.info({ idempotencyKey, status: submission.status }, 'approval event started after its reply');
      return;
    } catch (error) {
      if (error instanceof IdempotencyConflictError) return;
      deps.log.warn({ err: error, idempotencyKey }, 'approval event still not started after its reply');
    }
  }
  deps.log.error({ idempotencyKey }, 'approval event not started; its claim waits in `orders-cli awaiting`');
}

/**
 * The approval events of one process whose work went on after their reply: the process that takes
 * OA events makes one, hands it to every door that accepts them, and settles it when it stops.
 */
export interface ApprovalEventsInFlight {
  /** Holds `work` until it settles. */
  keep(work: Promise<void>): void;
  /** True once `settle` was called: a start after a reply is tried no more. */
  readonly stopping: boolean;
  /**
   * At shutdown: lets the work still running finish, for at most `withinMs`, and stops its further
   * tries — a claim left unstarted is listed by `awaiting`.
   */
  settle(withinMs: number): Promise<void>;
}

export function approvalEventsInFlight(): ApprovalEventsInFlight {
  const running = new Set<Promise<void>>();
  let stopping = false;
  return {
    keep: (work) => {
      running.add(work);
      void work.finally(() => running.delete(work));
    },
    get stopping() {
      return stopping;
    },
    settle: async (withinMs) => {
      stopping = true;
      await settledWithin(running, withinMs);
    },
  };
}

/** Resolves once every one of `work` has settled, or after `withinMs`, whichever comes first. */
export async function settledWithin(work: Iterable<Promise<unknown>>, withinMs: number): Promise<void> {
  await raceDeadline(Promise.allSettled([...work]), Date.now() + withinMs, { resolve: undefined });
}
