// One PrismaClient per process, on the store DATABASE_URL names: PostgreSQL through the `pg`
// driver adapter, MySQL/MariaDB through the `mariadb` one (each store has its own generated
// client; both answer to the one PrismaClient type, since the models are the same). The statement
// and lock timeouts are set on every connection: the innermost rung of the timeout ladder. The
// driver never retries on its own — the activity retry policy is the only retry layer
// (docs/architecture.md, decision 5).
import { createRequire } from 'node:module';
import type * as MariaDbAdapterPackage from '@prisma/adapter-mariadb';
import { PrismaPg } from '@prisma/adapter-pg';
import type * as MariaDbPackage from 'mariadb';
import pg from 'pg';
import { PrismaClient } from './generated/prisma/client.js';
import { PrismaClient as MysqlPrismaClient } from './generated/prisma-mysql/client.js';
import { createTurns, inTurn } from './stores/fair-pool.js';
import { listenForLostConnections } from './pg-connection-errors.js';
import { mysqlConnection } from './stores/mysql-connection.js';
import { statementsFor, storeOfUrl } from './stores/store.js';
import type { Tx } from './stores/tx.js';
import { behindTransactionPooler, withoutPoolerFlag } from './transaction-pooler.js';

export type { PrismaClient, Tx };
export type Db = PrismaClient;

export interface DbOptions {
  databaseUrl: string;
  poolSize: number;
  statementTimeoutMs: number;
  /** How long a caller may wait for a free pooled connection before failing (retryable). */
  connectTimeoutMs?: number;
}

/** What a client's pool holds and how many callers wait for one of its connections. */
export interface PoolCounts {
  /** Connections open, in use or idle (at most DB_POOL_SIZE). */
  total: number;
  idle: number;
  /**
   * Callers queued for a connection. Above 0, a statement's wait for a connection eats into its
   * attempt: a worker's slots must never let this happen (docs/architecture.md, decision 30).
   */
  waiting: number;
}

// What each client's pool holds, read from the pool it was built on: Prisma does not hand out
// its adapter, so the pool is kept here.
const pools = new WeakMap<PrismaClient, () => PoolCounts>();
// When a pooled connection of each client last came back from a statement the database answered.
const answeredAt = new WeakMap<PrismaClient, { last: number }>();
/** Clients behind a transaction pooler, and the statement timeout their role must give instead. */
const leftToRole = new WeakMap<PrismaClient, number>();

export function createPrismaClient(options: DbOptions): PrismaClient {
  const store = storeOfUrl(options.databaseUrl);
  if (store === 'mysql') return createMysqlClient(options);
  if (store !== 'postgresql') throw new Error('DATABASE_URL must be a postgresql:// or mysql:// connection URL');
  // The pool is built here rather than by the adapter, so that its counts can be read
  // (poolCounts); the adapter ends it when the client disconnects, as it ends a pool of its own.
  // Behind a transaction pooler the role carries the timeouts (transaction-pooler.ts): the pooler
  // refuses any sent at connect.
  const pooled = behindTransactionPooler(options.databaseUrl);
  const pool = new pg.Pool({
    connectionString: pooled ? withoutPoolerFlag(options.databaseUrl) : options.databaseUrl,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs ?? options.statementTimeoutMs,
    ...(pooled
      ? {}
      : {
          statement_timeout: options.statementTimeoutMs,
          lock_timeout: options.statementTimeoutMs,
          // A transaction left open by a dead process must not hold row locks for long.
          idle_in_transaction_session_timeout: Math.max(options.statementTimeoutMs * 5, 10_000),
        }),
    application_name: 'exactly-once-orders',
  });
  // The adapter listens on a transaction's connection only once it has it: too late for a
  // connection the server ends as it is made.
  listenForLostConnections(pool);
  // The adapter declares its pool with its own, newer copy of @types/pg; at run time both are the
  // one `pg` module (the adapter takes the pool as its own only then: an instanceof check).
  const adapterPool = pool as unknown as ConstructorParameters<typeof PrismaPg>[0];
  const client = new PrismaClient({ adapter: new PrismaPg(adapterPool, { disposeExternalPool: true }) });
  pools.set(client, () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }));
  const answered = { last: Number.NEGATIVE_INFINITY };
  // A connection released with an error is one the pool drops: its statement proves nothing.
  pool.on('release', (error) => {
    if (!error) answered.last = performance.now();
  });
  answeredAt.set(client, answered);
  if (pooled) leftToRole.set(client, options.statementTimeoutMs);
  return client;
}

