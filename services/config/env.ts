// Environment, parsed once at start into one typed object. A bad value stops start-up with the
// variable's name; nothing below this module reads process.env.
import { isIP } from 'node:net';
import { z } from 'zod';
import type { FormMappingFile } from '../../domain/form-mapping.js';
import { readFormMappingFile } from './form-mapping-file.js';
import {
  standardSecretProblem,
  WEBHOOK_SIGNATURE_SCHEMES,
  type WebhookSignatureScheme,
} from '../../domain-node/signature.js';
import { redactUrl } from '../../domain-node/redact-url.js';
import { webOrigin } from '../../domain-node/web-origin.js';
import { type TemporalConnectionConfig, temporalConnectionFrom, temporalSettingsShape } from './temporal-settings.js';
import { productionProblems } from './production-refusals.js';

/** How Feishu's events reach the service: `callback` (POST /webhooks/feishu) or `long-connection`. */
export const FEISHU_EVENT_MODES = ['callback', 'long-connection'] as const;
export type FeishuEventMode = (typeof FEISHU_EVENT_MODES)[number];

/** Every shared secret (webhook, downstream events, MCP token) has the same floor. */
export const secretSetting = z.string().min(16, 'must be at least 16 characters');
/** A secret that signs or verifies: a `whsec_` one must also be usable as a Standard Webhooks key. */
export const signingSecretSetting = secretSetting.superRefine((secret, context) => {
  const problem = standardSecretProblem(secret);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});
const logLevelSetting = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info');
export type LogLevel = z.output<typeof logLevelSetting>;

/** A switch, off unless set: `1` / `true` turn it on, `0` / `false` leave it off. */
const switchSetting = z
  .enum(['0', '1', 'false', 'true'])
  .default('0')
  .transform((value) => value === '1' || value === 'true');

// amqplib reads a URL without a host as localhost and one of another scheme as whatever it finds:
// a typo would connect somewhere else, or nowhere, without saying why.
/** A broker URL (the service's and the reference consumer's). */
export const amqpUrlSetting = z
  .string({ error: 'required: the RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672' })
  .superRefine((value, context) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      context.addIssue({ code: 'custom', message: 'is not a URL (e.g. amqp://guest:guest@127.0.0.1:5672)' });
      return;
    }
    if (url.protocol !== 'amqp:' && url.protocol !== 'amqps:') {
      context.addIssue({ code: 'custom', message: `must be an amqp:// or amqps:// URL, not ${url.protocol}//` });
    } else if (url.hostname === '') {
      context.addIssue({ code: 'custom', message: 'names no host (amqplib would connect to localhost)' });
    }
  });

/** An exchange name RabbitMQ lets a client declare (not one of its own, `amq.*`); the reference consumer holds its own to it too. */
export const exchangeNameSetting = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,255}$/, 'must be 1–255 letters, digits, "-", "_", "." or ":"')
  .refine((name) => !name.startsWith('amq.'), 'names starting with "amq." belong to the broker');

/**
 * Browser origins, comma-separated (`https://agent.example,http://localhost:6274`), each
 * `scheme://host[:port]` with no path; read as their normalised form.
 */
const originListSetting = z
  .string()
  .default('')
  .transform((value, context) => {
    const origins: string[] = [];
    for (const entry of value.split(',').map((part) => part.trim())) {
      if (entry === '') continue;
      const origin = webOrigin(entry);
      if (origin === undefined) {
        // Shown redacted: an entry written with credentials must not print them.
        context.addIssue({
          code: 'custom',
          message: `${redactUrl(entry)} is not an origin (scheme://host[:port], no path)`,
        });
      } else origins.push(origin);
    }
    return origins;
  });

/**
 * An http(s) URL the service calls. Credentials in it are refused: `fetch` will not send a request
 * to a URL that carries them, and its error repeats the URL whole into logs, spans and `lastError`.
 * A receiver that needs a secret gets it in the query (redacted wherever the URL is shown).
 */
const httpUrlSetting = z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).refine((url) => {
  const parsed = new URL(url);
  return parsed.username === '' && parsed.password === '';
}, 'must not carry a user or password (put a token in the query instead)');

const milliseconds = (fallback: number) => z.coerce.number().int().min(1).max(2_147_483_647).default(fallback);

