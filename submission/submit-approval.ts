// The path from an approved document to its one workflow, shared by every entry point (the signed
// OA webhook, the MCP tool, the Feishu, DingTalk and WeCom connectors). The key is computed here from
// business identifiers — the only place besides domain/idempotency-key.ts that touches it — and
// travels as workflow input.
import type { Client } from '@temporalio/client';
import type { Config } from '../services/config/env.js';
import type { WritePolicy } from './settings.js';
import { IdempotencyConflictError, KeySourceConflictError } from '../domain/errors.js';
import { canonicalOrder, describeDifferences, totalAmountOf } from '../domain/canonical-order.js';
import { fingerprintOf } from '../domain-node/fingerprint.js';
import {
  idempotencyKeyFor,
  isKeySourceConflict,
  type KeySource,
  orderWorkflowIdFor,
} from '../domain/idempotency-key.js';
import type { Approval } from '../domain/order-input.js';
import type { OrderStatus } from '../domain/order-status.js';
import {
  claimRecord,
  decideFirstDelivery,
  findRecord,
  type IdempotencyRecord,
  type NewRecord,
} from '../services/db/idempotency-records.js';
import { recordKeySourceConflict } from '../services/db/key-source-conflicts.js';
import { findOrderByKey } from '../services/db/order-repository.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import { isTemporalUnreachable } from '../services/temporal/connection.js';
import { startOrderWorkflow, startOrderWorkflowForOutcome } from '../services/temporal/order-workflows.js';
import type {
  FormOrderWorkflowInput,
  OrderWorkflowInput,
  OrderWorkflowStart,
  WriteOutcome,
} from '../workflows/definitions.js';
import { waitForOutcome } from './wait-for-outcome.js';
import { type IntakeLoad, RETRY_AFTER_WITHOUT_A_RATE_SECONDS } from './intake-load.js';
import { tagSpanWithKey } from '../services/telemetry/tracing.js';
import { isOaVendor, type OaVendor } from '../domain/oa-approval.js';

export interface SubmissionDeps {
  prisma: PrismaClient;
  temporal: Client;
  taskQueue: string;
  writePolicy: WritePolicy;
  /** The deadline for the Temporal start call: the caller's answer must come well inside its own timeout. */
  startTimeoutMs: number;
  /** The order worker runs in this process on the client's connection: starts ask for eager start. */
  workerInProcess?: boolean | undefined;
  /** Which deliveries may start their key's workflow: `oneStartPerKey` unless a test passes another. */
  startGuard?: StartGuard | undefined;
  /** This process's intake: how many deliveries it takes at once, and what a shed one hears. */
  intake?: IntakeLoad | undefined;
  /** Where a delivery refused as another door's is counted; none: not counted (it is still recorded). */
  metrics?: Pick<ProductMetrics, 'keySourceConflict'> | undefined;
}

/**
 * Which deliveries may start their key's workflow. Passed in, like every dependency, so a test can
 * run the service with a guard broken on purpose and show that its checks notice.
 */
export interface StartGuard {
  /** Whether a delivery of the key `record` holds may start (or attach to) its workflow. */
  mayStart: (record: IdempotencyRecord) => boolean;
  /** What a start does when a closed run holds the key's workflow id. */
  reusePolicy: 'ALLOW_DUPLICATE' | 'REJECT_DUPLICATE';
}

/**
 * The product's guard: a key whose workflow is known to exist — answered before, marked started, or
 * past RECEIVED — is answered from it and never started again, and a start never replaces a closed
 * run. A redelivery never overrides an operator, also after the closed run left Temporal's retention.
 */
export const oneStartPerKey: StartGuard = {
  mayStart: (record) => !record.firstDeliveryAt && !record.workflowStartedAt && record.status === 'RECEIVED',
  reusePolicy: 'REJECT_DUPLICATE',
};

/** Every entry point submits with the same settings: the configured task queue, policy and deadline. */
export function submissionDepsFrom(config: Config, prisma: PrismaClient, temporal: Client): SubmissionDeps {
  return {
    prisma,
    temporal,
    taskQueue: config.temporal.taskQueue,
    writePolicy: config.writePolicy,
    startTimeoutMs: config.http.startTimeoutMs,
    workerInProcess: config.http.hostsWorker,
  };
}

export interface Submission {
  idempotencyKey: string;
  workflowId: string;
  /** False for exactly one delivery of a key: the first one answered with success. */
  duplicate: boolean;
  status: OrderStatus;
  /** The written order's number; only when the delivery asked to wait and the order is written. */
  orderNo?: string;
}

