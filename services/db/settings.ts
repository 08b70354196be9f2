// The database's settings: which store it is and where (PostgreSQL or MySQL/MariaDB), how many
// connections a process holds, how long idempotency records are kept, and how often the scheduled
// safety nets look for duplicates.
import { z } from 'zod';
import { storeOfUrl } from './stores/store-of-url.js';

export const databaseSettings = {
  DATABASE_URL: z
    .string()
    .refine(
      (url) => storeOfUrl(url) !== undefined && url.length > url.indexOf('://') + 3,
      'must be a postgresql:// or mysql:// (mariadb://) connection URL',
    )
    .optional(),
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
  dbPoolSize: number;
  retentionDays: number;
  safetyNets: SafetyNetsConfig;
}

export function databaseFrom(env: DatabaseEnv): DatabaseConfig {
  return {
    databaseUrl: env.DATABASE_URL,
    dbPoolSize: env.DB_POOL_SIZE,
    retentionDays: env.IDEMPOTENCY_RETENTION_DAYS,
    safetyNets: {
      scanIntervalMinutes: env.DUPLICATE_SCAN_INTERVAL_MINUTES,
      nearDuplicateWindowMinutes: env.NEAR_DUPLICATE_WINDOW_MINUTES,
    },
  };
}
