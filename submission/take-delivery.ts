// The one start path of every delivery, as the phases it runs through, in order: shed, claim the
// key, settle a conflict, guard, start the workflow, answer. Each phase hands on a `Phase`: the
// delivery goes on to the next one, or it is answered; a refusal is thrown. `startPath` reads as
// that list, and `takeDelivery` is the path built from the product's phases. The entry points and
// the defaults of the options a delivery is taken with are in ./submit-approval.ts, the options,
// the delivery and what a delivery answers in ./start-path-types.ts; the process's intake wraps
// the whole of it (./load-shedding.ts).
import { describeDifferences } from '../domain/canonical-order.js';
import { IdempotencyConflictError, KeySourceConflictError } from '../domain/errors.js';
import { isKeySourceConflict, orderWorkflowIdFor } from '../domain/idempotency-key.js';
import type { Claim, IdempotencyRecord, NewRecord } from '../services/db/idempotency-records.js';
import { isTemporalUnreachable } from '../services/temporal/connection.js';
import { startOrderWorkflow, startOrderWorkflowForOutcome } from '../services/temporal/order-workflows.js';
import { tagSpanWithKey } from '../services/telemetry/tracing.js';
import type { OrderWorkflowStart, WriteOutcome } from '../workflows/definitions.js';
import { raceDeadline } from './deadline.js';
import { type IntakePlace, Shed } from './load-shedding.js';
import type { Delivery, DeliveryDeadline, Phase, Submission, SubmissionDeps } from './start-path-types.js';

/**
 * A delivery that reaches the start path with less than this share of its caller's deadline left
 * is shed before it claims: under a burst, a claim and a start take longer than what is left, and
 * a sender that hears 503 early resends into a quieter moment instead of timing out.
 */
const SHED_BELOW_SHARE_OF_DEADLINE = 0.25;
/** A start that failed this close to a deadline it was cut to failed for want of time. */
const CUT_SHORT_SLACK_MS = 50;

/**
 * Temporal could not be reached, or did not confirm the start: the caller redelivers, which is safe
 * (the workflow id is derived from the key, so a start that did happen is attached to, never doubled).
 */
