// One PrismaClient per process, on the `pg` driver adapter. The statement and lock timeouts are
// set on every connection: the innermost rung of the timeout ladder. The driver never retries on
// its own — the activity retry policy is the only retry layer (DESIGN decision 5).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client.js';

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
