// The order write activity: the order, its lines and its stock reservation in one transaction,
// with the key's move to SUBMITTED in the same statement — or, when an earlier attempt already
// committed the key, that order returned as success.
import { Context, log } from '@temporalio/activity';
import { IdempotencyConflictError } from '../domain/errors.js';
import { isOaVendor } from '../domain/oa-approval.js';
import { alertLogLine } from '../services/db/duplicate-scan.js';
import {
  findOrderByKey,
  insertOrderWithReservation,
  isIdempotencyKeyViolation,
  type StoredOrder,
} from '../services/db/order-repository.js';
import { transitionFrom, transitionStatus } from '../services/db/order-status-writer.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import { recordRevocationAlert } from '../services/db/revocation-alerts.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import type { DeliveryTarget, OrderWorkflowInput, OrderWriteResult } from '../workflows/definitions.js';
import { toActivityFailure } from './activity-failure.js';

/** The database steps of the write, each run on the client or transaction it is handed. */
export const orderWriteDatabase = {
  insertOrderWithReservation,
  findOrderByKey,
  transitionStatus,
  recordRevocationAlert,
};

export function createOrderWriteActivities(deps: {
  prisma: PrismaClient;
  metrics: ProductMetrics;
  deliveryTargets: DeliveryTarget[];
  /** The database steps; a unit test stands them in, everything else runs these. */
  database?: typeof orderWriteDatabase;
}) {
  const { prisma, metrics, deliveryTargets, database = orderWriteDatabase } = deps;
  const deliveryConfigured = deliveryTargets.length > 0;

  /**
   * Writes the order, its lines and the stock reservation in one transaction. Insert first: the
   * unique index `uk_order_idempotent` decides. A violation means an earlier attempt (or another
   * entry point) committed this key — "already done" is success when the fingerprint matches and
   * a conflict when it does not. Never check-then-insert.
   */
  async function writeOrder(input: OrderWorkflowInput): Promise<OrderWriteResult> {
    const { attempt } = Context.current().info;
    const key = input.idempotencyKey;
    log.info('writing order', { idempotencyKey: key, attempt });
    try {
      const { order, acceptedAt, recordChange } = await prisma.$transaction(
        (tx) =>
          database.insertOrderWithReservation(
            tx,
            // The targets go into the order's own row: an operator's delivery after this run has
            // closed reads them there, never from the worker it happens to run on.
            { ...input, writtenAttempt: attempt, deliveryTargets },
            { status: 'SUBMITTED', attempts: attempt, lastError: null },
          ),
        // Prisma's own timers end the transaction (rolled back) before Temporal gives up on the
        // attempt, so a slow attempt seldom commits after a later step already looked for it. The
        // timers start with this code, not when the attempt was handed out, and a COMMIT already
        // sent is not taken back: compensation looks again while it waits (decision 7).
        transactionTimers(input.policy.startToCloseMs),
      );
      transitionFrom(recordChange, key, 'SUBMITTED', log);
      log.info('order committed', { idempotencyKey: key, orderNo: order.orderNo, attempt });
      // An OA approval may have been revoked while its form was read and its order written.
      if (recordChange && isOaVendor(recordChange.source)) await alertIfRevoked(key);
      metrics.orderWritten(acceptedAt ? Date.now() - acceptedAt.getTime() : undefined);
      return { ...pick(order), attempt, alreadyWritten: false, deliveryConfigured, deliveryTargets };
    } catch (error) {
      if (!isIdempotencyKeyViolation(error)) throw toActivityFailure(error, attempt, input.policy);
    }
    // PostgreSQL aborted the transaction at the violation: read the winner after it, not inside.
    try {
      const existing = await database.findOrderByKey(prisma, key);
      if (!existing) throw new Error(`order ${key} reported as existing but not found`);
      if (existing.fingerprint !== input.fingerprint) {
        throw new IdempotencyConflictError(key, existing.fingerprint, input.fingerprint);
      }
      await database.transitionStatus(prisma, key, 'SUBMITTED', { attempts: attempt, ranAgain: true }, log);
      // The attempt that committed may have ended before its revocation check (see above).
      await alertIfRevoked(key);
      log.info('order already written; returning it', { idempotencyKey: key, orderNo: existing.orderNo, attempt });
      metrics.duplicateAbsorbed('unique_index');
      // The targets are those the write recorded with the order (an order written before they
      // were recorded has none: this worker's then).
      const recorded = existing.deliveryTargets.length > 0 ? existing.deliveryTargets : deliveryTargets;
      return {
        ...pick(existing),
        attempt,
        alreadyWritten: true,
        deliveryConfigured: recorded.length > 0,
        deliveryTargets: recorded,
      };
    } catch (error) {
      throw toActivityFailure(error, attempt, input.policy);
    }
  }

  /** Raises the operator alert when the key's approval was revoked in its OA (once per key). */
  async function alertIfRevoked(key: string): Promise<void> {
    const alert = await database.recordRevocationAlert(prisma, key);
    if (!alert) return;
    metrics.alertRecorded(alert.kind, alert.change);
    log.warn(alertLogLine(alert), { alertId: alert.alertId, kind: alert.kind, idempotencyKey: key });
  }

  return { writeOrder };
}

function pick(order: StoredOrder) {
  return {
    orderId: order.orderId,
    orderNo: order.orderNo,
    totalAmount: order.totalAmount,
    writtenAttempt: order.writtenAttempt,
    createdAt: order.createdAt.toISOString(),
  };
}

/** Waiting for a connection plus running the transaction stays within 80 % of start-to-close. */
export function transactionTimers(startToCloseMs: number): { maxWait: number; timeout: number } {
  const maxWait = Math.max(100, Math.floor(startToCloseMs * 0.2));
  return { maxWait, timeout: Math.max(200, Math.floor(startToCloseMs * 0.8) - maxWait) };
}