export class TemporalUnavailableError extends Error {
  constructor(override readonly cause: unknown) {
    super(
      `Temporal could not be reached or did not confirm the start: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
    this.name = 'TemporalUnavailableError';
  }
}

/** One delivery on its way through the phases: with its key, and the id of the key's workflow. */
export interface OnThePath extends Delivery {
  key: string;
  workflowId: string;
}

/**
 * The phases of the start path, in the order a delivery runs through them; each takes what the one
 * before handed on. Shed, claim and start go on or throw; settle and guard may answer.
 */
export interface StartPhases {
  shed(delivery: OnThePath): Phase<void>;
  claim(delivery: OnThePath): Promise<Phase<Claim>>;
  settle(delivery: OnThePath, claimed: Claim): Promise<Phase<IdempotencyRecord>>;
  guard(delivery: OnThePath, record: IdempotencyRecord): Promise<Phase<void>>;
  start(delivery: OnThePath): Promise<Phase<WriteOutcome | undefined>>;
  answer(delivery: OnThePath, outcome: WriteOutcome | undefined): Promise<Submission>;
}

/** The product's phases, in order. */
export const productPhases: StartPhases = {
  shed: shedWithTooLittleTimeLeft,
  claim: claimKey,
  settle: settleConflict,
  guard: guardStart,
  start: startOrAttach,
  answer: answerStarted,
};

/**
 * The one start path of every delivery, its phases run in order (`productPhases`, by `startPath`).
 * Settle and guard may answer the delivery from its key, and then no later phase runs; a refusal —
 * a conflict, Temporal unavailable, a delivery shed — is thrown:
 * 0. shed: a delivery with less than a quarter of its caller's deadline left (it waited in this
 *    process) is shed — 503 + Retry-After, nothing claimed; a claim or a start still running at
 *    the caller's deadline is answered the same way, and what it did is kept (docs/architecture.md,
 *    decision 34). A delivery beyond INTAKE_MAX_IN_FLIGHT never gets here (./load-shedding.ts).
 * 1. claim the key (INSERT … ON CONFLICT DO NOTHING), reading the key's order in the same
 *    statement.
 * 2. settle a conflict. An order row, when there is one, is the final judge: a different
 *    fingerprint is a conflict and leaves nothing behind. Otherwise the record's first fingerprint
 *    judges. The key belongs to the door that claimed it: a delivery through another door is a
 *    conflict, counted and recorded for an operator (`refuseAnotherSource`). A delivery that names
 *    only an approval form has no fingerprint: from its own OA it is never a conflict.
 * 3. guard: a key whose workflow is known to exist — marked started, or past RECEIVED, or with its
 *    order written — is never started again: a redelivery never overrides an operator, also after
 *    the closed run left Temporal's retention (`oneStartPerKey`).
 * 4. otherwise start (or attach to) `order-<key>`. The claim is kept whatever the start answers: a
 *    start whose answer was lost may have run, and its workflow records its statuses on the claim.
 * 5. answer: every delivery answered with success asks the database whether it is the first:
 *    exactly one is (202), every other one is a duplicate (200) — also when the delivery that
 *    started the run lost its answer (503): then the first delivery answered after it hears 202.
 * A delivery asked to wait (`waitUntil`) starts with the `writeOutcome` update riding on the start,
 * or, when the key's workflow already exists, watches the key's record; either way until the
 * deadline, and answers with the order number once the order is written
 * (docs/architecture.md, decision 19).
 */
export const takeDelivery: (delivery: Delivery) => Promise<Submission> = startPath(productPhases);

/**
 * The start path built from `phases`: a delivery runs through them in order until one answers it or
 * throws. The product's is `takeDelivery`; a test builds one from stubs to show how they compose.
 */
export function startPath(phases: StartPhases): (delivery: Delivery) => Promise<Submission> {
  return async (delivery) => {
    const key = delivery.input.idempotencyKey;
    const onPath: OnThePath = { ...delivery, key, workflowId: orderWorkflowIdFor(key) };
    // The request's or tool call's span, once the key is known (tracing on only).
    tagSpanWithKey(key);

    const shed = phases.shed(onPath);
    if (shed.kind === 'answer') return shed.submission;
    const claimed = await phases.claim(onPath);
    if (claimed.kind === 'answer') return claimed.submission;
    const settled = await phases.settle(onPath, claimed.value);
    if (settled.kind === 'answer') return settled.submission;
    const guarded = await phases.guard(onPath, settled.value);
    if (guarded.kind === 'answer') return guarded.submission;
    const started = await phases.start(onPath);
    if (started.kind === 'answer') return started.submission;
    return phases.answer(onPath, started.value);
  };
}

/** 0. Shed: too little of the caller's deadline is left for a claim and a start. */
function shedWithTooLittleTimeLeft({ options: { deadline } }: OnThePath): Phase<void> {
  if (deadline) {
    const left = deadline.answerBy - Date.now();
    if (left < (deadline.answerBy - deadline.arrivedAt) * SHED_BELOW_SHARE_OF_DEADLINE) {
      throw new Shed(`${Math.max(0, left)} ms of the caller's deadline left before the claim`);
    }
  }
  return goOn(undefined);
}

/**
 * 1. Claim the key, reading its order in the same statement. A claim still running at the caller's
 * deadline is shed, unless the delivery goes on after its answer; either way it goes on, and is kept.
 */
async function claimKey({ deps, input, claim, options, place, key, workflowId }: OnThePath): Promise<Phase<Claim>> {
  const { deadline, onClaimed } = options;
  const claiming = deps.claims.claim({
    idempotencyKey: key,
    approvalNo: input.approvalNo,
    operation: input.operation,
    workflowId,
    ...claim,
  });
  place.goingOn.push(claiming);
  const claimed =
    deadline && !deadline.goesOnAfterAnswer
      ? await raceDeadline(claiming, deadline.answerBy, {
          reject: () => new Shed("the claim not made by the caller's deadline"),
        })
      : await claiming;
  onClaimed(key);
  return goOn(claimed);
}