/** The OTLP transports the exporter speaks; the SDK's names. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const;
const otlpProtocolSetting = z.enum(OTLP_PROTOCOLS);

// Loopback unless told otherwise: the endpoints bound with it have no authentication. An address,
// not a name: the SDK binds METRICS_HOST as a socket address, and the worker's probes keep the same rule.
const bindAddressSetting = z
  .string()
  .refine((host) => isIP(host) !== 0, 'must be an IP address, e.g. 127.0.0.1, 0.0.0.0 or ::1')
  .default('127.0.0.1');

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  DATA_DIR: z.string().min(1).default('.data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/.+/, 'must be a postgresql:// connection URL')
    .optional(),
  DB_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(10),
  // Where Temporal is and how to reach it: Temporal's own names (services/config/temporal-settings.ts).
  ...temporalSettingsShape,
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('order-submission'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  // Read as a Standard Webhooks key only when the webhook verifies in that scheme (checked below).
  WEBHOOK_SECRET: secretSetting.optional(),
  WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().min(1).max(3600).default(300),
  WEBHOOK_START_TIMEOUT_MS: milliseconds(5_000),
  // The longest a webhook answer takes when its sender asks to wait for the write (`Prefer: wait`):
  // the sender's own deadline. The contract honours waits of 1–25 s.
  WEBHOOK_MAX_WAIT_MS: z.coerce.number().int().min(1_000).max(25_000).default(25_000),
  // The most deliveries (webhook, OA callbacks, MCP submissions) one API process takes at once; one
  // more is answered 503 + Retry-After at once (docs/architecture.md, decision 34). Unset: no cap.
  INTAKE_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(100_000).optional(),
  // Listening sockets the API shares its port among (SO_REUSEPORT), each accepted from once per turn
  // of the event loop (edges/http/accept-sockets.ts). Unset: 8 where the runtime can, else 1.
  HTTP_ACCEPT_SOCKETS: z.coerce.number().int().min(1).max(64).optional(),
  DOWNSTREAM_URL: httpUrlSetting.optional(),
  DOWNSTREAM_SECRET: signingSecretSetting.optional(),
  DOWNSTREAM_TIMEOUT_MS: milliseconds(3_000),
  // The broker target of order.created (docs/downstream.md#the-broker): off unless AMQP_URL is set.
  AMQP_URL: amqpUrlSetting.optional(),
  ORDER_EVENTS_EXCHANGE: exchangeNameSetting.default('orders'),
  AMQP_CONFIRM_TIMEOUT_MS: milliseconds(3_000),
  RETRY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(3),
  RETRY_INITIAL_INTERVAL_MS: milliseconds(500),
  RETRY_MAX_INTERVAL_MS: milliseconds(30_000),
  RETRY_BACKOFF_COEFFICIENT: z.coerce.number().min(1).max(10).default(2),
  RETRY_LOCAL_THRESHOLD_MS: milliseconds(5_000),
  DB_STATEMENT_TIMEOUT_MS: milliseconds(2_000),
  ACTIVITY_START_TO_CLOSE_MS: milliseconds(5_000),
  ACTIVITY_SCHEDULE_TO_CLOSE_MS: milliseconds(60_000),
  COMPENSATION_DECISION_TIMEOUT_MS: milliseconds(7 * 24 * 3600 * 1000),
  API_HOSTS_WORKER: switchSetting,
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
  WORKER_SHUTDOWN_GRACE_MS: milliseconds(10_000),
  WORKER_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(1).max(10_000).default(5),
  // Unset: what DB_POOL_SIZE leaves after the activities (services/config/worker-slots.ts).
  WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: z.coerce.number().int().min(1).max(10_000).optional(),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: z.coerce.number().int().min(2).max(10_000).default(40),
  // Prebuilt workflow bundles (`npm run build` writes them to dist/workflow-bundles, where a worker
  // run from dist/ finds them unasked); unset from source: workflows/ is bundled at start.
  WORKFLOW_BUNDLE_DIR: z.string().min(1).optional(),
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  METRICS_HOST: bindAddressSetting,
  // How often the gauges read from the database and the process (waiting keys, memory) are sampled.
  METRICS_SAMPLE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(15),
  // The worker process's /livez and /readyz; unset: no listener. A pod's probes need 0.0.0.0.
  WORKER_HEALTH_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  WORKER_HEALTH_HOST: bindAddressSetting,
  // Worker Deployment Versioning (docs/production.md, "Rolling out a workflow change"); both or neither.
  TEMPORAL_DEPLOYMENT_NAME: z.string().min(1).max(255).optional(),
  TEMPORAL_BUILD_ID: z.string().min(1).max(255).optional(),
  DUPLICATE_SCAN_INTERVAL_MINUTES: z.coerce.number().int().min(1).max(10_080).default(15),
  NEAR_DUPLICATE_WINDOW_MINUTES: z.coerce.number().int().min(1).max(10_080).default(10),
  IDEMPOTENCY_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  MCP_TOKEN: secretSetting.optional(),
  // Accepted beside MCP_TOKEN while clients move to it (docs/security.md#rotating-each-secret-without-a-gap).
  MCP_TOKEN_PREVIOUS: secretSetting.optional(),
  // The tool wait's rung of the ladder: MCP clients commonly give up on a request after 60 s.
  MCP_SUBMIT_WAIT_MS: z.coerce
    .number()
    .int()
    .min(1)
    .max(50_000, 'must stay below the 60 s MCP clients wait')
    .default(8_000),
  // The stdio bin's switch for the operator tools (as its --operator-tools); over HTTP they exist
  // only with MCP_OPERATOR_TOKEN (docs/architecture.md, decision 39).
  MCP_OPERATOR_TOOLS: switchSetting,
  // The bearer token that alone lists and calls the operator tools over /mcp; unset: no operator
  // tools over HTTP. MCP_TOKEN keeps submitting and reading statuses.
  MCP_OPERATOR_TOKEN: secretSetting.optional(),
  // When set, GET /orders/<key> asks for it as a bearer token (docs/http-api.md#reading-a-status).
  STATUS_TOKEN: secretSetting.optional(),
  // Browser origins /mcp serves (docs/mcp.md#browsers-and-origin); none by default.
  MCP_ALLOWED_ORIGINS: originListSetting,
  LOG_LEVEL: logLevelSetting,
  // The OA connectors (docs/oa-form-mapping.md): each is on when its settings are present.
  FEISHU_APP_ID: z.string().min(1).optional(),
  FEISHU_APP_SECRET: z.string().min(1).optional(),
  FEISHU_ENCRYPT_KEY: z.string().min(1).optional(),
  FEISHU_VERIFICATION_TOKEN: z.string().min(1).optional(),
  FEISHU_API_BASE_URL: httpUrlSetting.default('https://open.feishu.cn'),
  // How Feishu's events reach the service: its callback, or a long connection the API opens (docs/connectors.md).
  FEISHU_EVENT_MODE: z.enum(FEISHU_EVENT_MODES).default('callback'),
  DINGTALK_APP_KEY: z.string().min(1).optional(),
  DINGTALK_APP_SECRET: z.string().min(1).optional(),
  DINGTALK_AES_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}$/, 'must be the 43 characters of base64 the DingTalk console shows')
    .optional(),
  DINGTALK_TOKEN: z.string().min(1).optional(),
  DINGTALK_API_BASE_URL: httpUrlSetting.default('https://api.dingtalk.com'),
  // How DingTalk's events arrive: its HTTP callback, or the Stream connection the API opens as well.
  DINGTALK_EVENT_MODE: z.enum(['callback', 'stream']).default('callback'),
  WECOM_CORP_ID: z.string().min(1).optional(),
  WECOM_AGENT_SECRET: z.string().min(1).optional(),
  WECOM_TOKEN: z.string().min(1).optional(),
  WECOM_ENCODING_AES_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}$/, 'must be the 43 characters of base64 the WeCom console shows')
    .optional(),
  WECOM_API_BASE_URL: httpUrlSetting.default('https://qyapi.weixin.qq.com'),
  OA_FORM_MAPPING: z.string().min(1).optional(),
  // An OA approval claimed this long ago whose start nobody confirmed is started by the API: the
  // vendor, answered once the key was claimed, does not send it again (docs/architecture.md, decision 34).
  OA_UNSTARTED_CLAIM_AFTER_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(120_000),
  // Signature schemes and secret rotation (docs/http-api.md, docs/downstream.md).
  WEBHOOK_SIGNATURE_SCHEME: z.enum(WEBHOOK_SIGNATURE_SCHEMES).default('oa'),
  WEBHOOK_SECRET_PREVIOUS: secretSetting.optional(),
  DOWNSTREAM_SECRET_PREVIOUS: signingSecretSetting.optional(),
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
});

export type RawEnv = z.input<typeof envSchema>;
/** Every variable the service reads, for the check that each one is documented. */
export const SETTING_NAMES: readonly string[] = Object.keys(envSchema.shape);
type Env = z.output<typeof envSchema>;

