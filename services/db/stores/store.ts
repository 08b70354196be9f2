// Which store a client or a URL speaks to, and that store's statements: the one place the code
// asks "PostgreSQL or MySQL?". DATABASE_URL decides (postgresql:// or mysql:// / mariadb://).
import { mysqlStatements } from './mysql.js';
import { postgresqlStatements } from './postgresql.js';
import type { StoreStatements } from './statements.js';
import type { Store } from './store-of-url.js';

export { STORES, type Store, storeOfUrl } from './store-of-url.js';

/**
 * The store a Prisma client (or a transaction client) was generated for. Each store has its own
 * generated client, and the client names its provider; a transaction client answers as its parent.
 */
export function storeOf(db: object): Store {
  const provider = (db as { _activeProvider?: unknown })._activeProvider;
  if (provider === 'postgresql' || provider === 'mysql') return provider;
  throw new Error(`this Prisma client names no known store (provider ${String(provider)})`);
}

const STATEMENTS: Record<Store, StoreStatements> = { postgresql: postgresqlStatements, mysql: mysqlStatements };

/** The statements of the store `db` speaks to. */
export function statementsFor(db: object): StoreStatements {
  return STATEMENTS[storeOf(db)];
}
