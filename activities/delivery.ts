// Tells the downstream ERP that an order was written: POST the `order.created` event, signed in
// both schemes (docs/downstream.md), with the order's own key in Idempotency-Key and a stable
// X-Event-Id (also the webhook-id), and/or publish it to the broker with that id as its message id;
// and records how the delivery ended. Temporal's history is the
// outbox: a worker that dies between the commit and this call leaves the step pending, and the next
// worker runs it — with the same key and event id, never another.
import type { Attributes } from '@opentelemetry/api';
import { Context, log } from '@temporalio/activity';
import type { DownstreamConfig } from './settings.js';
import { findRecord } from '../services/db/idempotency-records.js';
import { statusAfter, transitionStatus } from '../services/db/order-status-writer.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { OrderStatus } from '../domain/order-status.js';
import {
  DeliveryTargetMissingError,
  DownstreamHttpError,
  DownstreamTimeoutError,
  messageOf,
} from '../domain/errors.js';
import { eventIdFor, ORDER_CREATED, type OrderCreatedEvent } from '../domain-node/order-event.js';
import { parseRetryAfterMs } from '../domain/retry-after.js';
import { eventSignatureHeaders } from '../domain-node/signature.js';
import type { DeliveryTarget, OrderWorkflowInput, OrderWriteResult } from '../workflows/definitions.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import type { OrderEventPublisher } from '../services/broker/order-event-publisher.js';
import { classifyError, MARKED_HANDLED } from '../domain/error-classification.js';
import { toActivityFailure } from './activity-failure.js';
import { errorTypeOf, inSpan, KEY_ATTRIBUTE, traceHeaders } from '../services/telemetry/tracing.js';
import { httpClientAttributes, httpSpanName } from '../services/telemetry/span-conventions.js';

export interface DeliveryReceipt {
  /** The downstream's HTTP status, when DOWNSTREAM_URL is configured. */
  status?: number;
  /** Whether the broker confirmed the message, when AMQP_URL is configured. */
  brokerConfirmed?: boolean;
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

/**
 * POSTs the event; resolves with the 2xx status, rejects with the failure as it happened.
 * `spanAttributes` are the downstream's own (`httpClientAttributes`), worked out once per worker.
 */
function postToDownstream(
  downstream: DownstreamConfig,
  spanAttributes: Attributes,
  event: OrderCreatedEvent,
  body: string,
): Promise<number> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  // With tracing on, the POST is a client span of the approval's trace and carries it
  // (`traceparent`). Its name is the method alone: the conventions name a client span after a
  // URL template, and the configured URL is none; `url.full` is redacted, since receivers often
  // authenticate with a token in the query. A non-2xx answer fails the span with its status as
  // `error.type`.
  return inSpan(
    httpSpanName('POST'),
    'client',
    { [KEY_ATTRIBUTE]: event.idempotencyKey, ...spanAttributes },
    async (span) => {
      let response: Response;
      try {
        response = await fetch(downstream.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'idempotency-key': event.idempotencyKey,
            'x-event-id': event.eventId,
            // X-Event-Timestamp / X-Event-Signature and the Standard Webhooks headers beside them.
            ...eventSignatureHeaders(downstream, event.eventId, timestamp, body),
            ...traceHeaders(),
          },
          body,
          redirect: 'manual',
          signal: AbortSignal.timeout(downstream.timeoutMs),
        });
      } catch (error) {
        const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
        throw timedOut ? new DownstreamTimeoutError(downstream.timeoutMs) : error;
      }
      span?.setAttribute('http.response.status_code', response.status);
      const text = await response.text().catch(() => '');
      if (!response.ok) {
        log.warn('downstream refused the event', { idempotencyKey: event.idempotencyKey, status: response.status });
        throw new DownstreamHttpError(
          response.status,
          parseRetryAfterMs(response.headers.get('retry-after')),
          text.slice(0, 200),
        );
      }
      return response.status;
    },
    // A refusal's type is the status the downstream answered, as the conventions ask of a client.
    (error) => (error instanceof DownstreamHttpError ? String(error.status) : errorTypeOf(error)),
  );
}

/** The targets a worker with these settings delivers to. */
export function deliveryTargetsOf(settings: {
  downstream?: DownstreamConfig | undefined;
  publisher?: OrderEventPublisher | undefined;
}): DeliveryTarget[] {
  return [...(settings.downstream ? ['http' as const] : []), ...(settings.publisher ? ['broker' as const] : [])];
}