/** What an entry point may ask of a delivery besides accepting it. */
export interface DeliveryOptions {
  /**
   * Epoch milliseconds: wait until then for the write's outcome, so the answer can carry the order
   * number. The start itself is confirmed as always, under its own deadline.
   */
  waitUntil?: number | undefined;
  /** Called with the key once it is claimed: from then on a slow start may finish without its caller. */
  onClaimed?: (idempotencyKey: string) => void;
  /** The caller's deadline, counted from the request's arrival; none: the start's own deadline. */
  deadline?: DeliveryDeadline | undefined;
}

/**
 * When a delivery's caller must have its answer, counted from the moment its request arrived, so
 * that the time it waited in this process counts (docs/architecture.md, decision 34). A delivery
 * with too little of it left is shed before it claims anything. The webhook's answer says the start
 * happened: a claim or a start still running at `answerBy` is answered as shed and goes on, kept
 * (decision 11). An OA connector's reply needs the claim only (`goesOnAfterAnswer`): its caller
 * races the whole delivery against the reply itself, and whatever runs past it goes on to the start.
 */
export interface DeliveryDeadline {
  /** Epoch milliseconds, as `answerBy`. */
  arrivedAt: number;
  answerBy: number;
  goesOnAfterAnswer?: boolean | undefined;
}

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

/**
 * A delivery that reaches the start path with less than this share of its caller's deadline left
 * is shed before it claims: under a burst, a claim and a start take longer than what is left, and
 * a sender that hears 503 early resends into a quieter moment instead of timing out.
 */
const SHED_BELOW_SHARE_OF_DEADLINE = 0.25;
/** A start that failed this close to a deadline it was cut to failed for want of time. */
const CUT_SHORT_SLACK_MS = 50;

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
  intake: IntakeLoad | undefined,
): boolean {
  if (Date.now() < startBy - CUT_SHORT_SLACK_MS) return false;
  const budget = deadline.answerBy - deadline.arrivedAt;
  const waitedBefore = startCalledAt - deadline.arrivedAt;
  const othersStarted = (intake?.lastStartConfirmedAt ?? -Infinity) > startCalledAt;
  return othersStarted || waitedBefore > budget * SHED_BELOW_SHARE_OF_DEADLINE;
}

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

export function workflowInputFor(approval: Approval, policy: WritePolicy): OrderWorkflowInput {
  const order = canonicalOrder(approval.order);
  return orderInput(
    {
      idempotencyKey: idempotencyKeyFor(approval.approvalNo, approval.operation),
      approvalNo: approval.approvalNo,
      operation: approval.operation,
      approvedAt: approval.approvedAt,
      fingerprint: fingerprintOf(order),
      order,
      totalAmount: totalAmountOf(order),
    },
    policy,
  );
}

/**
 * The workflow input for a key the edge already accepted, rebuilt from its record (same key): the
 * order it names, or — for an OA connector's key whose form was never mapped — the form to read.
 */
export function workflowInputFromRecord(record: IdempotencyRecord, policy: WritePolicy): OrderWorkflowStart {
  if (record.fingerprint !== null && record.request !== null) {
    return orderInput(
      {
        idempotencyKey: record.idempotencyKey,
        approvalNo: record.approvalNo,
        operation: record.operation,
        approvedAt: record.request.approvedAt,
        fingerprint: record.fingerprint,
        order: record.request.order,
        totalAmount: record.request.totalAmount,
      },
      policy,
    );
  }
  if (!isOaVendor(record.source)) {
    throw new Error(`idempotency record ${record.idempotencyKey} names no order and no approval form`);
  }
  // The key of an OA approval is built from its instance id: the approval number is the instance.
  return formInput(record.source, record.approvalNo, policy);
}

/** The workflow input of an OA approval instance: the order is read from its form by the workflow. */
export function formInput(vendor: OaVendor, instanceId: string, policy: WritePolicy): FormOrderWorkflowInput {
  return {
    idempotencyKey: idempotencyKeyFor(instanceId, 'MAIN'),
    approvalNo: instanceId,
    operation: 'MAIN',
    formSource: { vendor, instanceId },
    policy: policyInput(policy),
  };
}

function orderInput(order: Omit<OrderWorkflowInput, 'policy'>, policy: WritePolicy): OrderWorkflowInput {
  return { ...order, policy: policyInput(policy) };
}