/**
 * 2. Settle a conflict: against the key's order when it is written — the delivery is then answered
 * from the key, without a start — else against its record, and the delivery goes on.
 */
async function settleConflict(delivery: OnThePath, claimed: Claim): Promise<Phase<IdempotencyRecord>> {
  if (claimed.orderFingerprint !== undefined) {
    return answerWith(await settleAgainstOrder(delivery, claimed, claimed.orderFingerprint));
  }
  return goOn(await settleAgainstRecord(delivery, claimed.record));
}

/**
 * A key whose order is written: the order row is the final judge, and the delivery is answered
 * from the key.
 */
async function settleAgainstOrder(
  delivery: OnThePath,
  { record, orderStatusAtPurge, orderSourceAtPurge }: Claim,
  orderFingerprint: string,
): Promise<Submission> {
  const { deps, claim, key, workflowId } = delivery;
  const incoming = claim.fingerprint;
  // The key belongs to its door after the retention purge too: the order row kept it.
  const holder: KeyHolder | undefined =
    record ??
    (orderSourceAtPurge
      ? { idempotencyKey: key, source: orderSourceAtPurge, fingerprint: orderFingerprint }
      : undefined);
  if (holder) await refuseAnotherSource(deps, holder, claim, incoming === orderFingerprint);
  if (incoming !== null && orderFingerprint !== incoming) {
    const differences =
      record?.fingerprint === orderFingerprint && record.request && claim.request
        ? describeDifferences(record.request.order, claim.request.order)
        : [];
    throw new IdempotencyConflictError(key, orderFingerprint, incoming, differences);
  }
  // The order was written; without a record (it expired) the order row answers for the key,
  // with what the key had reached when its record was purged.
  return afterWaiting(delivery, async () => {
    if (!record) return { idempotencyKey: key, workflowId, duplicate: true, status: orderStatusAtPurge ?? 'SUBMITTED' };
    return record.firstDeliveryAt ? duplicateOf(record) : firstOrDuplicate(delivery);
  });
}

/** A key with no order yet: the record's door and first fingerprint judge. */
async function settleAgainstRecord(
  { deps, claim, key }: OnThePath,
  record: IdempotencyRecord | undefined,
): Promise<IdempotencyRecord> {
  const incoming = claim.fingerprint;
  // Without an order row the claim statement always leaves a record (it inserts one or finds one).
  if (!record) throw new Error(`idempotency record ${key} vanished after insert`);
  await refuseAnotherSource(deps, record, claim, incoming !== null && record.fingerprint === incoming);
  if (incoming !== null && record.fingerprint !== incoming) {
    throw new IdempotencyConflictError(
      key,
      record.fingerprint ?? '',
      incoming,
      record.request && claim.request ? describeDifferences(record.request.order, claim.request.order) : [],
    );
  }
  return record;
}

/**
 * 3. Guard: a delivery the start guard lets start goes on to the start; any other is answered from
 * the key.
 */
async function guardStart(delivery: OnThePath, record: IdempotencyRecord): Promise<Phase<void>> {
  const { deps, key } = delivery;
  const { startGuard, waitUntil } = delivery.options;
  if (startGuard.mayStart(record)) return goOn(undefined);
  if (!record.firstDeliveryAt) return answerWith(await afterWaiting(delivery, () => firstOrDuplicate(delivery)));
  if (waitUntil === undefined) return answerWith(duplicateOf(record));
  return answerWith(await afterWaiting(delivery, async () => duplicateOf((await deps.claims.find(key)) ?? record)));
}

/**
 * 4. Start (or attach to) the key's workflow, under the start's own deadline or the caller's when
 * that comes first: the write's outcome when the delivery waited for it and it came.
 */