/** The retry policy and timeout ladder of the order write, in one place. */
export interface WritePolicy {
  maxAttempts: number;
  initialIntervalMs: number;
  maxIntervalMs: number;
  backoffCoefficient: number;
  /** The write runs as a local activity: a backoff longer than this is a timer, not a wait in the worker. */
  localRetryThresholdMs: number;
  statementTimeoutMs: number;
  startToCloseMs: number;
  scheduleToCloseMs: number;
  decisionTimeoutMs: number;
}

export interface DownstreamConfig {
  url: string;
  secret: string;
  /** During a rotation: events are signed with this one too, so receivers still holding it verify. */
  previousSecret?: string | undefined;
  /** Per-attempt HTTP timeout: below the activity's start-to-close. */
  timeoutMs: number;
}

export interface BrokerConfig {
  /** `amqp://` or `amqps://`, credentials included: never logged (see `brokerAddress`). */
  url: string;
  /** DOWNSTREAM_SECRET: every message is signed with it, as the HTTP event is. */
  secret: string;
  /** During a rotation: messages are signed with this one too, so consumers still holding it verify. */
  previousSecret?: string | undefined;
  /** The topic exchange order events are published to; asserted durable by the publisher. */
  exchange: string;
  /** One publish, connecting included, until the broker's confirm: below the activity's start-to-close. */
  confirmTimeoutMs: number;
}

/** Where the broker is, for logs and messages: the URL without its credentials. */
export function brokerAddress(broker: BrokerConfig): string {
  return redactUrl(broker.url);
}

export interface TemporalConfig extends TemporalConnectionConfig {
  /** The service's own: the task queue the worker polls and every start uses. */
  taskQueue: string;
}

/** A build of the workers within their Worker Deployment (TEMPORAL_DEPLOYMENT_NAME, TEMPORAL_BUILD_ID). */
export interface WorkerDeploymentVersion {
  deploymentName: string;
  buildId: string;
}

