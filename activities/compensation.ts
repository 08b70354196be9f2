// The compensation steps: hand a failed write to `compensation-<key>`, reconcile (did the order land
// after all?) and record why, look again whether it landed since, record an operator's decision,
// start the order again with the same key, and record that compensation ended without a decision.
// Each step is idempotent (keyed by the idempotency key and the failed run), so unlike the write
// they may retry on any failure: their errors go to the compensationStep retry policy as they are.
import { log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { COMPENSATION_ENDED } from '../domain/error-classification.js';
import { orderWorkflowIdFor } from '../domain/idempotency-key.js';
import type { CompensationDecision, OrderStatus } from '../domain/order-status.js';
import {
  continuationsSinceOperatorAction,
  findCompensation,
  recordCompensation,
  recordCompensationDecision,
} from '../services/db/compensation-records.js';
import { findRecord } from '../services/db/idempotency-records.js';
import { findOrderByKey } from '../services/db/order-repository.js';
import { transitionStatus } from '../services/db/order-status-writer.js';
import type { PrismaClient, Tx } from '../services/db/prisma-client.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import {
  startCompensationWorkflow,
  startOrderWorkflow,
  waitForRunToClose,
} from '../services/temporal/order-workflows.js';
import { type CompensationInput, isFormOrder, type OrderWorkflowStart } from '../workflows/definitions.js';

export interface Reconciliation {
  orderLanded: boolean;
  orderNo?: string;
  releasedLines: number;
  /** How often earlier reconciliations of this key already continued a landed order. */
  continuations?: number;
  /** Set when this failed run was already compensated and decided: nothing is done again. */
  priorDecision?: { decision: CompensationDecision; status: OrderStatus };
}

/** The database steps of compensation, each run on the client or transaction it is handed. */
export const compensationDatabase = {
  findRecord,
  findOrderByKey,
  findCompensation,
  recordCompensation,
  recordCompensationDecision,
  continuationsSinceOperatorAction,
  transitionStatus,
};

