// How an OA system delivers an approval, as the burst and soak modes send them: one signed POST
// through a door (tools/bench/doors.ts) with the sender's own HTTP timeout (the vendor's deadline,
// or WEBHOOK_START_TIMEOUT_MS as the service is configured for the webhook); an
// answer not back by then is a timeout and is sent again; a 503 is sent again after its Retry-After,
// as sent. Every attempt is logged with its outcome and its latency as the sender saw it.
import { performance } from 'node:perf_hooks';
import type { BurstDoor } from './doors.js';

/** What one HTTP attempt came to, as the table counts it. */
export type Outcome = '202' | '200' | '201' | '503' | 'other' | 'timeout';
export const OUTCOMES: Outcome[] = ['202', '200', '201', '503', 'other', 'timeout'];

export interface Attempt {
  approvalNo: string;
  /** 1 for the first delivery of the approval. */
  attempt: number;
  /** Milliseconds of `performance.now()` when it was sent and when its answer (or the timeout) came. */
  sentAt: number;
  endedAt: number;
  outcome: Outcome;
  status?: number;
  /** A 503's Retry-After, in seconds, as sent; undefined when it sent none. */
  retryAfterSeconds?: number;
  /** The last segment of a problem answer's type (`overloaded`, `temporal-unavailable`, …). */
  problem?: string;
}

/** What the sender does after an attempt. */
export type NextStep =
  | { kind: 'accepted' }
  | { kind: 'resend'; afterMs: number; cause: ResendCause }
  | { kind: 'given up'; reason: string };

export type ResendCause = 'timeout' | '503 Retry-After' | '503 without Retry-After' | '5xx' | 'connection error';

/** What a sender waits before a resend the answer gave no time for. */
const DEFAULT_RESEND_MS = 1_000;

/** Retry-After as seconds: a number of seconds, or an HTTP date (what is left until it). */
function retryAfterSeconds(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

/**
 * `door.accepted` are the answers that take a delivery: at the webhook the first delivery (202, or
 * 201 once written) or a duplicate's 200; at a vendor's callback its acknowledgement, a 200.
 */
export function oaSender(options: { url: string; door: BurstDoor; timeoutMs: number; maxAttempts: number }) {
  const { door } = options;
  return {
    async send(approvalNo: string, payload: string, attempt: number): Promise<Attempt> {
      const sentAt = performance.now();
      try {
        const request = door.request(payload);
        const response = await fetch(`${options.url}${request.path}`, {
          method: 'POST',
          headers: request.headers,
          body: request.body,
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        const text = await response.text();
        const status = response.status;
        const outcome: Outcome = OUTCOMES.includes(String(status) as Outcome) ? (String(status) as Outcome) : 'other';
        const retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
        let problem: string | undefined;
        if (status >= 400) {
          try {
            const { type } = JSON.parse(text) as { type?: unknown };
            problem = typeof type === 'string' ? type.split('/').pop() : undefined;
          } catch {
            problem = undefined;
          }
        }
        return {
          approvalNo,
          attempt,
          sentAt,
          endedAt: performance.now(),
          outcome,
          status,
          ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
          ...(problem ? { problem } : {}),
        };
      } catch (error) {
        // Aborted by the timeout, or the connection failed (refused, reset) — both time out for an OA.
        const timedOut = (error as Error).name === 'TimeoutError';
        return {
          approvalNo,
          attempt,
          sentAt,
          endedAt: performance.now(),
          outcome: timedOut ? 'timeout' : 'other',
          ...(timedOut ? {} : { problem: `connection: ${(error as Error).message}` }),
        };
      }
    },
    next(attempt: Attempt): NextStep {
      if (attempt.status !== undefined && door.accepted.has(attempt.status)) return { kind: 'accepted' };
      if (attempt.attempt >= options.maxAttempts) {
        return { kind: 'given up', reason: `${options.maxAttempts} attempts without acceptance` };
      }
      if (attempt.outcome === 'timeout') return { kind: 'resend', afterMs: 0, cause: 'timeout' };
      if (attempt.status === 503) {
        return attempt.retryAfterSeconds !== undefined
          ? { kind: 'resend', afterMs: attempt.retryAfterSeconds * 1000, cause: '503 Retry-After' }
          : { kind: 'resend', afterMs: DEFAULT_RESEND_MS, cause: '503 without Retry-After' };
      }
      if (attempt.status === undefined)
        return { kind: 'resend', afterMs: DEFAULT_RESEND_MS, cause: 'connection error' };
      if (attempt.status >= 500) return { kind: 'resend', afterMs: DEFAULT_RESEND_MS, cause: '5xx' };
      // A 4xx says the approval itself is refused: an OA does not send it again.
      return { kind: 'given up', reason: `answered ${attempt.status}${attempt.problem ? ` ${attempt.problem}` : ''}` };
    },
  };
}

export type OaSender = ReturnType<typeof oaSender>;

/** Every attempt of a run, and what became of each approval. */
export function deliveryLog() {
  const attempts: Attempt[] = [];
  const accepted = new Set<string>();
  const givenUp = new Map<string, string>();
  const resends: Record<string, number> = {};
  return {
    attempts,
    accepted,
    givenUp,
    resends,
    record(attempt: Attempt, step: NextStep) {
      attempts.push(attempt);
      if (step.kind === 'accepted') accepted.add(attempt.approvalNo);
      else if (step.kind === 'resend') resends[step.cause] = (resends[step.cause] ?? 0) + 1;
      else givenUp.set(attempt.approvalNo, step.reason);
    },
  };
}

export type DeliveryLog = ReturnType<typeof deliveryLog>;

/** Counts of the attempts by outcome, and of the 503s and others by problem type. */
export function answerCounts(attempts: Attempt[]) {
  const byOutcome = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0])) as Record<Outcome, number>;
  const problems: Record<string, number> = {};
  for (const attempt of attempts) {
    byOutcome[attempt.outcome] += 1;
    if (attempt.problem) {
      const key = `${attempt.status ?? '-'} ${attempt.problem}`;
      problems[key] = (problems[key] ?? 0) + 1;
    }
  }
  return { byOutcome, problems };
}