export interface Config {
  nodeEnv: Env['NODE_ENV'];
  dataDir: string;
  databaseUrl: string | undefined;
  dbPoolSize: number;
  temporal: TemporalConfig;
  http: {
    port: number;
    host: string;
    startTimeoutMs: number;
    /**
     * The most seconds of `Prefer: wait` the webhook honours: what WEBHOOK_MAX_WAIT_MS leaves after
     * WEBHOOK_START_TIMEOUT_MS, because a start still unconfirmed when the wait ran out is then
     * confirmed as every start is, under its own deadline.
     */
    maxWaitSeconds: number;
    /** After SIGTERM: how long new requests get 503 + Retry-After (and /healthz 503) before the socket closes. */
    drainMs: number;
    /**
     * The API process also runs the order worker, on the connection its client uses, so a start
     * can hand the workflow's first task to it (eager start) instead of a round trip through a poll.
     */
    hostsWorker: boolean;
    /** The most deliveries taken at once (INTAKE_MAX_IN_FLIGHT); undefined: no cap. */
    maxInFlight: number | undefined;
    /** HTTP_ACCEPT_SOCKETS as set; undefined: as many as the runtime allows (edges/http/accept-sockets.ts). */
    acceptSockets: number | undefined;
  };
  worker: {
    maxConcurrentActivities: number;
    /** The order writes at once; undefined = what the pool leaves (services/config/worker-slots.ts). */
    maxConcurrentLocalActivities: number | undefined;
    maxConcurrentWorkflowTasks: number;
    /** After SIGTERM: how long running activities may finish before they are cancelled. */
    shutdownGraceMs: number;
    /** A directory of prebuilt workflow bundles; undefined = the shipped ones, or bundle at start. */
    bundleDir: string | undefined;
    /** The worker process's probe endpoints (`/livez`, `/readyz`); undefined = no listener. */
    health: { host: string; port: number } | undefined;
    /**
     * The Worker Deployment version every worker of the process polls as; undefined = unversioned
     * (docs/production.md, "Rolling out a workflow change").
     */
    deployment: WorkerDeploymentVersion | undefined;
  };
  /** Prometheus endpoint (`host:port`) and how often its gauges are sampled; undefined = none. */
  metrics: { host: string; port: number; sampleIntervalMs: number } | undefined;
  /** OpenTelemetry traces; undefined = off (no OTEL_EXPORTER_OTLP_ENDPOINT). */
  tracing: TracingConfig | undefined;
  webhook: {
    secret: string | undefined;
    /** During a rotation: a signature made with this one is accepted too. */
    previousSecret: string | undefined;
    signatureScheme: WebhookSignatureScheme;
    toleranceSeconds: number;
  };
  writePolicy: WritePolicy;
  /** Where order events go over HTTP; undefined = no HTTP target. */
  downstream: DownstreamConfig | undefined;
  /** Where order events are published; undefined = no broker target. Neither = no delivery step. */
  broker: BrokerConfig | undefined;
  retentionDays: number;
  /** The scheduled safety nets (Temporal Schedules created by the worker at start). */
  safetyNets: { scanIntervalMinutes: number; nearDuplicateWindowMinutes: number };
  logLevel: Env['LOG_LEVEL'];
  mcp: McpConfig;
  /** STATUS_TOKEN: the bearer token `GET /orders/<key>` asks for; undefined: the route is open. */
  statusToken: string | undefined;
  connectors: ConnectorsConfig;
}

export interface TracingConfig {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the receiver's base URL (the HTTP exporters add `/v1/traces`). */
  endpoint: string;
  /** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL. */
  protocol: (typeof OTLP_PROTOCOLS)[number];
}

export interface FeishuConfig {
  appId: string;
  appSecret: string;
  /** The open API, and in long-connection mode where the connection's endpoint is discovered. */
  apiBaseUrl: string;
  /** FEISHU_EVENT_MODE: `long-connection` has the API process hold Feishu's long connection. */
  eventMode: FeishuEventMode;
  /**
   * The callback's keys; undefined when `POST /webhooks/feishu` is off (long-connection mode
   * without them). The Encrypt Key is required with the callback: without one Feishu neither
   * encrypts nor signs, and nothing can be verified.
   */
  callback: { encryptKey: string; verificationToken: string } | undefined;
}

export interface DingTalkConfig {
  appKey: string;
  appSecret: string;
  /** The HTTP callback's keys; undefined: `POST /webhooks/dingtalk` is off (Stream mode without them). */
  callback: { aesKey: string; token: string } | undefined;
  /** DINGTALK_EVENT_MODE=stream: the API also takes events over the Stream connection it opens. */
  stream: boolean;
  apiBaseUrl: string;
}

export interface WeComConfig {
  corpId: string;
  /** The secret of the app that reads approvals: the approval app's, or a self-built app's allowed to. */
  agentSecret: string;
  token: string;
  encodingAesKey: string;
  apiBaseUrl: string;
}

/** The OA connectors: a vendor's entry is undefined when its connector is off. */
export interface ConnectorsConfig {
  feishu: FeishuConfig | undefined;
  dingtalk: DingTalkConfig | undefined;
  wecom: WeComConfig | undefined;
  /** The mapping file, read and validated at start; defined whenever a connector is on. */
  formMapping: { path: string; file: FormMappingFile } | undefined;
  /** OA_UNSTARTED_CLAIM_AFTER_MS: when a claim nobody started is started by submission/unstarted-claims.ts. */
  unstartedClaimAfterMs: number;
}

