// The product's own metrics — what on-call needs beyond the SDK's worker metrics: how webhooks were
// answered, how the API answered every request (by route pattern and status class), orders written, duplicates absorbed (at the edge, and at the unique index — a rising
// count there means a caller regenerates keys), deliveries refused because another door holds their
// key, failures by error class, compensations, deliveries,
// broker publishes, the end-to-end and start latencies, and the sampled gauges (waiting keys, the
// process's memory). Emitted through Temporal's metric meter, so they share the worker's
// Prometheus endpoint. Durations are in seconds, as Prometheus's base unit.
import { type MetricMeter, noopMetricMeter } from '@temporalio/common';
import { TABLE } from '../../domain/error-classification.js';
import type { DuplicateKind } from '../../domain/safety-nets.js';
import type { OrderStatus } from '../../domain/order-status.js';
import type { KeySource } from '../../domain/idempotency-key.js';

export type WebhookOutcome = 'accepted' | 'duplicate' | 'conflict' | 'refused';
export type DeliveryOutcome = 'acknowledged' | 'failed' | 'marked_handled';
/** What became of a click on a decision card (`refused`: not a decision offered, or not carried out). */
export type CardClickResult = 'decided' | 'already_decided' | 'not_operator' | 'refused';
/** One step of a decision card: posted, a post that failed (retried), or redrawn with its outcome. */
export const DECISION_CARD_STEPS = ['sent', 'send_failed', 'updated'] as const;
export type DecisionCardStep = (typeof DECISION_CARD_STEPS)[number];
/** How an approval's receipt settled: posted (or found posted), or failed once its retries ran out. */
export const RECEIPT_RESULTS = ['posted', 'failed'] as const;
export type ReceiptResult = (typeof RECEIPT_RESULTS)[number];

export interface ProductMetrics {
  /** `reason` names why a webhook was refused (the problem type); empty otherwise. */
  webhookAnswered(outcome: WebhookOutcome, reason?: string): void;
  /** The API answered a request on `route` (its pattern, or `unmatched`) with `status`. */
  httpAnswered(route: string, status: number): void;
  /** Each route's 5xx count exported at 0, so that the first server error is an increase. */
  httpErrorsAtZero(routes: readonly string[]): void;
  /** A new order committed; `latencyMs` from the key's first acceptance at the edge. */
  orderWritten(latencyMs: number | undefined): void;
  /** A webhook delivery was accepted (202) without a wait: `seconds` from its arrival to the answer. */
  webhookStarted(seconds: number): void;
  duplicateAbsorbed(at: 'edge' | 'unique_index'): void;
  /** An activity attempt failed; `retryable` attempts are the retries (unless attempts ran out). */
  activityFailed(activity: string, errorClass: string, retryable: boolean): void;
  compensationStarted(reason: string): void;
  deliveryEnded(outcome: DeliveryOutcome): void;
  /** One publish to the broker ended: `confirmed`, or the error class of its failure. */
  brokerPublished(outcome: string): void;
  /** An operator alert was recorded (`new`) or grew (`grown`): a duplicate cluster or a revocation. */
  alertRecorded(kind: string, change: 'new' | 'grown'): void;
  /** The sampled count of idempotency records in a waiting status. */
  keysCounted(status: WaitingStatus, count: number): void;
  /** The sampled resident set size of this process. */
  memorySampled(residentBytes: number): void;
  /** An outbound event connection (Feishu's long connection, DingTalk's Stream) is up, or not. */
  connectionUp(vendor: string, up: boolean): void;
  /** A delivery through `door` was refused: another door holds its key (docs/architecture.md, decision 38). */
  keySourceConflict(door: KeySource): void;
  /** A click on `vendor`'s decision card ended as `result` (`not_operator`: nothing decided). */
  cardClicked(vendor: string, result: CardClickResult): void;
  /** A step of one of `vendor`'s decision cards. */
  decisionCardStep(vendor: string, step: DecisionCardStep): void;
  /** Every step of the cards of `vendors` exported at 0, by the worker that posts them, at its start. */
  decisionCardStepsAtZero(vendors: readonly string[]): void;
  /** An approval's receipt at `vendor` settled, counted once per key. */
  receiptSettled(vendor: string, result: ReceiptResult): void;
  /** Every result of the receipts of `vendors` exported at 0, by the worker that posts them, at its start. */
  receiptsAtZero(vendors: readonly string[]): void;
  /**
   * The refusals the alert rules watch — the 503s, and the deliveries refused as another door's —
   * exported at 0 by the process that answers webhooks, so that the first one is an increase and
   * not a series that appears. `doors`: every door a delivery can be refused at (the webhook, MCP
   * and the OA vendors of vendors/registry.ts), from the caller, which knows them.
   */
  webhookRefusalsAtZero(doors: readonly KeySource[]): void;
}