async function startOrAttach({ deps, input, options, place }: OnThePath): Promise<Phase<WriteOutcome | undefined>> {
  const { waitUntil, deadline, workerInProcess, startGuard } = options;
  // The start's own deadline, or the caller's when that comes first (a delivery that asked to
  // wait has its start confirmed after the wait, as decision 19 says).
  const startCalledAt = Date.now();
  const ownStartBy = (waitUntil ?? startCalledAt) + deps.startTimeoutMs;
  const startBy =
    waitUntil === undefined && deadline && !deadline.goesOnAfterAnswer
      ? Math.min(ownStartBy, deadline.answerBy)
      : ownStartBy;
  let outcome: WriteOutcome | undefined;
  try {
    const started = startWorkflow(deps, input, waitUntil, startGuard.reusePolicy, startBy, workerInProcess);
    place.goingOn.push(started);
    outcome = workerInProcess ? await answeredBy(startBy, started) : await started;
    place.startConfirmed();
  } catch (error) {
    // The claim stays. The Temporal client retries its calls: an attempt may have started the run
    // and lost its answer before a later attempt failed, whatever the last error says. The run,
    // if there is one, records its statuses on the claim; the sender's redelivery attaches to it.
    if (deadline && startBy < ownStartBy && ranOutOfTime(deadline, startCalledAt, startBy, place)) {
      throw new Shed("the start not confirmed by the caller's deadline");
    }
    if (isTemporalUnreachable(error)) throw new TemporalUnavailableError(error);
    throw error;
  }
  return goOn(outcome);
}

/** 5. Answer a delivery that started (or attached to) the key's workflow. */
async function answerStarted(delivery: OnThePath, outcome: WriteOutcome | undefined): Promise<Submission> {
  // A closed run under the id means an earlier delivery started it and never heard back: this
  // delivery may still be the first one answered.
  if (!outcome) return afterWaiting(delivery, () => firstOrDuplicate(delivery));
  const submission = await firstOrDuplicate(delivery);
  return {
    ...submission,
    // The record lags the run when the write failed: compensation records COMPENSATING only
    // once it has reconciled. The run's own word is then the newer one.
    status: submission.status === 'RECEIVED' ? outcome.status : submission.status,
    ...(outcome.orderNo ? { orderNo: outcome.orderNo } : {}),
  };
}

/** The answer of a delivery that asks the database whether it is the key's first. */
async function firstOrDuplicate({ deps, key, workflowId }: OnThePath): Promise<Submission> {
  const { first, status } = await deps.claims.decideFirstDelivery(key);
  return { idempotencyKey: key, workflowId, duplicate: !first, status: status ?? 'RECEIVED' };
}

/**
 * Asked to wait, a key whose workflow exists already is watched in its record until the
 * deadline; the answer is read after that, with the order number once it is written.
 * The order is read before the answer: deciding the first delivery stays the last statement, so
 * a delivery recorded as the first is never answered with an error.
 */
async function afterWaiting(
  { deps, key, options }: OnThePath,
  respond: () => Promise<Submission>,
): Promise<Submission> {
  const { waitUntil } = options;
  if (waitUntil === undefined) return respond();
  await deps.claims.waitForOutcome(key, { deadline: waitUntil });
  const orderNo = await deps.claims.orderNoOf(key);
  return withOrderNo(await respond(), orderNo);
}

/**
 * Whether a start that failed at the caller's deadline it was cut to failed for want of time rather
 * than for want of Temporal: the delivery had spent more than `SHED_BELOW_SHARE_OF_DEADLINE` of its
 * time before the start was called, or Temporal confirmed other starts of this process while this
 * one waited. A start that had its time while nothing else got through
 * says Temporal did not confirm it (`temporal-unavailable`), which is what a hung Temporal looks like.
 */
function ranOutOfTime(
  deadline: DeliveryDeadline,
  startCalledAt: number,
  startBy: number,
  place: Pick<IntakePlace, 'lastStartConfirmedAt'>,
): boolean {
  if (Date.now() < startBy - CUT_SHORT_SLACK_MS) return false;
  const budget = deadline.answerBy - deadline.arrivedAt;
  const waitedBefore = startCalledAt - deadline.arrivedAt;
  const othersStarted = (place.lastStartConfirmedAt ?? -Infinity) > startCalledAt;
  return othersStarted || waitedBefore > budget * SHED_BELOW_SHARE_OF_DEADLINE;
}

/**
 * Who holds a key: its record while there is one, else the door its order row kept when the
 * retention purge removed the record, with the order's fingerprint.
 */
