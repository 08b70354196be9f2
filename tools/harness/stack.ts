// The stack the service runs on, for `npm run dev`, the test runner, the chaos run, the explorer
// and the bench: PostgreSQL (embedded, a database of its own on a given server, or a given
// database as is) and the Temporal dev server (or a given address), migrated, the namespace ready
// and its search attributes ensured. The servers it starts come back as handles that a fault run
// can stop and start again on the same port and data.
import { existsSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { connectClient, type TemporalTarget } from '../../services/temporal/connection.js';
import { ensureSearchAttributes } from '../../services/temporal/search-attributes.js';
import { migrate } from '../../services/db/migrate.js';
import { type EmbeddedPostgresOptions, PostgresStartError, startEmbeddedPostgres } from './embedded-postgres.js';
import { freePort, waitFor } from './ports.js';
import { startTemporalDevServer, TemporalStartError, type TemporalDevServerOptions } from './temporal-dev-server.js';

export interface StackOptions {
  /** Where the embedded servers keep their data. */
  dataDir: string;
  /** An existing PostgreSQL instead of the embedded one: this database, as is … */
  databaseUrl?: string;
  /** … or, when set, a new database on that server for this stack alone, dropped at stop. */
  freshDatabase?: boolean;
  /** An existing Temporal instead of a dev server of the stack's own … */
  temporalAddress?: string;
  /** … or one that takes more than an address to reach (TLS, an API key, headers). */
  temporal?: TemporalTarget;
  /** `default` when unset. */
  namespace?: string;
  /** Fixed ports for `npm run dev`; free ones otherwise. */
  ports?: { postgres?: number; temporal?: number; temporalUi?: number };
  /** No Temporal Web UI. */
  headless?: boolean;
  /** The dev server with the server's own timings (tools/harness/temporal-dev-server.ts): for measurements and the suite. */
  temporalServerDefaults?: boolean;
  /** Keep Temporal's state on disk (dev, and restarts that must keep it) or in memory (tests). */
  persistTemporal?: boolean;
  /** The embedded PostgreSQL's max_connections (its default, 100, when unset). */
  maxDatabaseConnections?: number;
  /** More settings of the embedded PostgreSQL (`-c name=value`). */
  databaseSettings?: Record<string, string>;
  log?: (source: 'postgres' | 'temporal', line: string) => void;
}

/** The servers DATABASE_URL and TEMPORAL_ADDRESS name, for a tool that runs on them instead of its own. */
export function givenServers(): Pick<StackOptions, 'databaseUrl' | 'temporalAddress'> {
  return {
    ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}),
    ...(process.env.TEMPORAL_ADDRESS ? { temporalAddress: process.env.TEMPORAL_ADDRESS } : {}),
  };
}

/** A server the stack started: stopped, and started again on the same port with the same data. */
export interface Restartable {
  stop: () => Promise<void>;
  start: () => Promise<void>;
}

