// What an operator command runs against: the one typed config (with the running `npm run dev`
// stack as the fallback when DATABASE_URL / TEMPORAL_ADDRESS are unset), and the database and
// Temporal connections, opened only when a command needs them.
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { type Config, loadConfig } from '../config/env.js';
import { requireSetting } from '../config/process.js';
import { readDevStackFile } from '../dev/dev-stack-file.js';
import { createPrismaClientFromConfig, type PrismaClient } from '../db/prisma-client.js';
import { connectClient, createLazyClient, temporalTargetFrom } from '../temporal/connection.js';

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

export function createContext(env: NodeJS.ProcessEnv, progress: (line: string) => void): CommandContext {
  const dev = readDevStackFile(path.resolve(env.DATA_DIR ?? '.data'));
  const useDev = dev && !env.DATABASE_URL && !env.TEMPORAL_ADDRESS;
  const config = loadConfig(
    useDev
      ? {
          ...env,
          DATABASE_URL: dev.databaseUrl,
          TEMPORAL_ADDRESS: dev.temporalAddress,
          TEMPORAL_TASK_QUEUE: env.TEMPORAL_TASK_QUEUE ?? dev.taskQueue,
        }
      : env,
  );
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