/**
 * The statuses in which a key waits — for its write (RECEIVED, also a claim whose start was never
 * confirmed) or for a person (the other three). The others are where a key ends, and only grow.
 */
export const WAITING_STATUSES = [
  'RECEIVED',
  'COMPENSATING',
  'DELIVERY_FAILED',
  'FAILED',
] as const satisfies readonly OrderStatus[];
export type WaitingStatus = (typeof WAITING_STATUSES)[number];

/** The refusal reasons (problem type slugs) of the 503 alert. */
export const SHED_REASONS = ['overloaded', 'temporal-unavailable'] as const;
const ALERT_KINDS: readonly DuplicateKind[] = ['SAME_DOCUMENT', 'NEAR_IDENTICAL', 'REVOKED_AFTER_ORDER'];

/**
 * A compensation whose failure class is one the write retries means its attempts (or its
 * schedule-to-close) ran out; any other class failed for good on its first attempt.
 */
const RETRIED_CLASSES = new Set<string>([
  ...TABLE.filter((row) => row.retryable).map((row) => row.errorClass),
  'ActivityTimeout',
]);

/** Exported as `orders_end_to_end_latency_seconds`: the exporter adds the unit. */
export const END_TO_END_LATENCY = 'orders_end_to_end_latency';
/** Seconds: a committed order takes ~0.1 s on a quiet dev box, minutes after retries. */
export const END_TO_END_BUCKETS_SECONDS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** Exported as `orders_webhook_start_seconds`. */
export const WEBHOOK_START = 'orders_webhook_start';
/** Seconds, fine below WEBHOOK_START_TIMEOUT_MS (5 s by default), where the alert looks. */
export const WEBHOOK_START_BUCKETS_SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 7.5, 10, 20];

/** The route label of a request no route matched: its path would make a series per stranger's URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/** `2xx` … `5xx`: five values at most, whatever status a route answers. */
export const statusClass = (status: number) => `${Math.min(5, Math.max(1, Math.floor(status / 100)))}xx`;