/**
 * Behind a transaction pooler, the statement timeout the client could not set on its connections,
 * which their role must give them (checked at start: services/db/database-at-start.ts).
 */
export function timeoutLeftToRole(client: PrismaClient): number | undefined {
  return leftToRole.get(client);
}

const load = createRequire(import.meta.url);

function createMysqlClient(options: DbOptions): PrismaClient {
  // The MySQL driver and its adapter are loaded by the processes that use them, not by every one.
  const mariadb = load('mariadb') as typeof MariaDbPackage;
  const { PrismaMariaDb } = load('@prisma/adapter-mariadb') as typeof MariaDbAdapterPackage;
  const seconds = Math.max(1, Math.ceil(options.statementTimeoutMs / 1000));
  const acquireTimeoutMs = options.connectTimeoutMs ?? options.statementTimeoutMs;
  const pool = mariadb.createPool({
    ...mysqlConnection(options.databaseUrl),
    connectionLimit: options.poolSize,
    acquireTimeout: acquireTimeoutMs,
    connectTimeout: options.connectTimeoutMs ?? options.statementTimeoutMs,
    // Affected-row counts are rows changed, not rows matched: the statements read "did this call
    // set it" from them (stores/mysql.ts).
    foundRows: false,
    // Times are UTC on every connection; a lock waits at most the statement timeout (whole seconds,
    // InnoDB's unit). MariaDB and MySQL name the statement limit differently: each runs only its
    // own executable comment.
    initSql:
      `SET time_zone = '+00:00', innodb_lock_wait_timeout = ${seconds}` +
      ` /*M!, max_statement_time = ${options.statementTimeoutMs / 1000} */` +
      ` /*!80000 , max_execution_time = ${Math.floor(options.statementTimeoutMs)} */`,
    connectAttributes: { program_name: 'exactly-once-orders' },
  });
  // Its callers served in the order they asked (./stores/fair-pool.ts): the pool alone lets a
  // busy caller take a freed connection ahead of those waiting, which then time out.
  const turns = createTurns(options.poolSize);
  const client = new MysqlPrismaClient({
    adapter: new PrismaMariaDb(inTurn(pool, turns, acquireTimeoutMs), { disposeExternalPool: true }),
  }) as unknown as PrismaClient;
  pools.set(client, () => ({
    total: pool.totalConnections(),
    idle: pool.idleConnections(),
    waiting: pool.taskQueueSize() + turns.counts().waiting,
  }));
  const answered = { last: Number.NEGATIVE_INFINITY };
  // The pool keeps only a connection still valid, and says so by this event.
  pool.on('release', () => {
    answered.last = performance.now();
  });
  answeredAt.set(client, answered);
  return client;
}

/** The counts of the pool `prisma` was created on (by createPrismaClient), read at this moment. */
export function poolCounts(prisma: PrismaClient): PoolCounts {
  const counts = pools.get(prisma);
  if (!counts) throw new Error('poolCounts: this client was not created by createPrismaClient');
  return counts();
}

/**
 * Whether a pooled connection of `prisma` came back from a statement the database answered after
 * `since` (a `performance.now()` moment). A caller that waited that long for a connection waited on
 * a busy pool, not on a database that is down. False for a client createPrismaClient did not create.
 */
export function poolAnsweredSince(prisma: PrismaClient, since: number): boolean {
  return (answeredAt.get(prisma)?.last ?? Number.NEGATIVE_INFINITY) > since;
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
export function withLongStatements<T>(
  prisma: PrismaClient,
  timeoutMs: number,
  work: (tx: Tx) => Promise<T>,
): Promise<T> {
  return statementsFor(prisma).withLongStatements(prisma, timeoutMs, work);
}
