// Tells the downstream ERP that an order was written: POST the `order.created` event, signed in
// both schemes (docs/downstream.md), with the order's own key in Idempotency-Key and a stable
// X-Event-Id (also the webhook-id), and records how the delivery ended. Temporal's history is the
// outbox: a worker that dies between the commit and this call leaves the step pending, and the next
// worker runs it — with the same key and event id, never another.
import { Context, log } from '@temporalio/activity';
import type { DownstreamConfig } from '../services/config/env.js';
import { findRecord } from '../services/db/idempotency-records.js';
import { statusAfter, transitionStatus } from '../services/db/order-status-writer.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { OrderStatus } from '../domain/order-status.js';
import { DownstreamHttpError, DownstreamTimeoutError } from '../domain/errors.js';
import { eventIdFor, ORDER_CREATED, type OrderCreatedEvent } from '../domain-node/order-event.js';
import { parseRetryAfterMs } from '../domain/retry-after.js';
import { eventSignatureHeaders } from '../domain-node/signature.js';
import type { OrderWorkflowInput, OrderWriteResult } from '../workflows/definitions.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import { toActivityFailure } from './activity-failure.js';
import { inSpan, KEY_ATTRIBUTE, traceHeaders } from '../services/telemetry/tracing.js';

export interface DeliveryReceipt {
  status: number;
  attempt: number;
  eventId: string;
}

export function buildOrderCreatedEvent(order: OrderWorkflowInput, written: OrderWriteResult): OrderCreatedEvent {
  return {
    type: ORDER_CREATED,
    eventId: eventIdFor(order.idempotencyKey),
    idempotencyKey: order.idempotencyKey,
    orderNo: written.orderNo,
    approvalNo: order.approvalNo,
    operation: order.operation,
    customerId: order.order.customerId,
    currency: order.order.currency,
    lines: order.order.lines,
    totalAmount: written.totalAmount,
    occurredAt: written.createdAt,
  };
}

export function createDeliveryActivities(deps: {
  prisma: PrismaClient;
  downstream: DownstreamConfig | undefined;
  metrics: ProductMetrics;
}) {
  async function deliverOrderEvent(request: {
    order: OrderWorkflowInput;
    written: OrderWriteResult;
  }): Promise<DeliveryReceipt> {
    const { attempt } = Context.current().info;
    const { downstream } = deps;
    const event = buildOrderCreatedEvent(request.order, request.written);
    const key = event.idempotencyKey;
    const timing = request.order.policy;
    if (!downstream) {
      throw toActivityFailure(new Error('DOWNSTREAM_URL is not configured on this worker'), attempt);
    }
    // The body is the same bytes on every attempt; only the timestamp and its signature change.
    const body = JSON.stringify(event);
    const timestamp = String(Math.floor(Date.now() / 1000));
    log.info('delivering order event', { idempotencyKey: key, eventId: event.eventId, attempt });
    let response: Response;
    try {
      // With tracing on, the POST is a span of the approval's trace and carries it (`traceparent`).
      response = await inSpan(
        `POST ${ORDER_CREATED}`,
        'client',
        { [KEY_ATTRIBUTE]: key, 'http.request.method': 'POST', 'url.full': downstream.url },
        async (span) => {
          const answer = await fetch(downstream.url, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'idempotency-key': key,
              'x-event-id': event.eventId,
              // X-Event-Timestamp / X-Event-Signature and the Standard Webhooks headers beside them.
              ...eventSignatureHeaders(downstream, event.eventId, timestamp, body),
              ...traceHeaders(),
            },
            body,
            redirect: 'manual',
            signal: AbortSignal.timeout(downstream.timeoutMs),
          });
          span?.setAttribute('http.response.status_code', answer.status);
          return answer;
        },
      );
    } catch (error) {
      const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
      throw toActivityFailure(timedOut ? new DownstreamTimeoutError(downstream.timeoutMs) : error, attempt, timing);
    }
    const text = await response.text().catch(() => '');
    if (!response.ok) {
      const failure = new DownstreamHttpError(
        response.status,
        parseRetryAfterMs(response.headers.get('retry-after')),
        text.slice(0, 200),
      );
      log.warn('downstream refused the event', { idempotencyKey: key, status: response.status, attempt });
      throw toActivityFailure(failure, attempt, timing);
    }
    try {
      await transitionStatus(deps.prisma, key, 'DELIVERED', {}, log);
    } catch (error) {
      // Delivered but not recorded: the retry delivers again and the consumer deduplicates by key.
      throw toActivityFailure(error, attempt, timing);
    }
    log.info('order event acknowledged', {
      idempotencyKey: key,
      eventId: event.eventId,
      status: response.status,
      attempt,
    });
    deps.metrics.deliveryEnded('acknowledged');
    return { status: response.status, attempt, eventId: event.eventId };
  }

  /**
   * Records the delivery's end: DELIVERY_FAILED with the downstream's answer, or DELIVERED when an
   * operator marks it handled. Returns the status the record holds afterwards: an attempt whose
   * acknowledgement was recorded but whose completion never reached Temporal (the worker died, the
   * attempt timed out) left DELIVERED there, and that acknowledgement stands.
   */
  async function recordDeliveryOutcome(request: {
    idempotencyKey: string;
    status: 'DELIVERY_FAILED' | 'DELIVERED';
    lastError?: string;
    decidedBy?: string;
  }): Promise<OrderStatus | undefined> {
    let lastError = request.lastError;
    if (request.status === 'DELIVERED' && request.decidedBy !== undefined) {
      // Marked handled: the downstream was never told, so say who decided that and why it was needed.
      const before = (await findRecord(deps.prisma, request.idempotencyKey))?.lastError;
      lastError = `marked handled by ${request.decidedBy}; the downstream was not told${before ? ` (last delivery error: ${before})` : ''}`;
    }
    const transition = await transitionStatus(
      deps.prisma,
      request.idempotencyKey,
      request.status,
      lastError !== undefined ? { lastError } : {},
      log,
    );
    const recorded = statusAfter(transition, request.status);
    log.info('delivery outcome recorded', { ...request, recorded });
    if (recorded === request.status)
      deps.metrics.deliveryEnded(request.status === 'DELIVERED' ? 'marked_handled' : 'failed');
    return recorded;
  }

  return { deliverOrderEvent, recordDeliveryOutcome };
}