export interface McpConfig {
  /** The bearer token of the HTTP transport; undefined turns `/mcp` off. */
  token: string | undefined;
  /** MCP_TOKEN_PREVIOUS: accepted beside `token` during a rotation. */
  previousToken: string | undefined;
  /** How long `submit_approved_order` waits for the write before answering with the status. */
  submitWaitMs: number;
  /**
   * MCP_OPERATOR_TOOLS: whether the stdio bin offers the operator tools (listing and deciding
   * compensations). Over HTTP they follow `operatorToken` alone.
   */
  operatorTools: boolean;
  /** MCP_OPERATOR_TOKEN: the only bearer token `/mcp` lists and runs the operator tools for; undefined: never. */
  operatorToken: string | undefined;
  /** The browser origins `/mcp` serves (normalised); a request with another `Origin` is refused. */
  allowedOrigins: readonly string[];
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export type EnvSource = Record<string, string | undefined>;

/** An empty variable means "not set", as in most twelve-factor tooling. */
export function presentSettings(source: EnvSource): Record<string, string> {
  return Object.fromEntries(
    Object.entries(source).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  );
}

/**
 * The log level, readable before the whole configuration is: a logger exists before start-up can
 * report a bad setting. A bad LOG_LEVEL logs at `info` and is then refused by `loadConfig`.
 */
export function logLevelFrom(source: EnvSource = process.env): LogLevel {
  const parsed = logLevelSetting.safeParse(presentSettings(source).LOG_LEVEL);
  return parsed.success ? parsed.data : 'info';
}

// One without the other would run unversioned workers beside versioned ones without saying so.
function deploymentProblems(env: Env): string[] {
  if (Boolean(env.TEMPORAL_DEPLOYMENT_NAME) === Boolean(env.TEMPORAL_BUILD_ID)) return [];
  return [
    env.TEMPORAL_DEPLOYMENT_NAME
      ? 'TEMPORAL_BUILD_ID: required with TEMPORAL_DEPLOYMENT_NAME (a versioned worker needs its build id)'
      : 'TEMPORAL_DEPLOYMENT_NAME: required with TEMPORAL_BUILD_ID (a build id belongs to a Worker Deployment)',
  ];
}

export function loadConfig(source: EnvSource = process.env): Config {
  const present = presentSettings(source);
  const parsed = envSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  }
  const env = parsed.data;
  const problems = ladderProblems(env);
  if (env.DOWNSTREAM_URL && !env.DOWNSTREAM_SECRET) {
    problems.push('DOWNSTREAM_SECRET: required when DOWNSTREAM_URL is set (events are signed)');
  }
  // Without a signature anyone allowed to publish on the exchange could publish an event for a key
  // before the real one, and the consumer would apply it and take the real one for a duplicate.
  if (env.AMQP_URL && !env.DOWNSTREAM_SECRET) {
    problems.push('DOWNSTREAM_SECRET: required when AMQP_URL is set (broker messages are signed)');
  }
  // Both are the worker process's listeners: the second bind would fail at start with EADDRINUSE.
  if (env.WORKER_HEALTH_PORT && env.WORKER_HEALTH_PORT === env.METRICS_PORT) {
    problems.push(
      `WORKER_HEALTH_PORT: ${env.WORKER_HEALTH_PORT} is also METRICS_PORT; the worker's probes need a port of their own`,
    );
  }
  problems.push(...deploymentProblems(env));
  problems.push(...rotationProblems(env));
  problems.push(...operatorTokenProblems(env));
  // Plain http:// to a vendor and the examples' placeholder secrets (services/config/production-refusals.ts).
  if (env.NODE_ENV === 'production') problems.push(...productionProblems(present));
  const temporal = temporalConnectionFrom(env, present, problems);
  const connectors = connectorsFrom(env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    nodeEnv: env.NODE_ENV,
    dataDir: env.DATA_DIR,
    databaseUrl: env.DATABASE_URL,
    dbPoolSize: env.DB_POOL_SIZE,
    temporal: { ...temporal, taskQueue: env.TEMPORAL_TASK_QUEUE },
    http: {
      port: env.PORT,
      host: env.HOST,
      startTimeoutMs: env.WEBHOOK_START_TIMEOUT_MS,
      maxWaitSeconds: Math.floor((env.WEBHOOK_MAX_WAIT_MS - env.WEBHOOK_START_TIMEOUT_MS) / 1000),
      drainMs: env.SHUTDOWN_DRAIN_MS,
      hostsWorker: env.API_HOSTS_WORKER,
      maxInFlight: env.INTAKE_MAX_IN_FLIGHT,
      acceptSockets: env.HTTP_ACCEPT_SOCKETS,
    },
    worker: {
      maxConcurrentActivities: env.WORKER_MAX_CONCURRENT_ACTIVITIES,
      maxConcurrentLocalActivities: env.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
      maxConcurrentWorkflowTasks: env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
      shutdownGraceMs: env.WORKER_SHUTDOWN_GRACE_MS,
      bundleDir: env.WORKFLOW_BUNDLE_DIR,
      health: env.WORKER_HEALTH_PORT ? { host: env.WORKER_HEALTH_HOST, port: env.WORKER_HEALTH_PORT } : undefined,
      deployment:
        env.TEMPORAL_DEPLOYMENT_NAME && env.TEMPORAL_BUILD_ID
          ? { deploymentName: env.TEMPORAL_DEPLOYMENT_NAME, buildId: env.TEMPORAL_BUILD_ID }
          : undefined,
    },
    metrics: env.METRICS_PORT
      ? { host: env.METRICS_HOST, port: env.METRICS_PORT, sampleIntervalMs: env.METRICS_SAMPLE_INTERVAL_SECONDS * 1000 }
      : undefined,
    tracing:
      env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_SDK_DISABLED
        ? {
            endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
            protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL,
          }
        : undefined,
    webhook: {
      secret: env.WEBHOOK_SECRET,
      previousSecret: env.WEBHOOK_SECRET_PREVIOUS,
      signatureScheme: env.WEBHOOK_SIGNATURE_SCHEME,
      toleranceSeconds: env.WEBHOOK_TOLERANCE_SECONDS,
    },
    writePolicy: {
      maxAttempts: env.RETRY_MAX_ATTEMPTS,
      initialIntervalMs: env.RETRY_INITIAL_INTERVAL_MS,
      maxIntervalMs: env.RETRY_MAX_INTERVAL_MS,
      backoffCoefficient: env.RETRY_BACKOFF_COEFFICIENT,
      localRetryThresholdMs: env.RETRY_LOCAL_THRESHOLD_MS,
      statementTimeoutMs: env.DB_STATEMENT_TIMEOUT_MS,
      startToCloseMs: env.ACTIVITY_START_TO_CLOSE_MS,
      scheduleToCloseMs: env.ACTIVITY_SCHEDULE_TO_CLOSE_MS,
      decisionTimeoutMs: env.COMPENSATION_DECISION_TIMEOUT_MS,
    },
    downstream:
      env.DOWNSTREAM_URL && env.DOWNSTREAM_SECRET
        ? {
            url: env.DOWNSTREAM_URL,
            secret: env.DOWNSTREAM_SECRET,
            previousSecret: env.DOWNSTREAM_SECRET_PREVIOUS,
            timeoutMs: env.DOWNSTREAM_TIMEOUT_MS,
          }
        : undefined,
    broker:
      env.AMQP_URL && env.DOWNSTREAM_SECRET
        ? {
            url: env.AMQP_URL,
            secret: env.DOWNSTREAM_SECRET,
            previousSecret: env.DOWNSTREAM_SECRET_PREVIOUS,
            exchange: env.ORDER_EVENTS_EXCHANGE,
            confirmTimeoutMs: env.AMQP_CONFIRM_TIMEOUT_MS,
          }
        : undefined,
    retentionDays: env.IDEMPOTENCY_RETENTION_DAYS,
    safetyNets: {
      scanIntervalMinutes: env.DUPLICATE_SCAN_INTERVAL_MINUTES,
      nearDuplicateWindowMinutes: env.NEAR_DUPLICATE_WINDOW_MINUTES,
    },
    logLevel: env.LOG_LEVEL,
    mcp: {
      token: env.MCP_TOKEN,
      previousToken: env.MCP_TOKEN_PREVIOUS,
      submitWaitMs: env.MCP_SUBMIT_WAIT_MS,
      operatorTools: env.MCP_OPERATOR_TOOLS,
      operatorToken: env.MCP_OPERATOR_TOKEN,
      allowedOrigins: env.MCP_ALLOWED_ORIGINS,
    },
    statusToken: env.STATUS_TOKEN,
    connectors,
  };
}

