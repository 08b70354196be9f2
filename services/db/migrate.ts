// Applies the store's migrations (prisma/migrations on PostgreSQL, prisma/mysql/migrations on
// MySQL/MariaDB), each folder's migration.sql in order, keeping Prisma's `_prisma_migrations`
// bookkeeping, so `prisma migrate status` / `deploy` agree wherever Prisma's schema engine can be
// downloaded. Safe to run from several processes at once: a lock serialises them (an advisory lock
// on PostgreSQL, a named lock on MySQL).
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { mysqlConnection } from './stores/mysql-connection.js';
import { type Store, storeOfUrl } from './stores/store.js';

/** A folder under prisma/ beside the sources, or beside dist/ when running the built JavaScript. */
function prismaFolder(name: string): string {
  const candidates = [
    fileURLToPath(new URL(`../../prisma/${name}`, import.meta.url)),
    fileURLToPath(new URL(`../../../prisma/${name}`, import.meta.url)),
  ];
  return candidates.find((candidate) => existsSync(candidate)) ?? (candidates[0] as string);
}

/** Each store's migrations. */
export const MIGRATION_DIRS: Record<Store, string> = {
  postgresql: prismaFolder('migrations'),
  mysql: prismaFolder('mysql/migrations'),
};

export const MIGRATIONS_DIR = MIGRATION_DIRS.postgresql;

// The lock id Prisma Migrate itself uses, so our runner and Prisma never migrate concurrently.
const MIGRATION_LOCK_ID = 72707369;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    }),
  );
}

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationError';
  }
}

/** The store a URL names, or a MigrationError saying which schemes there are. */
function storeToMigrate(databaseUrl: string): Store {
  const store = storeOfUrl(databaseUrl);
  if (!store) throw new MigrationError('the database URL must start with postgresql:// or mysql:// (mariadb://)');
  return store;
}

/** How long a migration's DDL waits for a lock another transaction holds, unless told otherwise. */
export const DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 10_000;

export interface MigrateOptions {
  /** The migrations' folder; the store's own by default. */
  dir?: string;
  /**
   * MIGRATION_LOCK_TIMEOUT_MS: how long a statement waits for a lock (a table that a long
   * transaction reads, say) before the migration fails, naming the wait, instead of queueing every
   * query of the service behind it for as long as that transaction lasts.
   */
  lockTimeoutMs?: number;
}

/** Applies what is missing; returns the names it applied. Refuses edited or failed migrations. */
export async function migrate(databaseUrl: string, options: MigrateOptions = {}): Promise<string[]> {
  const store = storeToMigrate(databaseUrl);
  const migrations = await readMigrations(options.dir ?? MIGRATION_DIRS[store]);
  const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_MIGRATION_LOCK_TIMEOUT_MS;
  return store === 'mysql'
    ? migrateMysql(databaseUrl, migrations, lockTimeoutMs)
    : migratePostgresql(databaseUrl, migrations, lockTimeoutMs);
}

/** The message of a migration whose statement gave up waiting for a lock; `after` says what stands. */
function lockWaitMessage(name: string, lockTimeoutMs: number, after: string): string {
  return (
    `migration ${name} waited ${lockTimeoutMs} ms for a lock another transaction holds (MIGRATION_LOCK_TIMEOUT_MS): ` +
    `${after}; end that transaction, or run the migrations when the tables are quiet`
  );
}

/** What the bookkeeping table says of one migration. */
interface AppliedMigration {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
}

/** Whether `migration` still has to run; throws when it failed earlier or was edited since. */
function mustApply(migration: Migration, applied: Map<string, AppliedMigration>): boolean {
  const existing = applied.get(migration.name);
  if (!existing) return true;
  if (!existing.finished_at) {
    throw new MigrationError(`migration ${migration.name} failed earlier; resolve it before starting`);
  }
  if (existing.checksum !== migration.checksum) {
    throw new MigrationError(`migration ${migration.name} was edited after it was applied`);
  }
  return false;
}