function policyInput(policy: WritePolicy): OrderWorkflowInput['policy'] {
  return {
    maxAttempts: policy.maxAttempts,
    initialIntervalMs: policy.initialIntervalMs,
    maxIntervalMs: policy.maxIntervalMs,
    backoffCoefficient: policy.backoffCoefficient,
    startToCloseMs: policy.startToCloseMs,
    scheduleToCloseMs: policy.scheduleToCloseMs,
    decisionTimeoutMs: policy.decisionTimeoutMs,
    localRetryThresholdMs: policy.localRetryThresholdMs,
  };
}

/**
 * Accepts one delivery of an approval that names its order (the signed webhook, the MCP tool).
 * See `acceptDelivery` for what happens; a key reused for a different order is a conflict, and so
 * is a key an OA connector claimed. The same order through the other of the two is a duplicate.
 */
export async function submitApproval(
  deps: SubmissionDeps,
  approval: Approval,
  source: Extract<KeySource, 'webhook' | 'mcp'>,
  options: DeliveryOptions = {},
): Promise<Submission> {
  const input = workflowInputFor(approval, deps.writePolicy);
  return acceptDelivery(
    deps,
    input,
    {
      fingerprint: input.fingerprint,
      request: { approvedAt: input.approvedAt, order: input.order, totalAmount: input.totalAmount },
      source,
    },
    options,
  );
}

/**
 * Accepts one delivery of an approved OA instance (Feishu, DingTalk, WeCom), whose event names only
 * the instance: the key is claimed with no order yet, and the workflow reads the order from the form
 * (docs/architecture.md, decision 17). Every delivery of the instance from its OA — a redelivered
 * event or a second event — is the same order: a duplicate. A key another source claimed (a webhook
 * approval number equal to the instance id, another vendor's instance) is a conflict, kept for an
 * operator (docs/architecture.md, decision 38).
 */
export async function submitApprovalForm(
  deps: SubmissionDeps,
  form: { vendor: OaVendor; instanceId: string },
  /** Called once the key is claimed: from then on a slow start may finish without its caller. */
  onClaimed: () => void = () => {},
  /** When the vendor's reply is due: the key must be claimed by then (the start may go on). */
  deadline?: DeliveryDeadline,
): Promise<Submission> {
  const input = formInput(form.vendor, form.instanceId, deps.writePolicy);
  return acceptDelivery(
    deps,
    input,
    { fingerprint: null, request: null, source: form.vendor },
    { onClaimed, deadline },
  );
}

/**
 * The one start path of every delivery:
 * 0. a delivery beyond INTAKE_MAX_IN_FLIGHT, or with less than a quarter of its caller's deadline
 *    left (it waited in this process), is shed — 503 + Retry-After, nothing claimed; a claim or a
 *    start still running at the caller's deadline is answered the same way, and what it did is
 *    kept (docs/architecture.md, decision 34).
 * 1. claim the key (INSERT … ON CONFLICT DO NOTHING), reading the key's order in the same
 *    statement. An order row, when there is one, is the final judge: a different fingerprint is a
 *    conflict and leaves nothing behind. Otherwise the record's first fingerprint judges. The key
 *    belongs to the door that claimed it: a delivery through another door is a conflict, counted
 *    and recorded for an operator (`refuseAnotherSource`). A delivery that names only an approval
 *    form has no fingerprint: from its own OA it is never a conflict.
 * 2. a key whose workflow is known to exist — marked started, or past RECEIVED, or with its order
 *    written — is never started again: a redelivery never overrides an operator, also after the
 *    closed run left Temporal's retention (`oneStartPerKey`).
 * 3. otherwise start (or attach to) `order-<key>`. The claim is kept whatever the start answers: a
 *    start whose answer was lost may have run, and its workflow records its statuses on the claim.
 * 4. every delivery answered with success asks the database whether it is the first: exactly one
 *    is (202), every other one is a duplicate (200) — also when the delivery that started the run
 *    lost its answer (503): then the first delivery answered after it hears 202.
 * A delivery asked to wait (`waitUntil`) starts with the `writeOutcome` update riding on the start,
 * or, when the key's workflow already exists, watches the key's record; either way until the
 * deadline, and answers with the order number once the order is written
 * (docs/architecture.md, decision 19).
 */