/**
 * Which OA connectors are on, for the start-up log; Feishu's events come through its callback, its
 * long connection or both, DingTalk's through its callback, its Stream or both.
 */
export function connectorStates(config: Config): {
  feishu: 'on' | 'off';
  feishuEvents: ('callback' | 'long-connection')[];
  dingtalk: 'on' | 'off';
  dingtalkEvents: ('callback' | 'stream')[];
  wecom: 'on' | 'off';
  formMapping: string;
} {
  const { feishu, dingtalk } = config.connectors;
  return {
    feishu: feishu ? 'on' : 'off',
    feishuEvents: [
      ...(feishu?.callback ? (['callback'] as const) : []),
      ...(feishu?.eventMode === 'long-connection' ? (['long-connection'] as const) : []),
    ],
    dingtalk: dingtalk ? 'on' : 'off',
    dingtalkEvents: [
      ...(dingtalk?.callback ? (['callback'] as const) : []),
      ...(dingtalk?.stream ? (['stream'] as const) : []),
    ],
    wecom: config.connectors.wecom ? 'on' : 'off',
    formMapping: config.connectors.formMapping?.path ?? 'none',
  };
}

/** What turns each connector on; a connector with some of them and not all is refused. */
const CONNECTOR_SETTINGS = {
  feishu: {
    // The Encrypt Key is what Feishu signs with: a callback without it could be checked only by
    // the token inside the body, after parsing whatever an unauthenticated caller sent.
    required: ['FEISHU_APP_ID', 'FEISHU_APP_SECRET', 'FEISHU_ENCRYPT_KEY', 'FEISHU_VERIFICATION_TOKEN'],
    optional: [],
  },
  dingtalk: {
    required: ['DINGTALK_APP_KEY', 'DINGTALK_APP_SECRET', 'DINGTALK_AES_KEY', 'DINGTALK_TOKEN'],
    optional: [],
  },
  wecom: {
    required: ['WECOM_CORP_ID', 'WECOM_AGENT_SECRET', 'WECOM_TOKEN', 'WECOM_ENCODING_AES_KEY'],
    optional: [],
  },
} as const satisfies Record<string, { required: readonly (keyof Env)[]; optional: readonly (keyof Env)[] }>;

