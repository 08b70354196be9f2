// Applies prisma/migrations/*/migration.sql in order, keeping Prisma's `_prisma_migrations`
// bookkeeping, so `prisma migrate status` / `deploy` agree wherever Prisma's schema engine can be
// downloaded. Safe to run from several processes at once: an advisory lock serialises them.
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** prisma/migrations beside the sources, or beside dist/ when running the built JavaScript. */
export const MIGRATIONS_DIR =
  [
    fileURLToPath(new URL('../../prisma/migrations', import.meta.url)),
    fileURLToPath(new URL('../../../prisma/migrations', import.meta.url)),
  ].find((candidate) => existsSync(candidate)) ?? fileURLToPath(new URL('../../prisma/migrations', import.meta.url));

// The lock id Prisma Migrate itself uses, so our runner and Prisma never migrate concurrently.
const MIGRATION_LOCK_ID = 72707369;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export async function readMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
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

/** Applies what is missing; returns the names it applied. Refuses edited or failed migrations. */
export async function migrate(databaseUrl: string, dir = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = await readMigrations(dir);
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
    const applied = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL',
    );
    const byName = new Map(applied.rows.map((row) => [row.migration_name, row]));
    const done: string[] = [];
    for (const migration of migrations) {
      const existing = byName.get(migration.name);
      if (existing) {
        if (!existing.finished_at) {
          throw new MigrationError(`migration ${migration.name} failed earlier; resolve it before starting`);
        }
        if (existing.checksum !== migration.checksum) {
          throw new MigrationError(`migration ${migration.name} was edited after it was applied`);
        }
        continue;
      }
      const id = randomUUID();
      await client.query('BEGIN');
      try {
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

let bundledMigrations: Promise<Migration[]> | undefined;

/** Names of migrations in the folder that the database has not applied (for /healthz). */
export async function pendingMigrations(
  query: (sql: string) => Promise<{ migration_name: string }[]>,
): Promise<string[]> {
  // The folder does not change while the process runs: read it once, not on every health probe.
  bundledMigrations ??= readMigrations();
  const migrations = await bundledMigrations;
  let applied: { migration_name: string }[];
  try {
    applied = await query(
      'SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
  } catch {
    return migrations.map((migration) => migration.name);
  }
  const names = new Set(applied.map((row) => row.migration_name));
  return migrations.filter((migration) => !names.has(migration.name)).map((migration) => migration.name);
}
