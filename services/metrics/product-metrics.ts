// The product's own metrics — what on-call needs beyond the SDK's worker metrics: how webhooks were
// answered, orders written, duplicates absorbed (at the edge, and at the unique index — a rising
// count there means a caller regenerates keys), failures by error class, compensations, deliveries,
// broker publishes and the end-to-end latency. Emitted through Temporal's metric meter, so they
// share the worker's Prometheus endpoint.
import { type MetricMeter, noopMetricMeter } from '@temporalio/common';

export type WebhookOutcome = 'accepted' | 'duplicate' | 'conflict' | 'refused';
export type DeliveryOutcome = 'acknowledged' | 'failed' | 'marked_handled';

export interface ProductMetrics {
  /** `reason` names why a webhook was refused (the problem type); empty otherwise. */
  webhookAnswered(outcome: WebhookOutcome, reason?: string): void;
  /** A new order committed; `latencyMs` from the key's first acceptance at the edge. */
  orderWritten(latencyMs: number | undefined): void;
  duplicateAbsorbed(at: 'edge' | 'unique_index'): void;
  /** An activity attempt failed; `retryable` attempts are the retries (unless attempts ran out). */
  activityFailed(activity: string, errorClass: string, retryable: boolean): void;
  compensationStarted(reason: string): void;
  deliveryEnded(outcome: DeliveryOutcome): void;
  /** One publish to the broker ended: `confirmed`, or the error class of its failure. */
  brokerPublished(outcome: string): void;
  /** An operator alert was recorded (`new`) or grew (`grown`): a duplicate cluster or a revocation. */
  alertRecorded(kind: string, change: 'new' | 'grown'): void;
}

export const END_TO_END_LATENCY = 'orders_end_to_end_latency';
/** Milliseconds: a committed order takes ~100 ms on a quiet dev box, minutes after retries. */
export const END_TO_END_BUCKETS_MS = [25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000];

export function productMetrics(meter: MetricMeter): ProductMetrics {
  const webhooks = meter.createCounter('orders_webhooks', 'requests', 'OA webhook deliveries by outcome');
  const written = meter.createCounter('orders_written', 'orders', 'orders committed (new rows only)');
  const absorbed = meter.createCounter('orders_duplicates_absorbed', 'requests', 'duplicate deliveries absorbed');
  const failures = meter.createCounter('orders_activity_failures', 'attempts', 'activity attempts failed, by class');
  const compensations = meter.createCounter('orders_compensations', 'workflows', 'compensations started, by reason');
  const deliveries = meter.createCounter('orders_deliveries', 'events', 'downstream deliveries ended, by outcome');
  const publishes = meter.createCounter('orders_broker_publishes', 'messages', 'broker publishes, by outcome');
  const alerts = meter.createCounter('orders_alerts', 'alerts', 'operator alerts recorded or grown, by kind');
  const latency = meter.createHistogram(
    END_TO_END_LATENCY,
    'int',
    'milliseconds',
    'accepted at the edge → order committed',
  );
  const metrics: ProductMetrics = {
    webhookAnswered: (outcome, reason = '') => webhooks.add(1, { outcome, reason }),
    orderWritten: (latencyMs) => {
      written.add(1);
      if (latencyMs !== undefined) latency.record(Math.max(0, Math.round(latencyMs)));
    },
    duplicateAbsorbed: (at) => absorbed.add(1, { at }),
    activityFailed: (activity, errorClass, retryable) =>
      failures.add(1, { activity, error_class: errorClass, retryable: String(retryable) }),
    compensationStarted: (reason) => compensations.add(1, { reason }),
    deliveryEnded: (outcome) => deliveries.add(1, { outcome }),
    brokerPublished: (outcome) => publishes.add(1, { outcome }),
    alertRecorded: (kind, change) => alerts.add(1, { kind, change }),
  };
  return neverThrowing(metrics);
}

/** Counting is never a reason for a write or a request to fail: a metric that throws is dropped. */
function neverThrowing(metrics: ProductMetrics): ProductMetrics {
  const guarded = {} as Record<string, unknown>;
  for (const [name, record] of Object.entries(metrics) as [string, (...args: unknown[]) => void][]) {
    guarded[name] = (...args: unknown[]) => {
      try {
        record(...args);
      } catch {
        // dropped on purpose
      }
    };
  }
  return guarded as unknown as ProductMetrics;
}

/** Metrics that go nowhere: processes without METRICS_PORT, and tests. */
export function noProductMetrics(): ProductMetrics {
  return productMetrics(noopMetricMeter);
}
