// Environment, parsed once at start into one typed object. A bad value stops start-up with the
// variable's name; the parts take their settings from it and never read process.env. Each part of
// the product owns its settings in a `settings.ts` beside its code (the names, their parsers,
// defaults and messages, and the function that builds its part of `Config`); this module composes
// them into the one schema and keeps the rules that span parts.
import { z } from 'zod';
import {
  decisionCardSettings,
  type DecisionCardsConfig,
  decisionCardsFrom,
  deliverySettings,
  type DownstreamConfig,
  downstreamFrom,
  downstreamProblems,
} from '../activities/settings.js';
import {
  connectionCapProblems,
  type HttpConfig,
  httpFrom,
  httpSettings,
  type WebhookConfig,
  webhookDeadlineProblems,
  webhookFrom,
  webhookSecretProblems,
} from '../edges/http/settings.js';
import { type McpConfig, mcpFrom, mcpSettings, operatorTokenProblems } from '../edges/mcp/settings.js';
import { type WritePolicy, writePolicyFrom, writePolicyProblems, writePolicySettings } from '../submission/settings.js';
import {
  type ConnectorsConfig,
  connectorSettings,
  connectorsFrom,
  oaVendorApiSettings,
  oaVendorSecretSettings,
  oaVendorSettings,
  vendorEnvsFrom,
} from '../vendors/settings.js';
import { type WorkerConfig, workerFrom, workerSettings } from '../worker/settings.js';
import { type BrokerConfig, brokerFrom, brokerProblems, brokerSettings } from '../services/broker/settings.js';
import { databaseFrom, databaseProblems, databaseSettings, type SafetyNetsConfig } from '../services/db/settings.js';
import { type MetricsConfig, metricsFrom, metricsSettings } from '../services/metrics/settings.js';
import { ConfigError, type EnvSource, presentSettings } from '../services/config/environment.js';
import { telemetrySettings, type TracingConfig, tracingFrom } from '../services/telemetry/settings.js';
import {
  deploymentProblems,
  type TemporalConfig,
  temporalFrom,
  temporalSettings,
} from '../services/temporal/settings.js';
import { productionProblems, SECRET_SETTINGS } from '../services/config/production-refusals.js';

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  DATA_DIR: z.string().min(1).default('.data'),
  ...databaseSettings,
  ...temporalSettings,
  ...httpSettings,
  ...deliverySettings,
  ...decisionCardSettings,
  ...brokerSettings,
  ...writePolicySettings,
  ...workerSettings,
  ...metricsSettings,
  ...mcpSettings,
  ...telemetrySettings,
  // The OA connectors (docs/oa-form-mapping.md): what they share. Each vendor's own settings are its
  // module's, parsed by its own schema (vendors/settings.ts); each is on when its settings are present.
  ...connectorSettings,
});

export type RawEnv = z.input<typeof envSchema>;
type Env = z.output<typeof envSchema>;

/** Every variable the service reads, each OA vendor's of vendors/registry.ts included. */
export function settingNames(): string[] {
  return [...Object.keys(envSchema.shape), ...Object.keys(oaVendorSettings())];
}

/** Every variable that holds a secret as it is: the service's own and each OA vendor's. */
export function secretSettingNames(): string[] {
  return [...SECRET_SETTINGS, ...oaVendorSecretSettings()];
}

export interface Config {
  nodeEnv: Env['NODE_ENV'];
  dataDir: string;
  databaseUrl: string | undefined;
  /** Where migrations run: DATABASE_MIGRATION_URL, else DATABASE_URL. */
  migrationUrl: string | undefined;
  /** MIGRATE_ON_START: the API and the worker apply pending migrations before they serve. */
  migrateOnStart: boolean;
  /** MIGRATION_LOCK_TIMEOUT_MS: how long a migration's statement waits for a lock. */
  migrationLockTimeoutMs: number;
  dbPoolSize: number;
  temporal: TemporalConfig;
  http: HttpConfig;
  worker: WorkerConfig;
  /** Prometheus endpoint (`host:port`) and how often its gauges are sampled; undefined = none. */
  metrics: MetricsConfig | undefined;
  /** OpenTelemetry traces; undefined = off (no OTEL_EXPORTER_OTLP_ENDPOINT). */
  tracing: TracingConfig | undefined;
  webhook: WebhookConfig;
  writePolicy: WritePolicy;
  /** Where order events go over HTTP; undefined = no HTTP target. */
  downstream: DownstreamConfig | undefined;
  /** Where order events are published; undefined = no broker target. Neither = no delivery step. */
  broker: BrokerConfig | undefined;
  /** How the decision cards run (which chats take them is each vendor's setting). */
  decisionCards: DecisionCardsConfig;
  retentionDays: number;
  /** The scheduled safety nets (Temporal Schedules created by the worker at start). */
  safetyNets: SafetyNetsConfig;
  logLevel: Env['LOG_LEVEL'];
  mcp: McpConfig;
  /** STATUS_TOKEN: the bearer token `GET /orders/<key>` asks for; undefined: the route is open. */
  statusToken: string | undefined;
  connectors: ConnectorsConfig;
}

