// What an operator command runs against: its config (services/config/operator-config.ts) and the
// database and Temporal connections, opened only when a command needs them.
import type { Client } from '@temporalio/client';
import type { Config } from '../../services/config/env.js';
import { requireSetting } from '../../services/config/process.js';
import { prepareDatabase } from '../../services/db/database-at-start.js';
import { createPrismaClientFromConfig, type PrismaClient } from '../../services/db/prisma-client.js';
import { connectClient, createLazyClient, temporalTargetFrom } from '../../services/temporal/connection.js';

export interface CommandContext {
  config: Config;
  /** The database, once its schema is this build's and its key columns compare bytes. */
  prisma: () => Promise<PrismaClient>;
  temporal: () => Promise<Client>;
  /** A client that connects on first use: for reads the database can answer on its own. */
  lazyTemporal: () => Client;
  /** Progress for long operations: stderr, so stdout stays the result (and valid JSON with --json). */
  progress: (line: string) => void;
  close: () => Promise<void>;
}

export function createContext(config: Config, progress: (line: string) => void): CommandContext {
  let prisma: PrismaClient | undefined;
  let checked: Promise<PrismaClient> | undefined;
  let temporal: Promise<Client> | undefined;
  let lazy: Client | undefined;
  return {
    config,
    prisma: () =>
      (checked ??= (async () => {
        prisma = createPrismaClientFromConfig(config, requireSetting('DATABASE_URL', config.databaseUrl));
        // It never migrates. Under a collation that is not binary, `status APPROVAL:a1:MAIN` could
        // show A1's order.
        await prepareDatabase({ prisma, migrateWith: undefined });
        return prisma;
      })()),
    temporal: () => (temporal ??= connectClient(temporalTargetFrom(config.temporal))),
    lazyTemporal: () => (lazy ??= createLazyClient(temporalTargetFrom(config.temporal))),
    progress,
    close: async () => {
      await prisma?.$disconnect();
      if (temporal) await (await temporal.catch(() => undefined))?.connection.close();
      await lazy?.connection.close();
    },
  };
}
