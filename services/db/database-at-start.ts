// What a process checks of its database before it serves: the schema is the one this build was
// written for (applied here when MIGRATE_ON_START is on, refused with the missing migrations' names
// when it is off), every key column compares bytes, and behind a transaction pooler the role gives
// its connections the timeouts the process could not set.
import type { Logger } from 'pino';
import { ConfigError } from '../config/environment.js';
import { checkKeyColumns } from './key-columns.js';
import { migrate, pendingMigrations } from './migrate.js';
import { type PrismaClient, timeoutLeftToRole } from './prisma-client.js';
import { storeOf } from './stores/store.js';
import { roleTimeoutProblems } from './transaction-pooler.js';

export interface DatabaseAtStart {
  prisma: PrismaClient;
  /** The URL to migrate over (the API and the worker with MIGRATE_ON_START); undefined: never migrate. */
  migrateWith: string | undefined;
  /** MIGRATION_LOCK_TIMEOUT_MS, for the migrations applied here. */
  migrationLockTimeoutMs?: number;
  /** Told which migrations were applied; only a process that migrates needs one. */
  log?: Pick<Logger, 'info'>;
}

/** Applies or refuses a schema behind this build, then refuses key columns that do not compare bytes. */
export async function prepareDatabase({
  prisma,
  migrateWith,
  migrationLockTimeoutMs,
  log,
}: DatabaseAtStart): Promise<void> {
  const roleTimeoutMs = timeoutLeftToRole(prisma);
  if (roleTimeoutMs !== undefined) await checkRoleTimeouts(prisma, roleTimeoutMs);
  if (migrateWith) {
    // Several API and worker processes may start together: the runner serialises them with a lock.
    const applied = await migrate(migrateWith, {
      ...(migrationLockTimeoutMs !== undefined ? { lockTimeoutMs: migrationLockTimeoutMs } : {}),
    });
    if (applied.length > 0) log?.info({ applied }, 'migrations applied');
  } else {
    await refuseSchemaBehind(prisma);
  }
  // A key column that does not compare bytes would let two keys be one: the process stops here.
  await checkKeyColumns(prisma);
}

/** A ConfigError naming each migration of this build that the database has not applied. */
export async function refuseSchemaBehind(prisma: PrismaClient): Promise<void> {
  // A database that does not answer fails here with its own error, not as "every migration missing".
  await prisma.$queryRawUnsafe('SELECT 1');
  const pending = await pendingMigrations((sql) => prisma.$queryRawUnsafe(sql), storeOf(prisma));
  if (pending.length === 0) return;
  throw new ConfigError([
    `the database schema is behind this build: ${pending.length} migration(s) not applied (${pending.join(', ')}); ` +
      'run the migrate job (npm run start:migrate, or npm run migrate) or start with MIGRATE_ON_START=true',
  ]);
}

/** Refuses, as a ConfigError, a role whose connections would run without the ladder's timeouts. */
async function checkRoleTimeouts(prisma: PrismaClient, statementTimeoutMs: number): Promise<void> {
  const rows = await prisma.$queryRawUnsafe<{ name: string; setting: string; role: string }[]>(
    `SELECT name, setting, current_user AS role FROM pg_settings WHERE name IN ('statement_timeout', 'lock_timeout')`,
  );
  const ms = (name: string) => Number(rows.find((row) => row.name === name)?.setting ?? 0);
  const problems = roleTimeoutProblems(
    { role: rows[0]?.role ?? 'the role', statement_timeout: ms('statement_timeout'), lock_timeout: ms('lock_timeout') },
    statementTimeoutMs,
  );
  if (problems.length > 0) throw new ConfigError(problems);
}