export interface Stack {
  databaseUrl: string;
  temporalAddress: string;
  namespace: string;
  temporalUiUrl?: string;
  appliedMigrations: string[];
  /** The embedded PostgreSQL; undefined when the database is on a server given by URL. */
  postgres?: Restartable;
  /** The stack's own Temporal dev server; undefined when Temporal was given by address. */
  temporal?: Restartable;
  stop: () => Promise<void>;
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const namespace = options.namespace ?? 'default';
  const given =
    options.temporal ?? (options.temporalAddress ? { address: options.temporalAddress, namespace } : undefined);
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const step of stops.reverse()) await step().catch(() => undefined);
  };
  try {
    const [database, temporal] = await Promise.all([
      startDatabase(options, stops),
      given
        ? { address: given.address }
        : (async () =>
            startTemporal(
              {
                port: options.ports?.temporal ?? (await freePort()),
                portChosenHere: options.ports?.temporal === undefined,
                ...(options.ports?.temporalUi ? { uiPort: options.ports.temporalUi } : {}),
                headless: options.headless ?? false,
                ...(options.temporalServerDefaults ? { serverDefaults: true } : {}),
                ...(options.persistTemporal === false
                  ? {}
                  : { dbFile: path.join(options.dataDir, 'temporal', 'temporal.db') }),
                onOutput: (line) => options.log?.('temporal', line),
              },
              stops,
            ))(),
    ]);

    const appliedMigrations = await migrate(database.databaseUrl);
    await namespaceReady(given ?? { address: temporal.address, namespace });
    return {
      databaseUrl: database.databaseUrl,
      temporalAddress: temporal.address,
      namespace,
      ...('uiUrl' in temporal && temporal.uiUrl ? { temporalUiUrl: temporal.uiUrl } : {}),
      appliedMigrations,
      ...(database.server ? { postgres: database.server } : {}),
      ...('server' in temporal ? { temporal: temporal.server } : {}),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The database the stack uses, and the embedded server behind it when it started one. */
async function startDatabase(
  options: StackOptions,
  stops: (() => Promise<void>)[],
): Promise<{ databaseUrl: string; server?: Restartable }> {
  if (options.databaseUrl && options.freshDatabase) {
    return { databaseUrl: await freshDatabaseOn(options.databaseUrl, stops) };
  }
  if (options.databaseUrl) return { databaseUrl: options.databaseUrl };
  const postgresOptions: EmbeddedPostgresOptions = {
    dataDir: path.join(options.dataDir, 'postgres'),
    port: options.ports?.postgres ?? (await freePort()),
    ...(options.maxDatabaseConnections ? { maxConnections: options.maxDatabaseConnections } : {}),
    ...(options.databaseSettings ? { settings: options.databaseSettings } : {}),
    onOutput: (line) => options.log?.('postgres', line),
  };
  const first = await startEmbeddedPostgres(postgresOptions).catch(async (error: unknown) => {
    // A port found free may be taken before PostgreSQL binds it (another process listening, or an
    // outgoing connection given it as its own end): a port of our choosing is chosen again, once.
    if (options.ports?.postgres !== undefined || !portTaken(error)) throw error;
    postgresOptions.port = await freePort();
    return startEmbeddedPostgres(postgresOptions);
  });
  const server = restartable(first, () => startEmbeddedPostgres(postgresOptions));
  stops.push(server.stop);
  return { databaseUrl: first.databaseUrl, server };
}

/** Whether PostgreSQL stopped at start because it could not listen on its port. */
function portTaken(error: unknown): boolean {
  return error instanceof PostgresStartError && error.lastLines.some((line) => line.includes('Address already in use'));
}

async function startTemporal(
  { portChosenHere, ...options }: TemporalDevServerOptions & { portChosenHere: boolean },
  stops: (() => Promise<void>)[],
) {
  const newDatabase = options.dbFile !== undefined && !existsSync(options.dbFile);
  const first = await startTemporalDevServer(options).catch(async (error: unknown) => {
    // On a busy machine the dev server has exited during start-up (a Go panic, exit 2) where the
    // next start went on; it also binds ports it finds free itself beside ours. A start on a port
    // of our choosing is made again, once, on another; the error's first lines say why.
    if (!portChosenHere || !(error instanceof TemporalStartError)) throw error;
    options.onOutput?.(`${error.message}\nstarting it again on another port`);
    options.port = await freePort();
    // A database the failed start began is begun again: it may be half made.
    if (newDatabase && options.dbFile) {
      for (const file of [options.dbFile, `${options.dbFile}-wal`, `${options.dbFile}-shm`])
        rmSync(file, { force: true });
    }
    return startTemporalDevServer(options);
  });
  const server = restartable(first, () => startTemporalDevServer(options));
  stops.push(server.stop);
  return { address: first.address, ...(first.uiUrl ? { uiUrl: first.uiUrl } : {}), server };
}

function restartable<T extends { stop: () => Promise<void> }>(first: T, startAgain: () => Promise<T>): Restartable {
  let running: T | undefined = first;
  return {
    stop: async () => {
      const current = running;
      running = undefined;
      await current?.stop();
    },
    start: async () => {
      running ??= await startAgain();
    },
  };
}

/** A new, empty database on the server of `serverUrl`; `stops` gets the step that drops it. */
export async function freshDatabaseOn(serverUrl: string, stops: (() => Promise<void>)[]): Promise<string> {
  const name = `stack_${randomBytes(4).toString('hex')}`;
  const onServer = async (statement: string) => {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try {
      await admin.query(statement);
    } finally {
      await admin.end();
    }
  };
  await onServer(`CREATE DATABASE "${name}"`);
  stops.push(() => onServer(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Waits for the namespace to answer, then registers the service's search attributes on it. */
async function namespaceReady(target: TemporalTarget): Promise<void> {
  const { namespace } = target;
  const client = await connectClient(target);
  try {
    await waitFor(
      `Temporal namespace ${namespace}`,
      async () => {
        try {
          await client.workflowService.describeNamespace({ namespace });
          return true;
        } catch {
          return false;
        }
      },
      30_000,
    );
    await ensureSearchAttributes(client, namespace);
  } finally {
    await client.connection.close();
  }
}
