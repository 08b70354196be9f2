// The Temporal runtime of a process, installed before any worker or native connection exists:
// the SDK's own logs and the workflows' and activities' logs go through the process's logger (JSON,
// at LOG_LEVEL), and METRICS_PORT turns on the Prometheus endpoint, the SDK's metrics and the
// product's side by side.
import { DefaultLogger, type LogEntry, type LogLevel, Runtime } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { MetricsConfig } from '../metrics/settings.js';
import {
  END_TO_END_BUCKETS_SECONDS,
  END_TO_END_LATENCY,
  noProductMetrics,
  productMetrics,
  type ProductMetrics,
  WEBHOOK_START,
  WEBHOOK_START_BUCKETS_SECONDS,
} from '../metrics/product-metrics.js';

const SDK_LEVEL: Record<string, LogLevel> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARN',
  error: 'ERROR',
  fatal: 'ERROR',
  silent: 'ERROR',
};
const PINO_METHOD = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

/**
 * A Temporal logger writing through `log`, filtering at `log`'s level before anything is formatted.
 * The SDK's `error` attribute becomes pino's `err`, so its message and stack are serialised.
 */
export function temporalLoggerFor(log: Logger): DefaultLogger {
  return new DefaultLogger(SDK_LEVEL[log.level] ?? 'INFO', (entry: LogEntry) => {
    const { error, ...meta } = entry.meta ?? {};
    log[PINO_METHOD[entry.level]](error === undefined ? meta : { ...meta, err: error }, entry.message);
  });
}

/**
 * `onlyForMetrics`: a process whose Temporal client needs no runtime (the API) installs one only
 * when metrics are on.
 */
export function installTemporalRuntime(
  config: { metrics: MetricsConfig | undefined },
  log: Logger,
  options: { handleSignals: boolean; onlyForMetrics?: boolean },
): ProductMetrics {
  if (!config.metrics && options.onlyForMetrics) return noProductMetrics();
  const logger = temporalLoggerFor(log);
  Runtime.install({
    logger,
    // The API stops on its own terms (drain, then close); only the worker lets the SDK take signals.
    ...(options.handleSignals ? {} : { shutdownSignals: [] }),
    telemetryOptions: {
      // The SDK core's own logs (connection trouble, task failures) join the same stream; below
      // WARN they are too chatty to be worth a line.
      logging: { forward: {}, filter: { core: logger.level === 'ERROR' ? 'ERROR' : 'WARN', other: 'ERROR' } },
      ...(config.metrics
        ? {
            metrics: {
              prometheus: {
                bindAddress: socketAddress(config.metrics.host, config.metrics.port),
                countersTotalSuffix: true,
                unitSuffix: true,
                // The SDK's durations in seconds, as Prometheus's base unit and as Temporal's
                // published SDK dashboard expects (`…_latency_seconds`); the product's are too.
                useSecondsForDurations: true,
                histogramBucketOverrides: {
                  [END_TO_END_LATENCY]: END_TO_END_BUCKETS_SECONDS,
                  [WEBHOOK_START]: WEBHOOK_START_BUCKETS_SECONDS,
                },
              },
            },
          }
        : {}),
    },
  });
  return config.metrics ? productMetrics(Runtime.instance().metricMeter) : noProductMetrics();
}

/** `host:port` as a socket address: an IPv6 host goes in brackets. */
function socketAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
