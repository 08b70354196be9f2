// The embedded stack: Temporal dev server and PostgreSQL, each started only when no external one
// is configured, then migrated and ready. Used by `npm run dev` and by the test runner.
import path from 'node:path';
import { connectClient } from '../../services/temporal/connection.js';
import { ensureSearchAttributes } from '../../services/temporal/search-attributes.js';
import { migrate } from '../../services/db/migrate.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';
import { freePort, waitFor } from '../harness/ports.js';
import { startTemporalDevServer } from './temporal-dev-server.js';

export interface StackOptions {
  dataDir: string;
  databaseUrl?: string;
  temporalAddress?: string;
  namespace: string;
  /** Fixed ports for `npm run dev`; free ones for tests. */
  ports?: { postgres?: number; temporal?: number; temporalUi?: number };
  headless?: boolean;
  /** Keep Temporal's state on disk (dev) or in memory (tests). */
  persistTemporal?: boolean;
  /** The embedded PostgreSQL's max_connections (its default, 100, when unset). */
  maxDatabaseConnections?: number;
  log?: (source: 'postgres' | 'temporal', line: string) => void;
}

export interface Stack {
  databaseUrl: string;
  temporalAddress: string;
  temporalUiUrl?: string;
  appliedMigrations: string[];
  stop: () => Promise<void>;
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const stops: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const step of stops.reverse()) await step().catch(() => undefined);
  };
  try {
    const [database, temporal] = await Promise.all([
      options.databaseUrl
        ? { databaseUrl: options.databaseUrl, stop: () => Promise.resolve() }
        : (async () =>
            startEmbeddedPostgres({
              dataDir: path.join(options.dataDir, 'postgres'),
              port: options.ports?.postgres ?? (await freePort()),
              ...(options.maxDatabaseConnections ? { maxConnections: options.maxDatabaseConnections } : {}),
              onOutput: (line) => options.log?.('postgres', line),
            }))(),
      options.temporalAddress
        ? { address: options.temporalAddress, stop: () => Promise.resolve() }
        : (async () =>
            startTemporalDevServer({
              port: options.ports?.temporal ?? (await freePort()),
              ...(options.ports?.temporalUi ? { uiPort: options.ports.temporalUi } : {}),
              headless: options.headless ?? false,
              ...(options.persistTemporal === false
                ? {}
                : { dbFile: path.join(options.dataDir, 'temporal', 'temporal.db') }),
              onOutput: (line) => options.log?.('temporal', line),
            }))(),
    ]);
    stops.push(database.stop, temporal.stop);

    const appliedMigrations = await migrate(database.databaseUrl);
    const client = await connectClient({ address: temporal.address, namespace: options.namespace });
    try {
      await waitFor(
        `Temporal namespace ${options.namespace}`,
        async () => {
          try {
            await client.workflowService.describeNamespace({ namespace: options.namespace });
            return true;
          } catch {
            return false;
          }
        },
        30_000,
      );
      await ensureSearchAttributes(client, options.namespace);
    } finally {
      await client.connection.close();
    }
    return {
      databaseUrl: database.databaseUrl,
      temporalAddress: temporal.address,
      ...('uiUrl' in temporal && temporal.uiUrl ? { temporalUiUrl: temporal.uiUrl } : {}),
      appliedMigrations,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
