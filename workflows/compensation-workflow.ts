// The compensation workflow: one per failed key (id `compensation-<key>`). It reconciles first —
// the lost-response case means the order may have landed after all — records why, then waits
// (bounded) for an operator: resubmit with the same key
// (which can never double: the unique key finds any committed order) or abandon.
import {
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { COMPENSATION_DECISIONS, type OrderStatus as Status } from '../domain/order-status.js';
import type * as activities from '../activities/index.js';
import type { Reconciliation } from '../activities/compensation.js';
import { compensationStep } from './activity-presets.js';
import {
  type CompensationInput,
  type CompensationOutcome,
  type CompensationState,
  type CompensationWorkflow,
  compensationStateQuery,
  type DecisionRequest,
  decideUpdate,
  isFormOrder,
} from './definitions.js';
import { OrderStatus } from './search-attributes.js';

type Activities = ReturnType<typeof activities.createActivities>;

/** How often reconciliation continues a landed order on its own before it asks for a person. */
const MAX_AUTOMATIC_CONTINUATIONS = 5;

/**
 * The patch that made the wait for an operator look again, now and then, whether the order landed
 * after all. Runs that waited before it replay the one wait they recorded. The name is in those
 * histories: never change it.
 */
export const LANDING_CHECKS = 'compensation-looks-again-for-a-late-order';

/**
 * How long the wait for an operator goes before it first looks whether the order landed: one write
 * attempt's start-to-close, about as long as the failed run's last transaction can outlive its
 * attempt. Each pause after is four times the one before, an hour at most.
 */
const firstPauseBeforeALook = (startToCloseMs: number) => Math.max(1_000, startToCloseMs);
const LONGEST_PAUSE_BETWEEN_LOOKS_MS = 60 * 60 * 1000;

// Each step carries a one-line summary the UI shows in the event history.
const { reconcileFailedWrite } = proxyActivities<Activities>({
  ...compensationStep,
  summary: 'reconcile: did the order land after all? record why it failed',
});
// Only a look, made again at the next pause: briefly retried, so a decision that arrives during it
// waits a minute at most.
const { orderLandedSince } = proxyActivities<Activities>({
  ...compensationStep,
  scheduleToCloseTimeout: '1 minute',
  retry: { ...compensationStep.retry, maximumAttempts: 2 },
  summary: 'did the order land since? (the failed attempt may have committed late)',
});
const { recordDecision } = proxyActivities<Activities>({ ...compensationStep, summary: 'record the decision' });
const { resubmitOrder } = proxyActivities<Activities>({
  ...compensationStep,
  summary: 'start the order workflow again with the same key',
});
const { markCompensationFailed } = proxyActivities<Activities>({ ...compensationStep, summary: 'record FAILED' });

export async function compensationWorkflow(input: CompensationInput): Promise<CompensationState> {
  const key = input.order.idempotencyKey;
  const state: CompensationState = {
    idempotencyKey: key,
    status: 'COMPENSATING',
    reasonType: input.reasonType,
    reason: input.reason,
  };
  let decision: DecisionRequest | undefined;
  let windowClosed = false;
  // Set once reconciliation or a later look found the order written.
  let orderFoundLanded = false;
  const showState = (line: string) =>
    setCurrentDetails(
      [`**${state.status}** — ${line}`, `why the write failed: ${input.reasonType}: ${input.reason}`].join('\n\n'),
    );
  // The status it finishes with is the one its last step asked the record for (with a prior
  // decision: the one the record holds). The writer checks the record's changes against the
  // transition table (domain/order-status.ts); here the status is reported, not checked.
  const finish = (status: Status, outcome: CompensationOutcome) => {
    state.status = status;
    state.outcome = outcome;
    upsertSearchAttributes([{ key: OrderStatus, value: status }]);
    showState(`outcome ${outcome}${state.decision ? ` after the decision ${state.decision}` : ''}`);
    return state;
  };
  showState(`reconciling ${key} after ${input.attempts} attempt(s)`);

  setHandler(compensationStateQuery, () => state);
  setHandler(
    decideUpdate,
    async (request) => {
      decision = request;
      state.decision = request.decision;
      await condition(() => state.outcome !== undefined);
      return state;
    },
    {
      validator: (request: DecisionRequest) => {
        if (!(COMPENSATION_DECISIONS as readonly string[]).includes(request.decision)) {
          throw new Error(`decision must be one of ${COMPENSATION_DECISIONS.join(', ')}`);
        }
        if (decision !== undefined) throw new Error(`a decision was already made: ${decision.decision}`);
        if (windowClosed) throw new Error('the decision window has closed');
        if (state.status !== 'COMPENSATING') throw new Error(`nothing to decide: status is ${state.status}`);
      },
    },
  );

  const outcome = await compensate();
  // Let a pending `decide` update return its answer before the workflow closes.
  await condition(allHandlersFinished);
  return outcome;

  async function compensate(): Promise<CompensationState> {
    try {
      const reconciliation = await reconcileFailedWrite(input);
      if (reconciliation.orderLanded) return await continueLanded(reconciliation);
      if (reconciliation.priorDecision) {
        // Compensation of this very failure ran before and an operator decided: keep that.
        const { decision: prior, status } = reconciliation.priorDecision;
        state.decision = prior;
        return finish(status, prior === 'abandon' ? 'ABANDONED' : 'RESUBMITTED');
      }
      upsertSearchAttributes([{ key: OrderStatus, value: 'COMPENSATING' }]);
      showState('nothing was written; waiting for an operator: `resubmit` (same key) or `abandon`');

      const landedSince = await waitForDecision();
      if (landedSince) return await continueLanded(landedSince);
      // A decision that arrived together with the end of the window is still carried out.
      if (!decision) {
        windowClosed = true;
        await markCompensationFailed({
          idempotencyKey: key,
          orderRunId: input.orderRunId,
          reason: 'decision window ran out',
        });
        return finish('FAILED', 'DECISION_TIMED_OUT');
      }
      if (decision.decision === 'abandon') {
        const abandoned = await recordDecision({
          idempotencyKey: key,
          orderRunId: input.orderRunId,
          decision: 'abandon',
          decidedBy: decision.decidedBy,
          // An order still in its form was never mapped by this run: the activity asks the record.
          fingerprint: isFormOrder(input.order) ? undefined : input.order.fingerprint,
        });
        if (!abandoned.orderLanded) return finish('COMPENSATED', 'ABANDONED');
        // The order landed after all: it is continued, not abandoned.
        await resubmitOrder({ order: input.order, orderRunId: input.orderRunId, decidedBy: 'reconciliation' });
        return finish('SUBMITTED', 'ORDER_LANDED');
      }
      await resubmitOrder({ order: input.order, orderRunId: input.orderRunId, decidedBy: decision.decidedBy });
      return finish('RECEIVED', 'RESUBMITTED');
    } catch (error) {
      // Compensation itself failed: say so durably, and never hide the original reason. Once the
      // order is known to have landed, the key says SUBMITTED: only a FAILED that says so moves it.
      await markCompensationFailed({
        idempotencyKey: key,
        orderRunId: input.orderRunId,
        reason: `compensation failed: ${error instanceof Error ? error.message : String(error)}; original: ${input.reason}`,
        ...(orderFoundLanded ? { landed: true } : {}),
      });
      finish('FAILED', 'FAILED');
      throw error;
    }
  }

  /**
   * The write did commit (its response was lost, or its last attempt committed late): that is
   * success, not a duplicate to undo. The order workflow that gave up on it must still finish its
   * work (tell the downstream): a new run with the same key finds the order, writes nothing, and
   * goes on from there. A few times per key at most: runs that keep failing after their order
   * landed need a person.
   */
  async function continueLanded(reconciliation: Reconciliation): Promise<CompensationState> {
    orderFoundLanded = true;
    if ((reconciliation.continuations ?? 0) >= MAX_AUTOMATIC_CONTINUATIONS) {
      await markCompensationFailed({
        idempotencyKey: key,
        orderRunId: input.orderRunId,
        reason: `the order landed, but ${MAX_AUTOMATIC_CONTINUATIONS} follow-up runs failed too (last: ${input.reasonType}: ${input.reason}); resubmit once the cause is fixed`,
        landed: true,
      });
      return finish('FAILED', 'FAILED');
    }
    await resubmitOrder({ order: input.order, orderRunId: input.orderRunId, decidedBy: 'reconciliation' });
    return finish('SUBMITTED', 'ORDER_LANDED');
  }

  /**
   * Waits for an operator's decision until the window closes, looking now and then whether the
   * order landed meanwhile. The failed run's last attempt may have sent its COMMIT before its
   * timeout and the commit landed after reconciliation looked: the record then says SUBMITTED, no
   * operator is asked, and only this run can carry the order on. Answers reconciliation's word on
   * such an order, or undefined once a decision came or the window closed.
   */
  async function waitForDecision(): Promise<Reconciliation | undefined> {
    const windowMs = input.order.policy.decisionTimeoutMs;
    if (!patched(LANDING_CHECKS)) {
      await condition(() => decision !== undefined, windowMs);
      return undefined;
    }
    const windowEnds = Date.now() + windowMs;
    let pause = firstPauseBeforeALook(input.order.policy.startToCloseMs);
    for (;;) {
      const pauseEnds = Math.min(Date.now() + pause, windowEnds);
      if (await condition(() => decision !== undefined, Math.max(1, pauseEnds - Date.now()))) return undefined;
      // A look also when the window has closed, before the key is marked FAILED. One that fails
      // (the database away) leaves the wait as it was.
      const landed = await orderLandedSince(input).catch(() => false);
      if (decision) return undefined;
      if (landed) {
        // No decision is heard from here on: the order is carried on, as reconciliation says.
        state.status = 'SUBMITTED';
        const again = await reconcileFailedWrite(input);
        if (again.orderLanded) return again;
        state.status = 'COMPENSATING';
      }
      if (Date.now() >= windowEnds) return undefined;
      pause = Math.min(pause * 4, LONGEST_PAUSE_BETWEEN_LOOKS_MS);
    }
  }
}

// The signature clients type their calls by (definitions.ts), checked against the function.
const _signature: CompensationWorkflow = compensationWorkflow;
