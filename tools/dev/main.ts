// `npm run dev`: one supervisor for the whole service on embedded defaults — Temporal dev server,
// PostgreSQL, the worker and the HTTP API — with prefixed logs; Ctrl-C stops everything cleanly.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../app/env.js';
import { ConfigError, presentSettings } from '../../services/config/environment.js';
import { namesOwnTemporal, withoutTemporalCredentials } from '../../services/temporal/settings.js';
import { temporalTargetFrom } from '../../services/temporal/connection.js';
import { loadOrCreateDevSecrets } from './dev-secrets.js';
import { removeDevStackFile, writeDevStackFile } from '../../services/config/dev-stack-file.js';
import type { ManagedProcess } from '../harness/child-process.js';
import { apiProcess, workerProcess } from '../harness/service-processes.js';
import { startStack } from '../harness/stack.js';
import { redactUrl } from '../../domain-node/redact-url.js';
import { storeOfUrl } from '../../services/db/stores/store-of-url.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function prefixed(name: string, text: string) {
  for (const line of text.split('\n')) if (line.trim()) process.stdout.write(`[${name.padEnd(8)}] ${line}\n`);
}

async function main() {
  // The embedded dev server unless the environment names a Temporal of its own: a profile file the
  // CLI keeps in the home folder does not (docs/architecture.md, decision 28). The dev server is
  // plaintext: TLS settings, an API key or headers in the shell are for other clusters.
  const ownTemporal = namesOwnTemporal(presentSettings(process.env));
  const plain = ownTemporal ? {} : withoutTemporalCredentials(process.env);
  const config = loadConfig({ ...process.env, ...plain });
  const temporal = ownTemporal ? temporalTargetFrom(config.temporal) : undefined;
  const dataDir = path.resolve(ROOT, config.dataDir);
  const secrets = loadOrCreateDevSecrets(dataDir);
  const webhookSecret = config.webhook.secret ?? secrets.webhookSecret;
  const mcpToken = config.mcp.token ?? secrets.mcpToken;

  prefixed('dev', `data folder ${dataDir}`);
  const stack = await startStack({
    dataDir,
    ...(config.databaseUrl ? { databaseUrl: config.databaseUrl } : {}),
    ...(temporal ? { temporal } : {}),
    namespace: config.temporal.namespace,
    ports: {
      postgres: Number(process.env.DEV_POSTGRES_PORT ?? 5433),
      temporal: Number(process.env.DEV_TEMPORAL_PORT ?? 7233),
      temporalUi: Number(process.env.DEV_TEMPORAL_UI_PORT ?? 8233),
    },
    log: (source, line) => prefixed(source, line),
  });
  if (stack.appliedMigrations.length > 0) prefixed('dev', `applied migrations: ${stack.appliedMigrations.join(', ')}`);
  writeDevStackFile(dataDir, {
    databaseUrl: stack.databaseUrl,
    temporalAddress: stack.temporalAddress,
    taskQueue: config.temporal.taskQueue,
  });

  const ignored = Object.keys(plain);
  if (ignored.length > 0) prefixed('dev', `embedded Temporal dev server: not using ${ignored.join(', ')}`);
  const env = {
    ...plain,
    WEBHOOK_SECRET: webhookSecret,
    MCP_TOKEN: mcpToken,
    // One machine, no load balancer: Ctrl-C need not wait for one to notice the drain.
    SHUTDOWN_DRAIN_MS: process.env.SHUTDOWN_DRAIN_MS ?? '0',
  };
  // Two processes cannot serve one port: with METRICS_PORT the worker takes it, the API the next.
  const metricsPorts = config.metrics ? { worker: config.metrics.port, api: config.metrics.port + 1 } : undefined;
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    prefixed('dev', 'stopping worker, API, Temporal and PostgreSQL');
    await Promise.all(children.map(stopChild));
    await stack.stop();
    removeDevStackFile(dataDir);
    process.exit(code);
  };
  // The supervisor shows each child's lines as they come and, when one exits, stops everything.
  const supervised = (name: string) => ({
    name,
    onOutput: (line: string) => prefixed(name, line),
    onExit: (exit: { code: number | null; signal: NodeJS.Signals | null }) => {
      if (stopping) return;
      prefixed('dev', `a child process exited (code ${exit.code ?? exit.signal}); stopping`);
      void stopAll(1);
    },
    // Started, not awaited: the addresses below are printed at once, and a child that fails stops the rest.
    ready: () => Promise.resolve(true),
  });
  const children: ManagedProcess[] = [
    workerProcess({
      ...supervised('worker'),
      stack,
      env: { ...env, ...(metricsPorts ? { METRICS_PORT: String(metricsPorts.worker) } : {}) },
    }),
    await apiProcess({
      ...supervised('api'),
      stack,
      port: config.http.port,
      env: { ...env, ...(metricsPorts ? { METRICS_PORT: String(metricsPorts.api) } : {}) },
    }),
  ];
  await Promise.all(children.map((child) => child.start()));

  prefixed(
    'dev',
    `HTTP API        http://${config.http.host}:${config.http.port}  (POST /webhooks/oa/approvals, GET /orders/<key>, GET /healthz)`,
  );
  if (stack.temporalUiUrl)
    prefixed('dev', `Temporal Web UI ${stack.temporalUiUrl}/namespaces/${config.temporal.namespace}/workflows`);
  // The embedded server's URL is printed whole (its password is the fixed development one, and
  // psql wants it); a DATABASE_URL of the caller's own is shown without its password.
  const storeName = storeOfUrl(stack.databaseUrl) === 'mysql' ? 'MySQL/MariaDB ' : 'PostgreSQL    ';
  prefixed('dev', `${storeName}  ${config.databaseUrl ? redactUrl(stack.databaseUrl) : stack.databaseUrl}`);
  if (metricsPorts)
    prefixed('dev', `Metrics         worker :${metricsPorts.worker}/metrics, API :${metricsPorts.api}/metrics`);
  if (!config.webhook.secret)
    prefixed(
      'dev',
      `WEBHOOK_SECRET  ${webhookSecret}  (development value, kept in ${path.join(dataDir, 'dev-secrets.json')})`,
    );
  prefixed(
    'dev',
    `MCP (HTTP)      http://${config.http.host}:${config.http.port}/mcp  (Authorization: Bearer <MCP_TOKEN>)`,
  );
  if (!config.mcp.token)
    prefixed(
      'dev',
      `MCP_TOKEN       ${mcpToken}  (development value, kept in ${path.join(dataDir, 'dev-secrets.json')})`,
    );
  prefixed('dev', 'send a signed sample approval: npm run sample   |   Ctrl-C stops everything');

  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
}

/** SIGTERM, so it drains; SIGKILL if it has not ended 15 s later. */
async function stopChild(child: ManagedProcess): Promise<void> {
  const deadline = setTimeout(() => void child.kill('SIGKILL'), 15_000);
  await child.kill('SIGTERM');
  clearTimeout(deadline);
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
