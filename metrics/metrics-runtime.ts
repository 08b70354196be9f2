// Turns on the Prometheus endpoint (METRICS_PORT) for a process: the Temporal runtime serves it,
// with the SDK's own metrics and the product's side by side. Must run before any worker or native
// connection is created.
import { Runtime } from '@temporalio/worker';
import type { Config } from '../config/env.js';
import {
  END_TO_END_BUCKETS_MS,
  END_TO_END_LATENCY,
  noProductMetrics,
  productMetrics,
  type ProductMetrics,
} from './product-metrics.js';

export function installMetrics(config: Pick<Config, 'metrics'>, options: { handleSignals: boolean }): ProductMetrics {
  if (!config.metrics) return noProductMetrics();
  Runtime.install({
    // The API stops on its own terms (drain, then close); only the worker lets the SDK take signals.
    ...(options.handleSignals ? {} : { shutdownSignals: [] }),
    telemetryOptions: {
      metrics: {
        prometheus: {
          bindAddress: `${config.metrics.host}:${config.metrics.port}`,
          countersTotalSuffix: true,
          unitSuffix: true,
          histogramBucketOverrides: { [END_TO_END_LATENCY]: END_TO_END_BUCKETS_MS },
        },
      },
    },
  });
  return productMetrics(Runtime.instance().metricMeter);
}