type KeyHolder = Pick<IdempotencyRecord, 'idempotencyKey' | 'source' | 'fingerprint'>;

/**
 * A key belongs to the door that claimed it (docs/architecture.md, decision 38), also after the
 * retention purge: a delivery through another door is refused as a conflict — one answer at every
 * door, naming neither the holder nor a difference — and, unlike a conflict within one door, it is
 * made visible: recorded for `orders-cli awaiting`, then counted
 * (`orders_key_source_conflicts_total{door}`). The record is written first: a failed write is the
 * delivery's failure, its sender tries again, and the retry is the one refusal counted.
 */
async function refuseAnotherSource(
  deps: SubmissionDeps,
  holder: KeyHolder,
  claim: Pick<NewRecord, 'fingerprint' | 'source'>,
  sameOrder: boolean,
): Promise<void> {
  if (!isKeySourceConflict(holder.source, claim.source, sameOrder)) return;
  await deps.claims.recordSourceConflict({
    idempotencyKey: holder.idempotencyKey,
    door: claim.source,
    claimedBy: holder.source,
    fingerprint: claim.fingerprint,
  });
  deps.metrics?.keySourceConflict(claim.source);
  throw new KeySourceConflictError(
    holder.idempotencyKey,
    holder.source,
    claim.source,
    holder.fingerprint ?? '',
    claim.fingerprint ?? '',
  );
}

/**
 * The start's answer, or a timeout at `deadline` (epoch ms), for a client on a native connection (an
 * API hosting the worker): the client's deadline bounds each of its attempts, and it retries an
 * unreachable Temporal for seconds more; the caller hears 503 on time all the same. A client on a
 * gRPC connection keeps its deadline across retries and needs no race. The call may still start
 * the run after that; the claim is kept for it (decision 11).
 */
function answeredBy<T>(deadline: number, start: Promise<T>): Promise<T> {
  return raceDeadline(start, deadline, {
    reject: () => new Error('Temporal did not answer the start by its deadline (WEBHOOK_START_TIMEOUT_MS)'),
  });
}

/**
 * Starts (or attaches to) the key's workflow and, asked to wait, answers with the write's outcome
 * if it came by the deadline. A start the wait left unconfirmed is confirmed the way every start
 * is, under the start deadline: it attaches to a run the first call did start. `eager`: the order
 * worker runs in this process on the client's connection.
 */
async function startWorkflow(
  deps: SubmissionDeps,
  input: OrderWorkflowStart,
  waitUntil: number | undefined,
  reusePolicy: 'ALLOW_DUPLICATE' | 'REJECT_DUPLICATE',
  startBy: number,
  eager: boolean,
): Promise<WriteOutcome | undefined> {
  if (waitUntil !== undefined) {
    const waited = await startOrderWorkflowForOutcome(deps.temporal, deps.taskQueue, input, waitUntil, reusePolicy);
    if (waited.start === 'started') return waited.outcome;
    if (waited.start === 'closed-run') return undefined;
  }
  const confirmBy = waitUntil === undefined ? startBy : Date.now() + deps.startTimeoutMs;
  await deps.temporal.withDeadline(confirmBy, () =>
    startOrderWorkflow(deps.temporal, deps.taskQueue, input, reusePolicy, { eager }),
  );
  return undefined;
}

/** The submission with its order's number, when the order is written. */
function withOrderNo(submission: Submission, orderNo: string | undefined): Submission {
  if (orderNo === undefined) return submission;
  // An order row means the write committed, whatever an older read of the status said.
  const status = submission.status === 'RECEIVED' ? 'SUBMITTED' : submission.status;
  return { ...submission, status, orderNo };
}

/** The delivery goes on to the next phase with `value`. */
function goOn<T>(value: T): Phase<T> {
  return { kind: 'go-on', value };
}

/** The delivery is answered with `submission`; no later phase runs. */
function answerWith(submission: Submission): Phase<never> {
  return { kind: 'answer', submission };
}

function duplicateOf(record: IdempotencyRecord): Submission {
  return {
    idempotencyKey: record.idempotencyKey,
    workflowId: record.workflowId,
    duplicate: true,
    status: record.status,
  };
}
