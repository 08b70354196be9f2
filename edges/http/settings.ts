// The HTTP edge's settings: where the API listens, how it drains, how many deliveries it takes at
// once, how long a request may take to arrive and how many connections it keeps, the webhook's
// secrets, signature scheme and deadlines, and the status route's token.
import { z } from 'zod';
import {
  standardSecretProblem,
  WEBHOOK_SIGNATURE_SCHEMES,
  type WebhookSignatureScheme,
} from '../../domain-node/signature.js';
import { milliseconds, secretSetting, switchSetting } from '../../services/config/setting-types.js';

export const httpSettings = {
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  // Read as a Standard Webhooks key only when the webhook verifies in that scheme (`webhookSecretProblems`).
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
  // The most a request (headers and body) may take to arrive; a door whose sender gives up sooner
  // gives its body less (edges/http/request-time.ts). Above it: 408, and the connection closed.
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(300_000).default(10_000),
  // Open connections, in all and from one client address (an IPv6 client by its /64); one more is
  // closed unread (edges/http/connection-caps.ts). Each may hold a body of up to 256 KiB while it arrives.
  HTTP_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(100_000).default(512),
  HTTP_MAX_CONNECTIONS_PER_CLIENT: z.coerce.number().int().min(1).max(100_000).default(256),
  API_HOSTS_WORKER: switchSetting,
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
  // When set, GET /orders/<key> asks for it as a bearer token (docs/http-api.md#reading-a-status).
  STATUS_TOKEN: secretSetting.optional(),
  // Signature schemes and secret rotation (docs/http-api.md, docs/downstream.md).
  WEBHOOK_SIGNATURE_SCHEME: z.enum(WEBHOOK_SIGNATURE_SCHEMES).default('oa'),
  WEBHOOK_SECRET_PREVIOUS: secretSetting.optional(),
};
type HttpEnv = z.output<z.ZodObject<typeof httpSettings>>;

export interface HttpConfig {
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
  /** HTTP_REQUEST_TIMEOUT_MS: the longest any request may take to arrive, headers and body. */
  requestTimeoutMs: number;
  /** HTTP_MAX_CONNECTIONS: the most connections open at once, on every listening socket of the port. */
  maxConnections: number;
  /** HTTP_MAX_CONNECTIONS_PER_CLIENT: the most of them from one client address. */
  maxConnectionsPerClient: number;
}

export interface WebhookConfig {
  secret: string | undefined;
  /** During a rotation: a signature made with this one is accepted too. */
  previousSecret: string | undefined;
  signatureScheme: WebhookSignatureScheme;
  toleranceSeconds: number;
}

export function httpFrom(env: HttpEnv): HttpConfig {
  return {
    port: env.PORT,
    host: env.HOST,
    startTimeoutMs: env.WEBHOOK_START_TIMEOUT_MS,
    maxWaitSeconds: Math.floor((env.WEBHOOK_MAX_WAIT_MS - env.WEBHOOK_START_TIMEOUT_MS) / 1000),
    drainMs: env.SHUTDOWN_DRAIN_MS,
    hostsWorker: env.API_HOSTS_WORKER,
    maxInFlight: env.INTAKE_MAX_IN_FLIGHT,
    acceptSockets: env.HTTP_ACCEPT_SOCKETS,
    requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
    maxConnections: env.HTTP_MAX_CONNECTIONS,
    maxConnectionsPerClient: env.HTTP_MAX_CONNECTIONS_PER_CLIENT,
  };
}

export function webhookFrom(env: HttpEnv): WebhookConfig {
  return {
    secret: env.WEBHOOK_SECRET,
    previousSecret: env.WEBHOOK_SECRET_PREVIOUS,
    signatureScheme: env.WEBHOOK_SIGNATURE_SCHEME,
    toleranceSeconds: env.WEBHOOK_TOLERANCE_SECONDS,
  };
}

/** The webhook's own rungs of the timeout ladder (docs/architecture.md, decision 6). */
export function webhookDeadlineProblems(env: HttpEnv): string[] {
  const problems: string[] = [];
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
  return problems;
}

/** One client's share of the connections is at most all of them. */
export function connectionCapProblems(env: HttpEnv): string[] {
  return env.HTTP_MAX_CONNECTIONS_PER_CLIENT > env.HTTP_MAX_CONNECTIONS
    ? [
        `HTTP_MAX_CONNECTIONS_PER_CLIENT: ${env.HTTP_MAX_CONNECTIONS_PER_CLIENT} is above HTTP_MAX_CONNECTIONS (${env.HTTP_MAX_CONNECTIONS}); set it at most that`,
      ]
    : [];
}

// The webhook's secrets are Standard Webhooks keys only in that scheme; the `oa` scheme uses a
// secret's bytes as they are, whatever its prefix.
export function webhookSecretProblems(env: HttpEnv): string[] {
  const problems: string[] = [];
  if (env.WEBHOOK_SIGNATURE_SCHEME === 'standard') {
    for (const name of ['WEBHOOK_SECRET', 'WEBHOOK_SECRET_PREVIOUS'] as const) {
      const secret = env[name];
      const problem = secret === undefined ? undefined : standardSecretProblem(secret);
      if (problem) problems.push(`${name}: ${problem}`);
    }
  }
  return problems;
}
