// The gauges that are read rather than counted: the process's resident memory, and — in a process
// that runs the worker — the keys waiting in each waiting status, from the database. Sampled at
// once and then every METRICS_SAMPLE_INTERVAL_SECONDS; a sample that fails is logged and the next
// one tries again: a gauge is never a reason for a process to stop.
import type { Logger } from 'pino';
import { classifyError } from '../../domain/error-classification.js';
import { messageOf } from '../../domain/errors.js';
import { scrubbed } from '../../domain-node/redact-url.js';
import { countKeysByStatus } from '../db/key-counts.js';
import type { Db } from '../db/prisma-client.js';
import { type ProductMetrics, WAITING_STATUSES } from './product-metrics.js';

export interface MetricsSampler {
  /** One sample now (what the timer runs); resolves when it is exported or its failure logged. */
  sample(): Promise<void>;
  stop(): void;
}

export function startMetricsSampler(options: {
  metrics: ProductMetrics;
  intervalMs: number;
  log: Pick<Logger, 'warn'>;
  /** Given where the worker runs: only one kind of process reports the keys (docs/operations.md). */
  keysFrom?: Db;
}): MetricsSampler {
  const { metrics, keysFrom, log } = options;
  let running: Promise<void> | undefined;
  const sampleOnce = async () => {
    metrics.memorySampled(process.memoryUsage().rss);
    if (!keysFrom) return;
    try {
      const counts = await countKeysByStatus(keysFrom, WAITING_STATUSES);
      for (const status of WAITING_STATUSES) metrics.keysCounted(status, counts[status]);
    } catch (error) {
      // The class and the message, any URL in it redacted: a driver's message may name the database URL.
      log.warn(
        { errorClass: classifyError(error).errorClass, reason: scrubbed(messageOf(error), []) },
        'metrics: could not count the waiting keys; orders_keys keeps its last sample',
      );
    }
  };
  // A slow database never stacks samples up: a tick that finds one running skips.
  const sample = () => (running ??= sampleOnce().finally(() => (running = undefined)));
  const timer = setInterval(() => void sample(), options.intervalMs);
  timer.unref();
  void sample();
  return { sample, stop: () => clearInterval(timer) };
}