async function acceptDelivery(
  deps: SubmissionDeps,
  input: OrderWorkflowStart,
  claim: Pick<NewRecord, 'fingerprint' | 'request' | 'source'>,
  options: DeliveryOptions = {},
): Promise<Submission> {
  const { intake } = deps;
  const overloaded = (reason: string) => {
    intake?.shed();
    return new IntakeOverloadedError(intake?.retryAfterSeconds() ?? RETRY_AFTER_WITHOUT_A_RATE_SECONDS, reason);
  };
  if (intake && !intake.enter()) throw overloaded(`${intake.inFlight} deliveries in flight, INTAKE_MAX_IN_FLIGHT`);
  // A claim or a start the answer did not wait for still holds a connection: the delivery's place
  // is given back when that settles, so INTAKE_MAX_IN_FLIGHT bounds the work, not only the answers.
  const goingOn: Promise<unknown>[] = [];
  let taken = false;
  try {
    const submission = await takeDelivery(deps, input, claim, options, goingOn);
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

/** Inside the start path: the delivery is shed for the reason given (see `IntakeOverloadedError`). */
class Shed extends Error {}

async function takeDelivery(
  deps: SubmissionDeps,
  input: OrderWorkflowStart,
  claim: Pick<NewRecord, 'fingerprint' | 'request' | 'source'>,
  { waitUntil, onClaimed, deadline }: DeliveryOptions,
  goingOn: Promise<unknown>[],
): Promise<Submission> {
  const key = input.idempotencyKey;
  const workflowId = orderWorkflowIdFor(key);
  // The request's or tool call's span, once the key is known (tracing on only).
  tagSpanWithKey(key);
  const answer = async (): Promise<Submission> => {
    const { first, status } = await decideFirstDelivery(deps.prisma, key);
    return { idempotencyKey: key, workflowId, duplicate: !first, status: status ?? 'RECEIVED' };
  };
  // Asked to wait, a key whose workflow exists already is watched in its record until the
  // deadline; the answer is read after that, with the order number once it is written.
  // The order is read before the answer: deciding the first delivery stays the last statement, so
  // a delivery recorded as the first is never answered with an error.
  const afterWaiting = async (respond: () => Promise<Submission>): Promise<Submission> => {
    if (waitUntil === undefined) return respond();
    await waitForOutcome(deps.prisma, key, { deadline: waitUntil });
    const order = await findOrderByKey(deps.prisma, key);
    return withOrderNo(await respond(), order?.orderNo);
  };
  const incoming = claim.fingerprint;

  if (deadline) {
    const left = deadline.answerBy - Date.now();
    if (left < (deadline.answerBy - deadline.arrivedAt) * SHED_BELOW_SHARE_OF_DEADLINE) {
      throw new Shed(`${Math.max(0, left)} ms of the caller's deadline left before the claim`);
    }
  }
  const claiming = claimRecord(deps.prisma, {
    idempotencyKey: key,
    approvalNo: input.approvalNo,
    operation: input.operation,
    workflowId,
    ...claim,
  });
  goingOn.push(claiming);
  const { record, orderFingerprint, orderStatusAtPurge } =
    deadline && !deadline.goesOnAfterAnswer
      ? await settledBy(deadline.answerBy, claiming, () => new Shed("the claim not made by the caller's deadline"))
      : await claiming;
  onClaimed?.(key);
  if (orderFingerprint !== undefined) {
    // A record purged by retention took its door with it: the order row then judges alone.
    if (record) await refuseAnotherSource(deps, record, claim, incoming === orderFingerprint);
    if (incoming !== null && orderFingerprint !== incoming) {
      const differences =
        record?.fingerprint === orderFingerprint && record.request && claim.request
          ? describeDifferences(record.request.order, claim.request.order)
          : [];
      throw new IdempotencyConflictError(key, orderFingerprint, incoming, differences);
    }
    // The order was written; without a record (it expired) the order row answers for the key,
    // with what the key had reached when its record was purged.
    return afterWaiting(async () => {
      if (!record)
        return { idempotencyKey: key, workflowId, duplicate: true, status: orderStatusAtPurge ?? 'SUBMITTED' };
      return record.firstDeliveryAt ? duplicateOf(record) : answer();
    });
  }
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
  const guard = deps.startGuard ?? oneStartPerKey;
  if (!guard.mayStart(record)) {
    if (!record.firstDeliveryAt) return afterWaiting(answer);
    if (waitUntil === undefined) return duplicateOf(record);
    return afterWaiting(async () => duplicateOf((await findRecord(deps.prisma, key)) ?? record));
  }

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
    const started = startWorkflow(deps, input, waitUntil, guard.reusePolicy, startBy);
    goingOn.push(started);
    outcome = deps.workerInProcess ? await answeredBy(startBy, started) : await started;
    deps.intake?.startConfirmed();
  } catch (error) {
    // The claim stays. The Temporal client retries its calls: an attempt may have started the run
    // and lost its answer before a later attempt failed, whatever the last error says. The run,
    // if there is one, records its statuses on the claim; the sender's redelivery attaches to it.
    if (deadline && startBy < ownStartBy && ranOutOfTime(deadline, startCalledAt, startBy, deps.intake)) {
      throw new Shed("the start not confirmed by the caller's deadline");
    }
    if (isTemporalUnreachable(error)) throw new TemporalUnavailableError(error);
    throw error;
  }
  // A closed run under the id means an earlier delivery started it and never heard back: this
  // delivery may still be the first one answered.
  if (!outcome) return afterWaiting(answer);
  const submission = await answer();
  return {
    ...submission,
    // The record lags the run when the write failed: compensation records COMPENSATING only
    // once it has reconciled. The run's own word is then the newer one.
    status: submission.status === 'RECEIVED' ? outcome.status : submission.status,
    ...(outcome.orderNo ? { orderNo: outcome.orderNo } : {}),
  };
}

/**
 * A key belongs to the door that claimed it (docs/architecture.md, decision 38): a delivery through
 * another door is refused as a conflict — the same answer a conflict gets at that door, naming no
 * difference and no door — and, unlike a conflict within one door, it is made visible: counted
 * (`orders_key_source_conflicts_total{door}`) and recorded for `orders-cli awaiting`. The record is
 * written before the refusal: a failed write is the delivery's failure, and its sender tries again.
 */
async function refuseAnotherSource(
  deps: SubmissionDeps,
  record: IdempotencyRecord,
  claim: Pick<NewRecord, 'fingerprint' | 'source'>,
  sameOrder: boolean,
): Promise<void> {
  if (!isKeySourceConflict(record.source, claim.source, sameOrder)) return;
  deps.metrics?.keySourceConflict(claim.source);
  await recordKeySourceConflict(deps.prisma, {
    idempotencyKey: record.idempotencyKey,
    door: claim.source,
    claimedBy: record.source,
    fingerprint: claim.fingerprint,
  });
  throw new KeySourceConflictError(
    record.idempotencyKey,
    record.source,
    claim.source,
    record.fingerprint ?? '',
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
  return settledBy(
    deadline,
    start,
    () => new Error('Temporal did not answer the start by its deadline (WEBHOOK_START_TIMEOUT_MS)'),
  );
}

/** `work`'s outcome, or `late()` thrown at `by` (epoch ms); the work goes on, a late failure unheard. */
async function settledBy<T>(by: number, work: Promise<T>, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(late()), Math.max(0, by - Date.now()));
  });
  work.catch(() => undefined); // a late failure after the timeout has no one to tell
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts (or attaches to) the key's workflow and, asked to wait, answers with the write's outcome
 * if it came by the deadline. A start the wait left unconfirmed is confirmed the way every start
 * is, under the start deadline: it attaches to a run the first call did start.
 */
async function startWorkflow(
  deps: SubmissionDeps,
  input: OrderWorkflowStart,
  waitUntil: number | undefined,
  reusePolicy: 'ALLOW_DUPLICATE' | 'REJECT_DUPLICATE',
  startBy: number,
): Promise<WriteOutcome | undefined> {
  if (waitUntil !== undefined) {
    const waited = await startOrderWorkflowForOutcome(deps.temporal, deps.taskQueue, input, waitUntil, reusePolicy);
    if (waited.start === 'started') return waited.outcome;
    if (waited.start === 'closed-run') return undefined;
  }
  const confirmBy = waitUntil === undefined ? startBy : Date.now() + deps.startTimeoutMs;
  await deps.temporal.withDeadline(confirmBy, () =>
    startOrderWorkflow(deps.temporal, deps.taskQueue, input, reusePolicy, { eager: deps.workerInProcess }),
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

function duplicateOf(record: IdempotencyRecord): Submission {
  return {
    idempotencyKey: record.idempotencyKey,
    workflowId: record.workflowId,
    duplicate: true,
    status: record.status,
  };
}
