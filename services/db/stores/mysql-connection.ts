// How a mysql:// or mariadb:// URL becomes the `mariadb` driver's connection settings: one reading
// for the client's pool (prisma-client.ts) and the migration runner's connection (migrate.ts).
import type mariadb from 'mariadb';

/**
 * The connection a mysql:// or mariadb:// URL names: host, port, user, password and database, and
 * the driver's own options from its query (`?ssl=true`), with numbers and booleans as such.
 */
export function mysqlConnection(databaseUrl: string): mariadb.PoolConfig {
  const url = new URL(databaseUrl);
  const options: Record<string, unknown> = {};
  for (const [name, value] of url.searchParams) {
    options[name] = value === 'true' ? true : value === 'false' ? false : isDigits(value) ? Number(value) : value;
  }
  return {
    ...options,
    host: decodeURIComponent(url.hostname) || 'localhost',
    port: url.port ? Number(url.port) : 3306,
    user: decodeURIComponent(url.username) || undefined,
    password: decodeURIComponent(url.password) || undefined,
    database: decodeURIComponent(url.pathname.slice(1)) || undefined,
  };
}

function isDigits(value: string): boolean {
  return value.length > 0 && [...value].every((char) => char >= '0' && char <= '9');
}
