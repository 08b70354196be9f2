// One PrismaClient per process, on the `pg` driver adapter. The statement and lock timeouts are
// set on every connection: the innermost rung of the timeout ladder. The driver never retries on
// its own — the activity retry policy is the only retry layer (docs/architecture.md, decision 5).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/prisma/client.js';

export type { PrismaClient };
export type Db = PrismaClient;
/** The client handed to a `$transaction` callback; repositories accept either. */
export type Tx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

export interface DbOptions {
  databaseUrl: string;
  poolSize: number;
  statementTimeoutMs: number;
  /** How long a caller may wait for a free pooled connection before failing (retryable). */
  connectTimeoutMs?: number;
}

export function createPrismaClient(options: DbOptions): PrismaClient {
  const adapter = new PrismaPg({
    connectionString: options.databaseUrl,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs ?? options.statementTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    lock_timeout: options.statementTimeoutMs,
    // A transaction left open by a dead process must not hold row locks for long.
    idle_in_transaction_session_timeout: Math.max(options.statementTimeoutMs * 5, 10_000),
    application_name: 'exactly-once-orders',
  });
  return new PrismaClient({ adapter });
}

/** The client an entry point uses: pool size and statement timeout from the one config. */
export function createPrismaClientFromConfig(
  config: { dbPoolSize: number; writePolicy: { statementTimeoutMs: number } },
  databaseUrl: string,
): PrismaClient {
  return createPrismaClient({
    databaseUrl,
    poolSize: config.dbPoolSize,
    statementTimeoutMs: config.writePolicy.statementTimeoutMs,
  });
}

/**
 * Runs `work` in one transaction whose statements may take up to `timeoutMs`: for maintenance jobs
 * (the duplicate scan, the retention purge) that read many rows. The write path keeps the short
 * statement timeout set on every connection.
 */
export async function withLongStatements<T>(
  prisma: PrismaClient,
  timeoutMs: number,
  work: (tx: Tx) => Promise<T>,
): Promise<T> {
  return prisma.$transaction(
    async (tx) => {
      await tx.$executeRawUnsafe(`SET LOCAL statement_timeout = ${Math.floor(timeoutMs)}`);
      return work(tx);
    },
    { timeout: timeoutMs + 5_000, maxWait: 10_000 },
  );
}