export function createCompensationActivities(deps: {
  prisma: PrismaClient;
  temporal: Client;
  taskQueue: string;
  metrics: ProductMetrics;
  /** The database steps; a unit test stands them in, everything else runs these. */
  database?: typeof compensationDatabase;
}) {
  const { prisma, metrics, database = compensationDatabase } = deps;

  async function startCompensation(input: CompensationInput): Promise<string> {
    log.warn('order write failed for good; starting compensation', {
      idempotencyKey: input.order.idempotencyKey,
      reasonType: input.reasonType,
    });
    const started = await startCompensationWorkflow(deps.temporal, deps.taskQueue, input);
    metrics.compensationStarted(input.reasonType);
    return started.workflowId;
  }

  /**
   * Reconcile and record — in one transaction, idempotent per failed run: running it again for the
   * same run finds the record and changes nothing.
   */
  async function reconcileFailedWrite(input: CompensationInput): Promise<Reconciliation> {
    const key = input.order.idempotencyKey;
    return prisma.$transaction(async (tx) => {
      const landed = await landedOrder(tx, input);
      const prior = await database.findCompensation(tx, key, input.orderRunId);
      if (!landed && prior?.decision) {
        const record = await database.findRecord(tx, key);
        log.info('this failure was already compensated and decided; nothing to do', { idempotencyKey: key });
        return {
          orderLanded: false,
          releasedLines: 0,
          priorDecision: { decision: prior.decision, status: record?.status ?? 'FAILED' },
        };
      }
      // Nothing is released here. The write is one statement in one transaction: stock is only ever
      // reserved together with its order, so a key without an order holds no reservation. A release
      // here could only be wrong — a slow write may commit between this read and it.
      const releasedLines = 0;
      await database.recordCompensation(tx, {
        idempotencyKey: key,
        orderRunId: input.orderRunId,
        reasonType: input.reasonType,
        reason: input.reason,
        attempts: input.attempts,
        orderLanded: landed !== undefined,
        releasedLines,
      });
      if (landed) {
        log.info('reconciled: the order landed after all', { idempotencyKey: key, orderNo: landed.orderNo });
        await database.transitionStatus(tx, key, 'SUBMITTED', { attempts: input.attempts }, log);
        const continued = await database.continuationsSinceOperatorAction(tx, key, input.orderRunId);
        return { orderLanded: true, orderNo: landed.orderNo, releasedLines, continuations: continued };
      }
      await database.transitionStatus(
        tx,
        key,
        'COMPENSATING',
        { attempts: input.attempts, lastError: `${input.reasonType}: ${input.reason}` },
        log,
      );
      log.info('awaiting an operator decision', { idempotencyKey: key, reasonType: input.reasonType });
      return { orderLanded: false, releasedLines };
    });
  }

  /**
   * Whether the failed run's order is in the database now. Reads only. The wait for an operator
   * asks it now and then: the failed run's last attempt may have sent its COMMIT before it timed
   * out, and the commit may land after reconciliation looked.
   */
  async function orderLandedSince(input: CompensationInput): Promise<boolean> {
    return (await landedOrder(prisma, input)) !== undefined;
  }

  /**
   * The order under the key, when it is *this* order: a row under the key with another fingerprint
   * is the conflict that brought compensation here, not a success. An order that failed while still
   * in its approval form is judged by what the record says the form mapped to, if an earlier run
   * got that far.
   */
  async function landedOrder(db: Tx, input: CompensationInput) {
    const key = input.order.idempotencyKey;
    const fingerprint = isFormOrder(input.order)
      ? ((await database.findRecord(db, key))?.fingerprint ?? undefined)
      : input.order.fingerprint;
    const existing = await database.findOrderByKey(db, key);
    return existing && existing.fingerprint === fingerprint ? existing : undefined;
  }

  async function recordDecision(request: {
    idempotencyKey: string;
    orderRunId: string;
    decision: CompensationDecision;
    decidedBy: string;
    /** With `abandon`: the fingerprint of the order that must not have landed meanwhile. */
    fingerprint?: string;
  }): Promise<{ orderLanded: boolean }> {
    const outcome = await prisma.$transaction(async (tx) => {
      if (request.decision === 'abandon') {
        // A slow attempt may have committed after reconciliation looked: never abandon a live order.
        // Without a fingerprint (an order still in its form) the record names what was mapped.
        const fingerprint =
          request.fingerprint ?? (await database.findRecord(tx, request.idempotencyKey))?.fingerprint ?? undefined;
        const existing = fingerprint ? await database.findOrderByKey(tx, request.idempotencyKey) : undefined;
        if (existing && existing.fingerprint === fingerprint) return { orderLanded: true };
      }
      await database.recordCompensationDecision(tx, request);
      if (request.decision === 'abandon') {
        await database.transitionStatus(tx, request.idempotencyKey, 'COMPENSATED', {}, log);
      }
      return { orderLanded: false };
    });
    log.info('operator decision recorded', {
      idempotencyKey: request.idempotencyKey,
      decision: request.decision,
      ...outcome,
    });
    return outcome;
  }

  /**
   * Resubmit reuses the key: the new run's write finds any committed order, so it cannot double.
   * Also used by reconciliation when the order had landed, so the new run finishes its delivery.
   */
  async function resubmitOrder(request: {
    order: OrderWorkflowStart;
    orderRunId: string;
    decidedBy: string;
  }): Promise<string> {
    const key = request.order.idempotencyKey;
    // The failed run starts compensation moments before it fails. Until it has closed, a start
    // would attach to it (USE_EXISTING) instead of starting the new run: wait for it first.
    await waitForRunToClose(deps.temporal, orderWorkflowIdFor(key), request.orderRunId);
    const started = await startOrderWorkflow(
      deps.temporal,
      deps.taskQueue,
      request.order,
      'ALLOW_DUPLICATE_FAILED_ONLY',
    );
    // Recorded only once the new run exists: a start that keeps failing must leave the key
    // undecided, so compensation run again waits for a decision instead of finding this one.
    // A retry after a lost answer attaches to the run it started, and records it then.
    await recordDecision({
      idempotencyKey: key,
      orderRunId: request.orderRunId,
      decision: 'resubmit',
      decidedBy: request.decidedBy,
    });
    // Refused when the new run already wrote (SUBMITTED) or the order had landed: never dragged back.
    await database.transitionStatus(prisma, key, 'RECEIVED', { lastError: null }, log);
    log.info('order resubmitted with the same key', { idempotencyKey: key, workflowId: started.workflowId });
    return started.workflowId;
  }

  async function markCompensationFailed(request: {
    idempotencyKey: string;
    orderRunId: string;
    reason: string;
    /** The order landed but its follow-up keeps failing: FAILED also from SUBMITTED. */
    landed?: boolean;
  }) {
    await database.transitionStatus(
      prisma,
      request.idempotencyKey,
      'FAILED',
      // Typed like every recorded failure, so the public answer tells it by its type alone.
      { lastError: `${COMPENSATION_ENDED}: ${request.reason}`, orderLanded: request.landed === true },
      log,
    );
    log.error('compensation ended without a decision', {
      idempotencyKey: request.idempotencyKey,
      reason: request.reason,
    });
  }

  return {
    startCompensation,
    reconcileFailedWrite,
    orderLandedSince,
    recordDecision,
    resubmitOrder,
    markCompensationFailed,
  };
}