/** The targets the order was written for that this worker lacks (none for an order of before targets). */
export function missingTargets(expected: readonly DeliveryTarget[] | undefined, here: readonly DeliveryTarget[]) {
  return (expected ?? []).filter((target) => !here.includes(target));
}

/**
 * Of the targets that failed in one attempt, the failure the attempt ends with: one that is not
 * retried wins, since retrying would only send to the others again and meet it once more.
 */
function decisiveFailure(failures: readonly unknown[]): unknown {
  return failures.find((failure) => !classifyError(failure).retryable) ?? failures[0];
}

export function createDeliveryActivities(deps: {
  prisma: PrismaClient;
  downstream: DownstreamConfig | undefined;
  publisher: OrderEventPublisher | undefined;
  metrics: ProductMetrics;
}) {
  // The downstream's part of the POST's span, parsed and redacted once rather than per order.
  const downstreamSpanAttributes = deps.downstream ? httpClientAttributes('POST', deps.downstream.url) : {};

  /**
   * Sends the event to every configured target — the HTTP downstream and the broker — side by side,
   * each within its own timeout below the attempt's start-to-close. An attempt succeeds when every
   * target took the event; a retry sends to all of them again, which is safe because each carries
   * the same event id and key (docs/architecture.md, decision 23).
   */
  async function deliverOrderEvent(request: {
    order: OrderWorkflowInput;
    written: OrderWriteResult;
  }): Promise<DeliveryReceipt> {
    const { attempt } = Context.current().info;
    const { downstream, publisher } = deps;
    const event = buildOrderCreatedEvent(request.order, request.written);
    const key = event.idempotencyKey;
    const timing = request.order.policy;
    if (!downstream && !publisher) {
      throw toActivityFailure(new Error('neither DOWNSTREAM_URL nor AMQP_URL is configured on this worker'), attempt);
    }
    // Every target the writing worker delivers to, or none: sending to only some and recording
    // DELIVERED would leave the others without the event, and nothing would show it.
    const missing = missingTargets(request.written.deliveryTargets, deliveryTargetsOf(deps));
    if (missing.length > 0) {
      throw toActivityFailure(new DeliveryTargetMissingError(missing), attempt, timing);
    }
    // The body is the same bytes on every attempt and on every target.
    const body = JSON.stringify(event);
    log.info('delivering order event', { idempotencyKey: key, eventId: event.eventId, attempt });
    const [posted, published] = await Promise.allSettled([
      downstream ? postToDownstream(downstream, downstreamSpanAttributes, event, body) : Promise.resolve(undefined),
      publisher ? publishToBroker(publisher, event, body) : Promise.resolve(),
    ]);
    const failures = [posted, published].flatMap((outcome): unknown[] =>
      outcome.status === 'rejected' ? [outcome.reason] : [],
    );
    if (failures.length > 0) throw toActivityFailure(decisiveFailure(failures), attempt, timing);
    try {
      await transitionStatus(deps.prisma, key, 'DELIVERED', {}, log);
    } catch (error) {
      // Delivered but not recorded: the retry delivers again and the consumer deduplicates by key.
      throw toActivityFailure(error, attempt, timing);
    }
    const receipt: DeliveryReceipt = {
      ...(posted.status === 'fulfilled' && posted.value !== undefined ? { status: posted.value } : {}),
      ...(publisher ? { brokerConfirmed: true } : {}),
      attempt,
      eventId: event.eventId,
    };
    log.info('order event acknowledged', { idempotencyKey: key, ...receipt });
    deps.metrics.deliveryEnded('acknowledged');
    return receipt;
  }

  /** Publishes the event, counting the publish by how it ended (confirmed, or its error class). */
  async function publishToBroker(publisher: OrderEventPublisher, event: OrderCreatedEvent, body: string) {
    try {
      // With tracing on, the publisher makes the publish a span of the approval's trace, and the
      // message carries it in its headers (`traceparent`), as the POST does.
      await publisher.publish({ eventId: event.eventId, idempotencyKey: event.idempotencyKey, body });
      deps.metrics.brokerPublished('confirmed');
    } catch (error) {
      deps.metrics.brokerPublished(classifyError(error).errorClass);
      log.warn('the broker did not take the event', {
        idempotencyKey: event.idempotencyKey,
        error: messageOf(error),
      });
      throw error;
    }
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
      lastError = `${MARKED_HANDLED}: marked handled by ${request.decidedBy}; the downstream was not told${before ? ` (last delivery error: ${before})` : ''}`;
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
