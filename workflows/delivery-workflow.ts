// The delivery workflow (id `delivery-<key>`): an operator's decision on a failed delivery once the
// order workflow that waited for it has closed. `redeliver` sends the same event — same key, same
// event id, built from the order as written — under the same retry policy and records DELIVERED or
// DELIVERY_FAILED; `mark-handled` records DELIVERED with who decided and sends nothing.
import {
  ActivityFailure,
  ApplicationFailure,
  log,
  proxyActivities,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type * as activities from '../activities/index.js';
import { compensationStep, downstreamDelivery } from './activity-presets.js';
import type { DecisionResult, DeliveryDecisionInput, DeliveryWorkflow } from './definitions.js';
import { OrderStatus } from './search-attributes.js';

type Activities = ReturnType<typeof activities.createActivities>;

const { recordDeliveryOutcome } = proxyActivities<Activities>({
  ...compensationStep,
  summary: 'record how the delivery ended',
});

export async function deliveryWorkflow(input: DeliveryDecisionInput): Promise<DecisionResult> {
  const key = input.order.idempotencyKey;
  log.info('delivery decision', { idempotencyKey: key, decision: input.decision, decidedBy: input.decidedBy });
  if (input.decision === 'mark-handled') {
    const recorded = await recordDeliveryOutcome({
      idempotencyKey: key,
      status: 'DELIVERED',
      decidedBy: input.decidedBy,
    });
    return finish(recorded ?? 'DELIVERED', 'MARKED_HANDLED');
  }
  const { deliverOrderEvent } = proxyActivities<Activities>({
    ...downstreamDelivery(input.order.policy),
    summary: `send order.created to the downstream again, Idempotency-Key ${key}`,
  });
  try {
    await deliverOrderEvent({ order: input.order, written: input.written });
    return finish('DELIVERED', 'REDELIVERED');
  } catch (error) {
    const recorded = await recordDeliveryOutcome({
      idempotencyKey: key,
      status: 'DELIVERY_FAILED',
      lastError: failureText(error),
    });
    // An attempt whose acknowledgement was recorded but whose completion got lost still counts.
    return finish(recorded === 'DELIVERED' ? 'DELIVERED' : 'DELIVERY_FAILED', 'REDELIVERY_FAILED');
  }

  // Reports the status the steps recorded; the record's own change was checked against the
  // transition table (domain/order-status.ts) by the writer.
  function finish(status: DecisionResult['status'], outcome: string): DecisionResult {
    upsertSearchAttributes([{ key: OrderStatus, value: status }]);
    return { idempotencyKey: key, status, outcome };
  }
}

/** `<type>: <message>` of the delivery's last failure, as the order workflow records it. */
function failureText(error: unknown): string {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof ApplicationFailure) return `${cause.type ?? 'Error'}: ${cause.message}`;
  if (cause instanceof Error) return `${cause.name}: ${cause.message}`;
  return String(cause);
}

// The signature clients type their calls by (definitions.ts), checked against the function.
const _signature: DeliveryWorkflow = deliveryWorkflow;
