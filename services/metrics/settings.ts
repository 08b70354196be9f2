// The metrics endpoint's settings: where Prometheus scrapes a process, and how often the gauges
// read from the database and the process are sampled.
import { z } from 'zod';
import { bindAddressSetting } from '../config/setting-types.js';

export const metricsSettings = {
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  METRICS_HOST: bindAddressSetting,
  // How often the gauges read from the database and the process (waiting keys, memory) are sampled.
  METRICS_SAMPLE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(15),
};
type MetricsEnv = z.output<z.ZodObject<typeof metricsSettings>>;

/** Prometheus endpoint (`host:port`) and how often its gauges are sampled. */
export interface MetricsConfig {
  host: string;
  port: number;
  sampleIntervalMs: number;
}

/** Undefined: no endpoint (no METRICS_PORT). */
export function metricsFrom(env: MetricsEnv): MetricsConfig | undefined {
  return env.METRICS_PORT
    ? { host: env.METRICS_HOST, port: env.METRICS_PORT, sampleIntervalMs: env.METRICS_SAMPLE_INTERVAL_SECONDS * 1000 }
    : undefined;
}
