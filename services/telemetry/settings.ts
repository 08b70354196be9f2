// The telemetry settings: the log level, and OpenTelemetry's traces (docs/operations.md#following-one-approval),
// on when an OTLP endpoint is set.
import { z } from 'zod';

export const logLevelSetting = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info');
export type LogLevel = z.output<typeof logLevelSetting>;

/** The OTLP transports the exporter speaks; the SDK's names. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
const otlpProtocolSetting = z.enum(OTLP_PROTOCOLS);

export const telemetrySettings = {
  LOG_LEVEL: logLevelSetting,
  // OpenTelemetry (docs/operations.md#following-one-approval): tracing is on when the endpoint is
  // set. The exporter reads the other OTEL_EXPORTER_OTLP_* variables itself; these are checked here.
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .url({ protocol: /^https?$/, message: 'must be an http(s) URL of an OTLP receiver, e.g. http://localhost:4318' })
    .optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocolSetting.default('http/protobuf'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocolSetting.optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  // The SDK's own off switch: `true` (any case) keeps tracing off whatever the endpoint says.
  OTEL_SDK_DISABLED: z
    .string()
    .regex(/^(true|false)$/i, 'must be true or false')
    .transform((value) => value.toLowerCase() === 'true')
    .optional(),
};
type TelemetryEnv = z.output<z.ZodObject<typeof telemetrySettings>>;

export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the receiver's base URL (the HTTP exporters add `/v1/traces`). */
  endpoint: string;
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL. */
  protocol: (typeof OTLP_PROTOCOLS)[number];
}

/** Undefined: tracing is off (no OTEL_EXPORTER_OTLP_ENDPOINT, or OTEL_SDK_DISABLED). */
export function tracingFrom(env: TelemetryEnv): TracingConfig | undefined {
  return env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_SDK_DISABLED
    ? {
        endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
        protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL,
      }
    : undefined;
}