export function productMetrics(meter: MetricMeter): ProductMetrics {
  const webhooks = meter.createCounter('orders_webhooks', 'requests', 'OA webhook deliveries by outcome');
  const http = meter.createCounter(
    'orders_http_requests',
    'requests',
    "the API's answers by route pattern and status class",
  );
  const written = meter.createCounter('orders_written', 'orders', 'orders committed (new rows only)');
  const absorbed = meter.createCounter('orders_duplicates_absorbed', 'requests', 'duplicate deliveries absorbed');
  const failures = meter.createCounter('orders_activity_failures', 'attempts', 'activity attempts failed, by class');
  const compensations = meter.createCounter('orders_compensations', 'workflows', 'compensations started, by reason');
  const deliveries = meter.createCounter('orders_deliveries', 'events', 'downstream deliveries ended, by outcome');
  const publishes = meter.createCounter('orders_broker_publishes', 'messages', 'broker publishes, by outcome');
  const alerts = meter.createCounter('orders_alerts', 'alerts', 'operator alerts recorded or grown, by kind');
  const sourceConflicts = meter.createCounter(
    'orders_key_source_conflicts',
    'requests',
    'deliveries refused because another door holds their key, by the door refused',
  );
  const cardClicks = meter.createCounter(
    'orders_card_clicks',
    'clicks',
    'decision card clicks, by vendor and what became of them',
  );
  const cards = meter.createCounter(
    'orders_decision_cards',
    'cards',
    'decision card posts and redraws, by vendor and result',
  );
  const receipts = meter.createCounter(
    'orders_receipts',
    'receipts',
    'approval receipts (the order number written into its approval), by vendor and how each settled',
  );
  const latency = meter.createHistogram(
    END_TO_END_LATENCY,
    'float',
    'seconds',
    'accepted at the edge → order committed',
  );
  const started = meter.createHistogram(WEBHOOK_START, 'float', 'seconds', 'webhook arrival → 202 answer');
  // No unit: the exporter would add it to the name.
  const keys = meter.createGauge('orders_keys', 'int', '', 'idempotency records in a waiting status (sampled)');
  const memory = meter.createGauge('orders_process_resident_memory_bytes', 'int', '', 'resident set size (sampled)');
  const connections = meter.createGauge(
    'orders_oa_connection_up',
    'int',
    '',
    'outbound OA event connection up (1) or not (0)',
  );
  // Exported at 0 from the start, so the first alert is an increase the rules see.
  try {
    for (const kind of ALERT_KINDS) for (const change of ['new', 'grown']) alerts.add(0, { kind, change });
  } catch {
    // counting is never a reason for a process not to start
  }
  const metrics: ProductMetrics = {
    webhookAnswered: (outcome, reason = '') => webhooks.add(1, { outcome, reason }),
    httpAnswered: (route, status) => http.add(1, { route, status_class: statusClass(status) }),
    httpErrorsAtZero: (routes) => {
      for (const route of routes) http.add(0, { route, status_class: '5xx' });
    },
    orderWritten: (latencyMs) => {
      written.add(1);
      if (latencyMs !== undefined) latency.record(Math.max(0, latencyMs) / 1000);
    },
    webhookStarted: (seconds) => started.record(Math.max(0, seconds)),
    duplicateAbsorbed: (at) => absorbed.add(1, { at }),
    activityFailed: (activity, errorClass, retryable) =>
      failures.add(1, { activity, error_class: errorClass, retryable: String(retryable) }),
    compensationStarted: (reason) => compensations.add(1, { reason, retryable: String(RETRIED_CLASSES.has(reason)) }),
    deliveryEnded: (outcome) => deliveries.add(1, { outcome }),
    brokerPublished: (outcome) => publishes.add(1, { outcome }),
    alertRecorded: (kind, change) => alerts.add(1, { kind, change }),
    keysCounted: (status, count) => keys.set(count, { status }),
    memorySampled: (residentBytes) => memory.set(residentBytes),
    connectionUp: (vendor, up) => connections.set(up ? 1 : 0, { vendor }),
    keySourceConflict: (door) => sourceConflicts.add(1, { door }),
    cardClicked: (vendor, result) => cardClicks.add(1, { vendor, result }),
    decisionCardStep: (vendor, step) => cards.add(1, { vendor, result: step }),
    decisionCardStepsAtZero: (vendors) => {
      for (const vendor of vendors) for (const step of DECISION_CARD_STEPS) cards.add(0, { vendor, result: step });
    },
    receiptSettled: (vendor, result) => receipts.add(1, { vendor, result }),
    receiptsAtZero: (vendors) => {
      for (const vendor of vendors) for (const result of RECEIPT_RESULTS) receipts.add(0, { vendor, result });
    },
    webhookRefusalsAtZero: (doors) => {
      for (const reason of SHED_REASONS) webhooks.add(0, { outcome: 'refused', reason });
      for (const door of doors) sourceConflicts.add(0, { door });
    },
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
