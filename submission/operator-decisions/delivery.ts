// Delivery decisions: an operator's `redeliver` or `mark-handled` for a delivery the downstream
// refused, carried out by the order workflow while it waits, or by a delivery workflow of its own
// once that has closed.
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { findRecord } from '../../services/db/idempotency-records.js';
import { findOrderByKey } from '../../services/db/order-repository.js';
import { isTemporalUnreachable } from '../../services/temporal/connection.js';
import { describeIfExists } from '../../services/temporal/order-workflows.js';
import {
  decideUpdate,
  type DecisionResult,
  type DeliveryDecision,
  type DeliveryDecisionInput,
  type DeliveryWorkflow,
  deliveryWorkflowIdFor,
  isFormOrder,
  type OrderWorkflow,
} from '../../workflows/definitions.js';
import {
  ApprovalNo,
  CustomerId,
  IdempotencyKey,
  OrderStatus as OrderStatusAttribute,
} from '../../workflows/search-attributes.js';
import { workflowInputFromRecord } from '../submit-approval.js';
import { closesSoon, NoPendingDecisionError, notConfirmed, type OperatorDeps, withinConfirmation } from './shared.js';

export interface DeliveryDecisionRequest {
  idempotencyKey: string;
  decision: DeliveryDecision;
  /** Who decided: recorded with the decision. */
  decidedBy: string;
}

/**
 * Carries out an operator's decision on a failed delivery — `redeliver` (the same event: same key,
 * same event id) or `mark-handled` (DELIVERED, with who decided) — whether or not the order
 * workflow still runs: while it waits, its own `decide` update; once it has closed, the
 * `delivery-<key>` workflow. Only a DELIVERY_FAILED key is decided; asking again once it was
 * carried out is refused and changes nothing.
 */
export async function decideDelivery(deps: OperatorDeps, request: DeliveryDecisionRequest): Promise<DecisionResult> {
  const key = request.idempotencyKey;
  const args = { decision: request.decision, decidedBy: request.decidedBy };
  try {
    const record = await findRecord(deps.prisma, key);
    if (!record) throw new NoPendingDecisionError(key, 'the key is unknown (or its record expired)');
    if (record.status !== 'DELIVERY_FAILED') {
      throw new NoPendingDecisionError(
        key,
        `its status is ${record.status}; only DELIVERY_FAILED can be redelivered or marked handled`,
      );
    }
    const orderId = orderWorkflowIdFor(key);
    const order = await describeIfExists(deps.temporal, orderId);
    if (order?.status.name === 'RUNNING') {
      const handle = deps.temporal.workflow.getHandle<OrderWorkflow>(orderId);
      try {
        return await withinConfirmation(deps.temporal, () => handle.executeUpdate(decideUpdate, { args: [args] }));
      } catch (error) {
        if (!(error instanceof WorkflowUpdateFailedError)) throw error;
        // Refused: its window closed just now (the run ends at once), or another decision is
        // being carried out (the run goes on). Decide once the run has ended; else say why not.
        if (!(await closesSoon(deps, orderId, order.runId))) {
          throw new NoPendingDecisionError(
            key,
            `${orderId} refused it (${error.cause?.message ?? error.message}); another decision may be under way — check the key's status`,
          );
        }
        return await decideDelivery(deps, request);
      }
    }
    const written = await findOrderByKey(deps.prisma, key);
    const fromRecord = workflowInputFromRecord(record, deps.writePolicy);
    if (!written || isFormOrder(fromRecord)) {
      throw new NoPendingDecisionError(key, 'no order is written under the key');
    }
    const input: DeliveryDecisionInput = {
      order: fromRecord,
      written: {
        orderId: written.orderId,
        orderNo: written.orderNo,
        totalAmount: written.totalAmount,
        writtenAttempt: written.writtenAttempt,
        attempt: written.writtenAttempt,
        alreadyWritten: true,
        createdAt: written.createdAt.toISOString(),
        deliveryConfigured: true,
        // The writing worker's targets, as its transaction recorded them with the order: the
        // delivery then refuses to run on a worker that lacks one, instead of sending to the
        // targets this operator's worker happens to have and recording DELIVERED.
        deliveryTargets: written.deliveryTargets,
      },
      ...args,
    };
    // One decision per key at a time: a second one while it runs waits for the same answer.
    const handle = await deps.temporal.workflow.start<DeliveryWorkflow>('deliveryWorkflow', {
      taskQueue: deps.taskQueue,
      workflowId: deliveryWorkflowIdFor(key),
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      typedSearchAttributes: [
        { key: ApprovalNo, value: record.approvalNo },
        { key: IdempotencyKey, value: key },
        { key: CustomerId, value: fromRecord.order.customerId },
        { key: OrderStatusAttribute, value: 'DELIVERY_FAILED' },
      ],
      staticSummary: `Delivery decision for ${key}: ${request.decision} by ${request.decidedBy}`,
    });
    return await withinConfirmation(deps.temporal, () => handle.result());
  } catch (error) {
    if (isTemporalUnreachable(error) && !(error instanceof NoPendingDecisionError)) throw notConfirmed(key, error);
    throw error;
  }
}
