// The database's settings: which store it is and where (PostgreSQL or MySQL/MariaDB), who applies
// the migrations and over which connection, how many connections a process holds, how long
// idempotency records are kept, and how often the scheduled safety nets look for duplicates.
import { z } from 'zod';
import { storeOfUrl } from './stores/store-of-url.js';
import { behindTransactionPooler } from './transaction-pooler.js';

const connectionUrlSetting = z
  .string()
  .refine(
    (url) => storeOfUrl(url) !== undefined && url.length > url.indexOf('://') + 3,
    'must be a postgresql:// or mysql:// (mariadb://) connection URL',
  )
  .optional();

export const databaseSettings = {
  DATABASE_URL: connectionUrlSetting,
  // The migrate command's own connection: a direct one (not through a transaction-mode pooler, which
  // cannot hold the migration lock) with a role that may run DDL. Unset: DATABASE_URL.
  DATABASE_MIGRATION_URL: connectionUrlSetting,
  // On (the default, what `npm run dev` wants): the API and the worker apply pending migrations at
  // start. Off (deploy/): a Job migrates, and a process that finds the schema behind refuses to serve.
  MIGRATE_ON_START: z
    .enum(['0', '1', 'false', 'true'])
    .default('true')
    .transform((value) => value === '1' || value === 'true'),
  // How long a migration's statement waits for a lock before the migration fails, naming the wait.
  MIGRATION_LOCK_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  DB_POOL_SIZE: z.coerce.number().int().min(1).max(500).default(10),
  DUPLICATE_SCAN_INTERVAL_MINUTES: z.coerce.number().int().min(1).max(10_080).default(15),
  NEAR_DUPLICATE_WINDOW_MINUTES: z.coerce.number().int().min(1).max(10_080).default(10),
  IDEMPOTENCY_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
};
type DatabaseEnv = z.output<z.ZodObject<typeof databaseSettings>>;

/** The scheduled safety nets (Temporal Schedules created by the worker at start). */
export interface SafetyNetsConfig {
  scanIntervalMinutes: number;
  nearDuplicateWindowMinutes: number;
}

export interface DatabaseConfig {
  databaseUrl: string | undefined;
  /** Where migrations run: DATABASE_MIGRATION_URL, else DATABASE_URL. */
  migrationUrl: string | undefined;
  migrateOnStart: boolean;
  /** MIGRATION_LOCK_TIMEOUT_MS. */
  migrationLockTimeoutMs: number;
  dbPoolSize: number;
  retentionDays: number;
  safetyNets: SafetyNetsConfig;
}

export function databaseFrom(env: DatabaseEnv): DatabaseConfig {
  return {
    databaseUrl: env.DATABASE_URL,
    migrationUrl: env.DATABASE_MIGRATION_URL ?? env.DATABASE_URL,
    migrateOnStart: env.MIGRATE_ON_START,
    migrationLockTimeoutMs: env.MIGRATION_LOCK_TIMEOUT_MS,
    dbPoolSize: env.DB_POOL_SIZE,
    retentionDays: env.IDEMPOTENCY_RETENTION_DAYS,
    safetyNets: {
      scanIntervalMinutes: env.DUPLICATE_SCAN_INTERVAL_MINUTES,
      nearDuplicateWindowMinutes: env.NEAR_DUPLICATE_WINDOW_MINUTES,
    },
  };
}

/** Both URLs name one store: migrations written for one cannot run on the other. */
export function databaseProblems(env: DatabaseEnv): string[] {
  const { DATABASE_URL: url, DATABASE_MIGRATION_URL: migrationUrl } = env;
  const problems: string[] = [];
  if (url && migrationUrl && storeOfUrl(url) !== storeOfUrl(migrationUrl)) {
    problems.push(
      'DATABASE_MIGRATION_URL: must name the same store as DATABASE_URL (both postgresql:// or both mysql://)',
    );
  }
  // The migrations hold a session lock, which a transaction pooler hands to another client.
  if (behindTransactionPooler(migrationUrl)) {
    problems.push('DATABASE_MIGRATION_URL: a direct connection, not through a transaction pooler (pgbouncer=true)');
  } else if (!migrationUrl && env.MIGRATE_ON_START && behindTransactionPooler(url)) {
    problems.push(
      'MIGRATE_ON_START: the migrations cannot run through the transaction pooler DATABASE_URL names (pgbouncer=true): ' +
        'set DATABASE_MIGRATION_URL to a direct connection, or MIGRATE_ON_START=false with a migrate job',
    );
  }
  return problems;
}
