// The real entry points (API and worker) as child processes of a test (tools/harness/service-processes.ts),
// pointed at the test's own stack and task queue, plus a plain HTTP client for them. For tests about
// processes: TLS at start-up, several instances, signals.
import path from 'node:path';
import type { ManagedProcess } from './child-process.js';
import {
  apiProcess as harnessApiProcess,
  type ApiProcess,
  workerProcess as harnessWorkerProcess,
} from './service-processes.js';
import type { Config } from '../../app/env.js';

export type { ApiProcess };
import { signedHeaders, TEST_WEBHOOK_SECRET } from './signed-webhook.js';

/** The environment of a service process that shares `config`'s database, Temporal and task queue. */
export function processEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: config.databaseUrl,
    TEMPORAL_ADDRESS: config.temporal.address,
    TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
    WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    RETRY_INITIAL_INTERVAL_MS: String(config.writePolicy.initialIntervalMs),
    RETRY_MAX_INTERVAL_MS: String(config.writePolicy.maxIntervalMs),
    DB_STATEMENT_TIMEOUT_MS: String(config.writePolicy.statementTimeoutMs),
    ACTIVITY_START_TO_CLOSE_MS: String(config.writePolicy.startToCloseMs),
    ACTIVITY_SCHEDULE_TO_CLOSE_MS: String(config.writePolicy.scheduleToCloseMs),
    COMPENSATION_DECISION_TIMEOUT_MS: String(config.writePolicy.decisionTimeoutMs),
    ...extra,
  };
}

/**
 * `release`: the directory of an installed release — its built JavaScript under plain node, run
 * from there (what `npm run start:*` runs). Unset: this checkout's sources, as the test run's
 * build runs them when there is one (tools/harness/test-build.ts), else through tsx.
 */
function entryOf(entry: string, release: string | undefined) {
  return release ? { nodeArgs: [], entry: path.join(release, 'dist', `${entry}.js`), cwd: release } : {};
}

export async function apiProcess(name: string, env: NodeJS.ProcessEnv, release?: string): Promise<ApiProcess> {
  return harnessApiProcess({ name, env, ...entryOf('app/api-main', release) });
}

export function workerProcess(name: string, env: NodeJS.ProcessEnv, release?: string): ManagedProcess {
  return harnessWorkerProcess({ name, env, ...entryOf('app/worker-main', release) });
}

export interface HttpAnswer {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

/**
 * POSTs a signed approval to a running API, with `headers` besides the signature's; a refused
 * connection, or no answer within `timeoutMs` when given, is `status: 0`.
 */
export async function sendApproval(
  url: string,
  body: unknown,
  options: { timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<HttpAnswer> {
  const payload = JSON.stringify(body);
  try {
    const response = await fetch(`${url}/webhooks/oa/approvals`, {
      method: 'POST',
      headers: { ...signedHeaders(payload), ...options.headers },
      body: payload,
      ...(options.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(options.timeoutMs) }),
    });
    const text = await response.text();
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      // A gateway's own error page (nginx's 502) is HTML: the status is what counts then.
      body:
        text && /json/.test(response.headers.get('content-type') ?? '')
          ? (JSON.parse(text) as Record<string, unknown>)
          : {},
    };
  } catch {
    return { status: 0, retryAfter: null, body: {} };
  }
}