/** Which connectors are on, their settings, and the mapping file they need (read here, once). */
function connectorsFrom(env: Env, problems: string[]): ConnectorsConfig {
  const on = (vendor: keyof typeof CONNECTOR_SETTINGS): boolean => {
    const { required, optional } = CONNECTOR_SETTINGS[vendor];
    const present = [...required, ...optional].filter((name) => env[name] !== undefined);
    if (present.length === 0) return false;
    const missing = required.filter((name) => env[name] === undefined);
    if (missing.length > 0) {
      problems.push(
        `${missing.join(', ')}: required with ${present.join(', ')} (the ${vendor} connector is partly configured)`,
      );
      return false;
    }
    return true;
  };
  const feishu = feishuFrom(env, problems, on);
  const dingtalk =
    env.DINGTALK_EVENT_MODE === 'stream'
      ? dingtalkStreamFrom(env, problems)
      : on('dingtalk')
        ? dingtalkFrom(env)
        : undefined;
  const wecom: WeComConfig | undefined = on('wecom')
    ? {
        corpId: env.WECOM_CORP_ID as string,
        agentSecret: env.WECOM_AGENT_SECRET as string,
        token: env.WECOM_TOKEN as string,
        encodingAesKey: env.WECOM_ENCODING_AES_KEY as string,
        apiBaseUrl: env.WECOM_API_BASE_URL,
      }
    : undefined;
  let formMapping: ConnectorsConfig['formMapping'];
  if (env.OA_FORM_MAPPING) {
    const read = readFormMappingFile(env.OA_FORM_MAPPING);
    if (read.ok) formMapping = { path: env.OA_FORM_MAPPING, file: read.mapping };
    else problems.push(...read.problems);
  } else if (feishu || dingtalk || wecom) {
    problems.push('OA_FORM_MAPPING: required when an OA connector is on (the file that maps approval forms to orders)');
  }
  return { feishu, dingtalk, wecom, formMapping, unstartedClaimAfterMs: env.OA_UNSTARTED_CLAIM_AFTER_MS };
}

function dingtalkFrom(env: Env, stream = false): DingTalkConfig {
  return {
    appKey: env.DINGTALK_APP_KEY as string,
    appSecret: env.DINGTALK_APP_SECRET as string,
    callback:
      env.DINGTALK_AES_KEY && env.DINGTALK_TOKEN
        ? { aesKey: env.DINGTALK_AES_KEY, token: env.DINGTALK_TOKEN }
        : undefined,
    stream,
    apiBaseUrl: env.DINGTALK_API_BASE_URL,
  };
}

/**
 * DINGTALK_EVENT_MODE=stream: the Stream connection opens with the app's key and secret alone; the
 * callback's aes_key and token, when both are set too, keep `POST /webhooks/dingtalk` open beside it
 * (both doors during a move from one to the other).
 */
function dingtalkStreamFrom(env: Env, problems: string[]): DingTalkConfig | undefined {
  const missing = (['DINGTALK_APP_KEY', 'DINGTALK_APP_SECRET'] as const).filter((name) => env[name] === undefined);
  if (missing.length > 0) {
    problems.push(
      `${missing.join(', ')}: required with DINGTALK_EVENT_MODE=stream (the Stream connection opens with them)`,
    );
    return undefined;
  }
  if (Boolean(env.DINGTALK_AES_KEY) !== Boolean(env.DINGTALK_TOKEN)) {
    problems.push(
      env.DINGTALK_AES_KEY
        ? 'DINGTALK_TOKEN: required with DINGTALK_AES_KEY (the callback needs both; unset both for the Stream alone)'
        : 'DINGTALK_AES_KEY: required with DINGTALK_TOKEN (the callback needs both; unset both for the Stream alone)',
    );
    return undefined;
  }
  return dingtalkFrom(env, true);
}

/** The SDK's WSClient starts only for an app id of this form; any other it refuses in a log line, silently. */
const FEISHU_APP_ID_FORM = /^cli_[0-9a-fA-F]{16}$/;

/**
 * The Feishu connector. In callback mode all four settings turn it on, as for the other vendors.
 * In long-connection mode the connection needs the app id and secret only (it is authenticated
 * when its endpoint is discovered, and events arrive in plaintext); the callback's two keys,
 * when both are set too, keep `POST /webhooks/feishu` on beside it, for a migration.
 */