export function loadConfig(source: EnvSource = process.env): Config {
  const present = presentSettings(source);
  const parsed = envSchema.safeParse(present);
  const vendorEnvs = vendorEnvsFrom(present);
  if (!parsed.success || vendorEnvs.problems.length > 0) {
    throw new ConfigError([
      ...(parsed.error?.issues ?? []).map((issue) => `${issue.path.join('.')}: ${issue.message}`),
      ...vendorEnvs.problems,
    ]);
  }
  const env = parsed.data;
  const problems = [...ladderProblems(env), ...downstreamProblems(env), ...brokerProblems(env)];
  // Both are the worker process's listeners: the second bind would fail at start with EADDRINUSE.
  if (env.WORKER_HEALTH_PORT && env.WORKER_HEALTH_PORT === env.METRICS_PORT) {
    problems.push(
      `WORKER_HEALTH_PORT: ${env.WORKER_HEALTH_PORT} is also METRICS_PORT; the worker's probes need a port of their own`,
    );
  }
  problems.push(...deploymentProblems(env), ...databaseProblems(env), ...connectionCapProblems(env));
  problems.push(...rotationProblems(env), ...webhookSecretProblems(env), ...operatorTokenProblems(env));
  // Plain http:// to a vendor and the examples' placeholder secrets (services/config/production-refusals.ts).
  if (env.NODE_ENV === 'production') {
    problems.push(
      ...productionProblems(present, { secrets: oaVendorSecretSettings(), apiUrls: oaVendorApiSettings() }),
    );
  }
  const temporal = temporalFrom(env, present, problems);
  const connectors = connectorsFrom(env, vendorEnvs.envs, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    nodeEnv: env.NODE_ENV,
    dataDir: env.DATA_DIR,
    ...databaseFrom(env),
    temporal,
    http: httpFrom(env),
    worker: workerFrom(env),
    metrics: metricsFrom(env),
    tracing: tracingFrom(env),
    webhook: webhookFrom(env),
    writePolicy: writePolicyFrom(env),
    downstream: downstreamFrom(env),
    broker: brokerFrom(env),
    decisionCards: decisionCardsFrom(env),
    logLevel: env.LOG_LEVEL,
    mcp: mcpFrom(env),
    statusToken: env.STATUS_TOKEN,
    connectors,
  };
}

/** A previous secret belongs to a rotation of a secret that is set, and differs from it. */
function rotationProblems(env: Env): string[] {
  const problems: string[] = [];
  for (const [current, previous] of [
    ['WEBHOOK_SECRET', 'WEBHOOK_SECRET_PREVIOUS'],
    ['DOWNSTREAM_SECRET', 'DOWNSTREAM_SECRET_PREVIOUS'],
    ['MCP_TOKEN', 'MCP_TOKEN_PREVIOUS'],
  ] as const) {
    if (env[previous] === undefined) continue;
    if (env[current] === undefined) problems.push(`${previous}: only with ${current} (the secret that replaces it)`);
    else if (env[previous] === env[current]) {
      problems.push(`${previous}: equals ${current}; it must hold the secret being replaced`);
    }
  }
  return problems;
}

/**
 * Timeouts are layered, inner < outer (docs/architecture.md, decision 6); a ladder upside down is
 * refused. The write's and the webhook's own rungs are theirs; these span parts.
 */
function ladderProblems(env: Env): string[] {
  const problems = writePolicyProblems(env);
  if (env.DOWNSTREAM_TIMEOUT_MS >= env.ACTIVITY_START_TO_CLOSE_MS) {
    problems.push('DOWNSTREAM_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS');
  }
  // Only a broker that is on has a rung here: a short attempt must not need a broker setting.
  if (env.AMQP_URL && env.AMQP_CONFIRM_TIMEOUT_MS >= env.ACTIVITY_START_TO_CLOSE_MS) {
    problems.push('AMQP_CONFIRM_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS');
  }
  // A tool wait shorter than one attempt would answer "still running" to nearly every call.
  // A tool answer may take the wait and then a start confirmed under its own deadline.
  if (env.MCP_SUBMIT_WAIT_MS + env.WEBHOOK_START_TIMEOUT_MS >= 60_000) {
    problems.push('MCP_SUBMIT_WAIT_MS: with WEBHOOK_START_TIMEOUT_MS must stay below the 60 s MCP clients wait');
  }
  if (env.MCP_SUBMIT_WAIT_MS <= env.ACTIVITY_START_TO_CLOSE_MS) {
    problems.push('MCP_SUBMIT_WAIT_MS: must be above ACTIVITY_START_TO_CLOSE_MS');
  }
  return [...problems, ...webhookDeadlineProblems(env)];
}
