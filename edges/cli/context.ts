// What an operator command runs against: its config (services/config/operator-config.ts) and the
// database and Temporal connections, opened only when a command needs them.
import type { Client } from '@temporalio/client';
import type { Config } from '../../services/config/env.js';
import { requireSetting } from '../../services/config/process.js';
import { createPrismaClientFromConfig, type PrismaClient } from '../../services/db/prisma-client.js';
import { connectClient, createLazyClient, temporalTargetFrom } from '../../services/temporal/connection.js';

export interface CommandContext {
  config: Config;
  prisma: () => PrismaClient;
  temporal: () => Promise<Client>;
  /** A client that connects on first use: for reads the database can answer on its own. */
  lazyTemporal: () => Client;
  /** Progress for long operations: stderr, so stdout stays the result (and valid JSON with --json). */
  progress: (line: string) => void;
  close: () => Promise<void>;
}

export function createContext(config: Config, progress: (line: string) => void): CommandContext {
  let prisma: PrismaClient | undefined;
  let temporal: Promise<Client> | undefined;
  let lazy: Client | undefined;
  return {
    config,
    prisma: () => (prisma ??= createPrismaClientFromConfig(config, requireSetting('DATABASE_URL', config.databaseUrl))),
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