function feishuFrom(env: Env, problems: string[], on: (vendor: 'feishu') => boolean): FeishuConfig | undefined {
  const app = (callback: FeishuConfig['callback']): FeishuConfig => ({
    appId: env.FEISHU_APP_ID as string,
    appSecret: env.FEISHU_APP_SECRET as string,
    apiBaseUrl: env.FEISHU_API_BASE_URL,
    eventMode: env.FEISHU_EVENT_MODE,
    callback,
  });
  const callbackKeys = () =>
    env.FEISHU_ENCRYPT_KEY && env.FEISHU_VERIFICATION_TOKEN
      ? { encryptKey: env.FEISHU_ENCRYPT_KEY, verificationToken: env.FEISHU_VERIFICATION_TOKEN }
      : undefined;
  if (env.FEISHU_EVENT_MODE === 'callback') return on('feishu') ? app(callbackKeys()) : undefined;

  const problemsBefore = problems.length;
  const missing = (['FEISHU_APP_ID', 'FEISHU_APP_SECRET'] as const).filter((name) => env[name] === undefined);
  if (missing.length > 0) {
    problems.push(
      `${missing.join(', ')}: required with FEISHU_EVENT_MODE=long-connection (the connection is opened with the app's id and secret)`,
    );
  } else if (!FEISHU_APP_ID_FORM.test(env.FEISHU_APP_ID as string)) {
    problems.push(
      'FEISHU_APP_ID: must be "cli_" and 16 hexadecimal digits with FEISHU_EVENT_MODE=long-connection (the SDK opens no connection for another app id)',
    );
  }
  const keys = (['FEISHU_ENCRYPT_KEY', 'FEISHU_VERIFICATION_TOKEN'] as const).filter((name) => env[name] !== undefined);
  if (keys.length === 1) {
    const [given] = keys;
    const other = given === 'FEISHU_ENCRYPT_KEY' ? 'FEISHU_VERIFICATION_TOKEN' : 'FEISHU_ENCRYPT_KEY';
    problems.push(
      `${other}: required with ${given} (the Feishu callback beside the long connection is partly configured; unset both to keep the long connection alone)`,
    );
  }
  return problems.length === problemsBefore ? app(callbackKeys()) : undefined;
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
  // The webhook's secrets are Standard Webhooks keys only in that scheme; the `oa` scheme uses a
  // secret's bytes as they are, whatever its prefix.
  if (env.WEBHOOK_SIGNATURE_SCHEME === 'standard') {
    for (const name of ['WEBHOOK_SECRET', 'WEBHOOK_SECRET_PREVIOUS'] as const) {
      const secret = env[name];
      const problem = secret === undefined ? undefined : standardSecretProblem(secret);
      if (problem) problems.push(`${name}: ${problem}`);
    }
  }
  return problems;
}

/**
 * The operator token is a right of its own: equal to a submit token (the current one or the one
 * being replaced) it would hand the operator tools to every submitting client.
 */
function operatorTokenProblems(env: Env): string[] {
  const operator = env.MCP_OPERATOR_TOKEN;
  if (operator === undefined) return [];
  return (['MCP_TOKEN', 'MCP_TOKEN_PREVIOUS'] as const)
    .filter((name) => env[name] === operator)
    .map((name) => `MCP_OPERATOR_TOKEN: equals ${name}; the operator token must differ from the submit token`);
}

/** Timeouts are layered, inner < outer (docs/architecture.md, decision 6); a ladder upside down is refused. */
function ladderProblems(env: Env): string[] {
  const problems: string[] = [];
  if (env.DB_STATEMENT_TIMEOUT_MS >= env.ACTIVITY_START_TO_CLOSE_MS) {
    problems.push('DB_STATEMENT_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS');
  }
  if (env.DOWNSTREAM_TIMEOUT_MS >= env.ACTIVITY_START_TO_CLOSE_MS) {
    problems.push('DOWNSTREAM_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS');
  }
  // Only a broker that is on has a rung here: a short attempt must not need a broker setting.
  if (env.AMQP_URL && env.AMQP_CONFIRM_TIMEOUT_MS >= env.ACTIVITY_START_TO_CLOSE_MS) {
    problems.push('AMQP_CONFIRM_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS');
  }
  if (env.ACTIVITY_START_TO_CLOSE_MS >= env.ACTIVITY_SCHEDULE_TO_CLOSE_MS) {
    problems.push('ACTIVITY_START_TO_CLOSE_MS: must be below ACTIVITY_SCHEDULE_TO_CLOSE_MS');
  }
  if (env.ACTIVITY_SCHEDULE_TO_CLOSE_MS >= env.COMPENSATION_DECISION_TIMEOUT_MS) {
    problems.push('ACTIVITY_SCHEDULE_TO_CLOSE_MS: must be below COMPENSATION_DECISION_TIMEOUT_MS');
  }
  // A tool wait shorter than one attempt would answer "still running" to nearly every call.
  // A tool answer may take the wait and then a start confirmed under its own deadline.
  if (env.MCP_SUBMIT_WAIT_MS + env.WEBHOOK_START_TIMEOUT_MS >= 60_000) {
    problems.push('MCP_SUBMIT_WAIT_MS: with WEBHOOK_START_TIMEOUT_MS must stay below the 60 s MCP clients wait');
  }
  if (env.MCP_SUBMIT_WAIT_MS <= env.ACTIVITY_START_TO_CLOSE_MS) {
    problems.push('MCP_SUBMIT_WAIT_MS: must be above ACTIVITY_START_TO_CLOSE_MS');
  }
  // The webhook keeps a fifth of its deadline, at least 500 ms, for the way to and from the sender
  // (edges/http/arrival.ts): below 1.5 s the claim and the start would have under a second, and a
  // busy moment would shed every delivery.
  if (env.WEBHOOK_START_TIMEOUT_MS < 1_500) {
    problems.push(
      'WEBHOOK_START_TIMEOUT_MS: must be at least 1500 (a fifth, at least 500 ms, is kept for the way to and from the sender)',
    );
  }
  // A wait is honoured in whole seconds up to what the start's own deadline leaves of the answer's.
  if (env.WEBHOOK_MAX_WAIT_MS - env.WEBHOOK_START_TIMEOUT_MS < 1_000) {
    problems.push('WEBHOOK_MAX_WAIT_MS: must be at least 1000 above WEBHOOK_START_TIMEOUT_MS');
  }
  if (env.RETRY_INITIAL_INTERVAL_MS > env.RETRY_MAX_INTERVAL_MS) {
    problems.push('RETRY_INITIAL_INTERVAL_MS: must not exceed RETRY_MAX_INTERVAL_MS');
  }
  return problems;
}