async function migratePostgresql(
  databaseUrl: string,
  migrations: Migration[],
  lockTimeoutMs: number,
): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'exactly-once-orders-migrate' });
  // A dropped connection also arrives as an 'error' event; the failing query reports it, so the
  // event must not crash the process.
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
        "id" VARCHAR(36) PRIMARY KEY NOT NULL,
        "checksum" VARCHAR(64) NOT NULL,
        "finished_at" TIMESTAMPTZ,
        "migration_name" VARCHAR(255) NOT NULL,
        "logs" TEXT,
        "rolled_back_at" TIMESTAMPTZ,
        "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
        "applied_steps_count" INTEGER NOT NULL DEFAULT 0
      )`);
    const applied = await client.query<AppliedMigration>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL',
    );
    const byName = new Map(applied.rows.map((row) => [row.migration_name, row]));
    const done: string[] = [];
    for (const migration of migrations) {
      if (!mustApply(migration, byName)) continue;
      const id = randomUUID();
      await client.query('BEGIN');
      try {
        // For this transaction only: the bookkeeping and the migration's own statements.
        await client.query(`SET LOCAL lock_timeout = ${Math.round(lockTimeoutMs)}`);
        await client.query(
          'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())',
          [id, migration.checksum, migration.name],
        );
        await client.query(migration.sql);
        await client.query(
          'UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1',
          [id],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        // 55P03 lock_not_available: the lock timeout, not the migration, ended it; nothing was applied.
        if ((error as { code?: string }).code === '55P03') {
          throw new MigrationError(lockWaitMessage(migration.name, lockTimeoutMs, 'nothing of it was applied'));
        }
        throw new MigrationError(`migration ${migration.name} failed: ${(error as Error).message}`);
      }
      done.push(migration.name);
    }
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await client.end();
  }
}

/**
 * MySQL runs DDL outside transactions: a migration that fails halfway stays recorded as started
 * and unfinished, with the error in `logs`, and every later run refuses to go on until someone
 * resolves it — what Prisma Migrate does on MySQL too.
 */
async function migrateMysql(databaseUrl: string, migrations: Migration[], lockTimeoutMs: number): Promise<string[]> {
  // Loaded here: the processes that migrate PostgreSQL never load the MySQL driver.
  const { default: mariadb } = await import('mariadb');
  const connection = await mariadb.createConnection({
    ...mysqlConnection(databaseUrl),
    multipleStatements: true,
    // lock_wait_timeout bounds the wait for a table's metadata lock (what DDL takes), in whole
    // seconds; innodb_lock_wait_timeout the wait for a row lock.
    initSql: [
      "SET time_zone = '+00:00'",
      `SET SESSION lock_wait_timeout = ${Math.max(1, Math.ceil(lockTimeoutMs / 1000))}`,
      `SET SESSION innodb_lock_wait_timeout = ${Math.max(1, Math.ceil(lockTimeoutMs / 1000))}`,
    ],
  });
  try {
    const [lock] = await connection.query<{ got: number | bigint | null }[]>(
      "SELECT GET_LOCK('prisma_migrate', 600) AS got",
    );
    if (Number(lock?.got) !== 1) throw new MigrationError('another process held the migration lock for 10 minutes');
    await connection.query(`
      CREATE TABLE IF NOT EXISTS _prisma_migrations (
        id VARCHAR(36) PRIMARY KEY NOT NULL,
        checksum VARCHAR(64) NOT NULL,
        finished_at DATETIME(3),
        migration_name VARCHAR(255) NOT NULL,
        logs TEXT,
        rolled_back_at DATETIME(3),
        started_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
        applied_steps_count INTEGER UNSIGNED NOT NULL DEFAULT 0
      ) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    const applied = await connection.query<AppliedMigration[]>(
      'SELECT migration_name, checksum, finished_at FROM _prisma_migrations WHERE rolled_back_at IS NULL',
    );
    const byName = new Map(applied.map((row) => [row.migration_name, row]));
    const done: string[] = [];
    for (const migration of migrations) {
      if (!mustApply(migration, byName)) continue;
      const id = randomUUID();
      await connection.query(
        'INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at) VALUES (?, ?, ?, CURRENT_TIMESTAMP(3))',
        [id, migration.checksum, migration.name],
      );
      try {
        await connection.query(migration.sql);
      } catch (error) {
        const message = (error as Error).message;
        await connection.query('UPDATE _prisma_migrations SET logs = ? WHERE id = ?', [message, id]);
        // 1205 ER_LOCK_WAIT_TIMEOUT: the statement gave up waiting; those before it stand.
        if ((error as { errno?: number }).errno === 1205) {
          throw new MigrationError(
            lockWaitMessage(
              migration.name,
              lockTimeoutMs,
              'the statements before the one that waited stand, as after any failure here',
            ),
          );
        }
        throw new MigrationError(`migration ${migration.name} failed: ${message}`);
      }
      await connection.query(
        'UPDATE _prisma_migrations SET finished_at = CURRENT_TIMESTAMP(3), applied_steps_count = 1 WHERE id = ?',
        [id],
      );
      done.push(migration.name);
    }
    return done;
  } finally {
    await connection.query("SELECT RELEASE_LOCK('prisma_migrate')").catch(() => undefined);
    await connection.end().catch(() => undefined);
  }
}

const bundledMigrations = new Map<Store, Promise<Migration[]>>();

/** Names of the store's migrations that the database has not applied (for /healthz). */
export async function pendingMigrations(
  query: (sql: string) => Promise<{ migration_name: string }[]>,
  store: Store,
): Promise<string[]> {
  // The folder does not change while the process runs: read it once, not on every health probe.
  let bundled = bundledMigrations.get(store);
  if (!bundled) {
    bundled = readMigrations(MIGRATION_DIRS[store]);
    bundledMigrations.set(store, bundled);
  }
  const migrations = await bundled;
  let applied: { migration_name: string }[];
  try {
    applied = await query(
      // Unquoted: the same name in both stores' SQL.
      'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
  } catch {
    return migrations.map((migration) => migration.name);
  }
  const names = new Set(applied.map((row) => row.migration_name));
  return migrations.filter((migration) => !names.has(migration.name)).map((migration) => migration.name);
}
