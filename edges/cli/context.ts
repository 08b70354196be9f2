// What an operator command runs against: its config (loaded by app/operator-config.ts) and the
// database and Temporal connections, opened only when a command needs them.
import type { Client } from '@temporalio/client';
import type { DatabaseConfig } from '../../services/db/settings.js';
import type { TemporalConfig } from '../../services/temporal/settings.js';
import type { WritePolicy } from '../../submission/settings.js';
import type { WorkerConfig } from '../../worker/settings.js';
import { missingAddressReason } from '../../services/config/dev-stack-file.js';
import { requireSetting } from '../../services/config/process.js';
import { prepareDatabase } from '../../services/db/database-at-start.js';
import { createPrismaClientFromConfig, type PrismaClient } from '../../services/db/prisma-client.js';
import {
  connectClient,
  createLazyClient,
  type TemporalTarget,
  temporalTargetFrom,
} from '../../services/temporal/connection.js';

/** What the commands read of the settings: where the stores are, and the parts' own they act on. */
export type CliConfig = Pick<DatabaseConfig, 'databaseUrl' | 'dbPoolSize' | 'retentionDays' | 'safetyNets'> & {
  nodeEnv: string;
  dataDir: string;
  temporal: TemporalConfig;
  writePolicy: WritePolicy;
  worker: WorkerConfig;
};

export interface CommandContext {
  config: CliConfig;
  /** The database, once its schema is this build's and its key columns compare bytes. */
  prisma: () => Promise<PrismaClient>;
  /** The database as it is, its schema unchecked: for the command that reports on the schema. */
  uncheckedPrisma: () => PrismaClient;
  temporal: () => Promise<Client>;
  /** A client that connects on first use: for reads the database can answer on its own. */
  lazyTemporal: () => Client;
  /** Progress for long operations: stderr, so stdout stays the result (and valid JSON with --json). */
  progress: (line: string) => void;
  close: () => Promise<void>;
}

export function createContext(config: CliConfig, progress: (line: string) => void): CommandContext {
  let prisma: PrismaClient | undefined;
  let checked: Promise<PrismaClient> | undefined;
  let temporal: Promise<Client> | undefined;
  let lazy: Client | undefined;
  // With NODE_ENV=production a missing address says what to set: the dev stack's file is not read.
  const why = missingAddressReason(config);
  const temporalTarget = (): TemporalTarget => {
    if (why) requireSetting('TEMPORAL_ADDRESS', config.temporal.address, why);
    return temporalTargetFrom(config.temporal);
  };
  const client = () =>
    (prisma ??= createPrismaClientFromConfig(config, requireSetting('DATABASE_URL', config.databaseUrl, why)));
  return {
    config,
    uncheckedPrisma: client,
    prisma: () =>
      (checked ??= (async () => {
        const prisma = client();
        // It never migrates. Under a collation that is not binary, `status APPROVAL:a1:MAIN` could
        // show A1's order.
        await prepareDatabase({ prisma, migrateWith: undefined });
        return prisma;
      })()),
    temporal: () => (temporal ??= connectClient(temporalTarget())),
    lazyTemporal: () => (lazy ??= createLazyClient(temporalTarget())),
    progress,
    close: async () => {
      await prisma?.$disconnect();
      if (temporal) await (await temporal.catch(() => undefined))?.connection.close();
      await lazy?.connection.close();
    },
  };
}
