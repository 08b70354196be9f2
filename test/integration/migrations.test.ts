// The migrations in prisma/migrations and prisma/schema.prisma describe the same database, and
// the migration runner keeps Prisma's bookkeeping.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrate, readMigrations } from '../../services/db/migrate.js';
import { migrationsWith } from '../../tools/harness/migrations-with.js';
import { readSchemaDmmf, schemaDrift } from '../../tools/harness/schema-drift.js';
import { stackEnv } from '../../tools/harness/service.js';

const SCHEMA = fileURLToPath(new URL('../../prisma/schema.prisma', import.meta.url));

describe('migrations', () => {
  let db: pg.Client;

  before(async () => {
    db = new pg.Client({ connectionString: stackEnv().databaseUrl });
    await db.connect();
  });
  after(() => db.end());

  it('leave the database exactly as schema.prisma describes it', async () => {
    const problems = await schemaDrift(db, await readSchemaDmmf(SCHEMA));
    assert.deepEqual(problems, []);
  });

  it('a schema.prisma that disagrees with the database is reported (the drift check can fail)', async () => {
    const text = readFileSync(SCHEMA, 'utf8')
      .replace('@map("idempotent_key") @db.VarChar(128)', '@map("idempotent_key") @db.VarChar(64)')
      .replace(
        '  currency       String      @db.Char(3)\n',
        '  currency       String      @db.Char(3)\n  region String?\n',
      );
    const problems = await schemaDrift(db, await readSchemaDmmf(SCHEMA, text));
    assert.ok(
      problems.some((problem) =>
        problem.startsWith('order_main.idempotent_key: schema.prisma says character varying(64)'),
      ),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((problem) => problem.startsWith('order_main.region: in schema.prisma, missing')),
      problems.join('\n'),
    );
  });

  it('are recorded in _prisma_migrations with their checksums, and a second run applies nothing', async () => {
    const migrations = await readMigrations();
    const { rows } = await db.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" ORDER BY migration_name',
    );
    assert.deepEqual(
      rows.map((row) => [row.migration_name, row.checksum, row.finished_at !== null]),
      migrations.map((migration) => [migration.name, migration.checksum, true]),
    );
    assert.deepEqual(await migrate(stackEnv().databaseUrl), []);
  });

  it(
    'a migration that waits for a lock past MIGRATION_LOCK_TIMEOUT_MS fails naming the wait, and leaves nothing applied',
    // Without the lock timeout it would wait for as long as the transaction holding the table lasts.
    { timeout: 60_000 },
    async () => {
      const { dir, name, remove } = migrationsWith(
        'postgresql',
        'lock_probe',
        'ALTER TABLE "inventory" ADD COLUMN "lock_probe" INTEGER;',
      );
      // A long transaction that reads the table: ALTER TABLE needs the lock it holds.
      const holder = new pg.Client({ connectionString: stackEnv().databaseUrl });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('LOCK TABLE "inventory" IN ACCESS SHARE MODE');
        await assert.rejects(
          migrate(stackEnv().databaseUrl, { dir, lockTimeoutMs: 300 }),
          /^MigrationError: migration 29991231000000_lock_probe waited 300 ms for a lock another transaction holds \(MIGRATION_LOCK_TIMEOUT_MS\): nothing of it was applied/,
        );
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
        remove();
      }
      const recorded = await db.query('SELECT 1 FROM "_prisma_migrations" WHERE migration_name = $1', [name]);
      assert.equal(recorded.rowCount, 0, 'the migration is not recorded');
      const column = await db.query(
        "SELECT 1 FROM information_schema.columns WHERE table_name = 'inventory' AND column_name = 'lock_probe'",
      );
      assert.equal(column.rowCount, 0, 'the column was not added');
    },
  );

  it('compares keys byte for byte: the key columns use collation "C"', async () => {
    const { rows } = await db.query<{ table_name: string; collation_name: string | null }>(
      `SELECT table_name, collation_name FROM information_schema.columns
       WHERE table_schema = current_schema() AND column_name = 'idempotent_key' ORDER BY table_name`,
    );
    assert.ok(rows.length >= 3);
    for (const row of rows) assert.equal(row.collation_name, 'C', row.table_name);
  });
});
