// The MySQL/MariaDB the MySQL-store tests use: the server at MYSQL_TEST_URL, by default the
// machine's own MariaDB with its passwordless root. Each suite gets databases of its own, dropped
// when it ends. A suite that cannot reach the server fails every one of its tests with a message
// that says how to provide one — never a skip, and never a failed hook that the summary would
// count as "cancelled" rather than failed.
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach } from 'node:test';
import mariadb from 'mariadb';
import { redactUrl } from '../../domain-node/redact-url.js';
import { migrate } from '../../services/db/migrate.js';
import { mysqlConnection } from '../../services/db/stores/mysql-connection.js';

export const MYSQL_TEST_URL = process.env.MYSQL_TEST_URL || 'mysql://root@127.0.0.1:3306';

/** Runs one statement on the server of `url`, in the database it names (none when it names none). */
export async function onMysqlServer(url: string, statement: string): Promise<void> {
  const connection = await mariadb.createConnection({ ...mysqlConnection(url), connectTimeout: 5_000 });
  try {
    await connection.query(statement);
  } finally {
    await connection.end();
  }
}

/** A new, empty database on the server of `serverUrl`; `stops` gets the step that drops it. */
export async function freshMysqlDatabase(serverUrl: string, stops: (() => Promise<void>)[]): Promise<string> {
  const name = `orders_test_${randomBytes(4).toString('hex')}`;
  await onMysqlServer(serverUrl, `CREATE DATABASE \`${name}\``);
  stops.push(() => onMysqlServer(serverUrl, `DROP DATABASE IF EXISTS \`${name}\``));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A migrated order store of a run's own on the MySQL/MariaDB at MYSQL_TEST_URL (the chaos run, the
 * explorer and the bench): `cleanups` gets the step that drops it.
 */
export async function migratedMysqlStore(cleanups: (() => Promise<unknown>)[]): Promise<string> {
  const drops: (() => Promise<void>)[] = [];
  const url = await freshMysqlDatabase(MYSQL_TEST_URL, drops);
  cleanups.push(...drops);
  await migrate(url);
  return url;
}

export interface SuiteMysql {
  /** A new database of the suite's own (dropped after the suite); throws when the server is unreachable. */
  database(): Promise<string>;
  reachable(): boolean;
}

/**
 * Reaches the server once for the enclosing `describe` (call it there, before the suite's own
 * hooks); the databases it hands out are dropped in its `after`.
 */
export function mysqlForSuite(): SuiteMysql {
  let unreachable: Error | undefined;
  const stops: (() => Promise<void>)[] = [];
  before(async () => {
    try {
      await onMysqlServer(MYSQL_TEST_URL, 'SELECT 1');
    } catch (error) {
      unreachable = new Error(
        `MySQL/MariaDB is not reachable at ${redactUrl(MYSQL_TEST_URL)} (${(error as Error).message}). These ` +
          'tests need a running MariaDB ≥ 10.11 or MySQL 8: on Debian `apt-get install mariadb-server` serves ' +
          '127.0.0.1:3306 with a passwordless root; elsewhere set MYSQL_TEST_URL=mysql://user:password@host:3306 ' +
          '(the user creates and drops databases).',
      );
    }
  });
  beforeEach(() => {
    if (unreachable) throw unreachable;
  });
  after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  });
  return {
    database: async () => {
      if (unreachable) throw unreachable;
      return freshMysqlDatabase(MYSQL_TEST_URL, stops);
    },
    reachable: () => unreachable === undefined,
  };
}
