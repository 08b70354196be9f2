// The roles deploy/database/postgresql-roles.sql and mysql-roles.sql make, made by running those
// files on the test's server under names of the test's own: an owner that migrates and an
// application role without DDL, each with a password, and the URLs each connects with. The files'
// last part, the application role's rights on the tables, runs once the owner has migrated
// (`grantAfterMigration`), as the files say.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import mariadb from 'mariadb';
import pg from 'pg';
import { mysqlConnection } from '../../services/db/stores/mysql-connection.js';

const ROLES_SQL = fileURLToPath(new URL('../../deploy/database/postgresql-roles.sql', import.meta.url));
const MYSQL_ROLES_SQL = fileURLToPath(new URL('../../deploy/database/mysql-roles.sql', import.meta.url));
/** The line that splits the PostgreSQL file: above it runs on the server, below it in the new database. */
const IN_DATABASE = '-- connected to the orders database:';
/** The line above each file's last part: the application role's rights, run after every migration. */
const AFTER_MIGRATION = /^-- after every migration\b.*$/m;

export interface DatabaseRoles {
  ownerUrl: string;
  appUrl: string;
  /** Both roles' password, for the checks that it is never repeated. */
  password: string;
  /** Runs the file's last part, as an administrator: call it after every migration. */
  grantAfterMigration(): Promise<void>;
}

/** The file's text under names of the test's own, and a password for both roles. */
function renamed(file: string) {
  const suffix = randomBytes(4).toString('hex');
  const [owner, app, database] = [`owner_${suffix}`, `app_${suffix}`, `orders_${suffix}`];
  const sql = readFileSync(file, 'utf8')
    .replaceAll('orders_owner', owner)
    .replaceAll('orders_app', app)
    .replaceAll(/\b(DATABASE|ON) orders\b/g, `$1 ${database}`);
  return { owner, app, database, password: `pw-${randomBytes(12).toString('hex')}`, sql };
}

/** The file's parts before and after the line that opens its last part (run after every migration). */
function splitAtMigration(file: string, sql: string): [string, string] {
  const [before, after] = sql.split(AFTER_MIGRATION);
  if (after === undefined) throw new Error(`${file} lost its line "-- after every migration…"`);
  return [before as string, after];
}

async function onDatabase(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function withDatabase(serverUrl: string, database: string, user?: { name: string; password: string }): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  if (user) {
    url.username = user.name;
    url.password = user.password;
  }
  return url.toString();
}

/** Runs the roles file on `serverUrl` (a superuser's); `stops` gets the steps that drop all it made. */
export async function rolesOf(serverUrl: string, stops: (() => Promise<void>)[]): Promise<DatabaseRoles> {
  const { owner, app, database, password, sql } = renamed(ROLES_SQL);
  const [beforeMigration, afterMigration] = splitAtMigration(ROLES_SQL, sql);
  const [onServer, inDatabase] = beforeMigration.split(IN_DATABASE);
  if (inDatabase === undefined) throw new Error(`${ROLES_SQL} lost its line "${IN_DATABASE}"`);
  // One statement at a time: CREATE DATABASE cannot run inside the implicit transaction of a batch.
  for (const statement of statementsOf(onServer as string)) await onDatabase(serverUrl, statement);
  stops.push(async () => {
    await onDatabase(withDatabase(serverUrl, 'postgres'), `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await onDatabase(withDatabase(serverUrl, 'postgres'), `DROP ROLE IF EXISTS "${owner}", "${app}"`);
  });
  for (const role of [owner, app]) await onDatabase(serverUrl, `ALTER ROLE "${role}" PASSWORD '${password}'`);
  await onDatabase(withDatabase(serverUrl, database), inDatabase);
  return {
    ownerUrl: withDatabase(serverUrl, database, { name: owner, password }),
    appUrl: withDatabase(serverUrl, database, { name: app, password }),
    password,
    // One query: the part is its own transaction (BEGIN … COMMIT).
    grantAfterMigration: () => onDatabase(withDatabase(serverUrl, database), afterMigration),
  };
}

/** The statements of a file without comments, one by one. */
function statementsOf(sql: string): string[] {
  return sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n')
    .split(';')
    .map((statement) => statement.trim())
    .filter(Boolean);
}

/** Runs mysql-roles.sql on `serverUrl` (an administrator's); `stops` gets the steps that drop all it made. */
export async function mysqlRolesOf(serverUrl: string, stops: (() => Promise<void>)[]): Promise<DatabaseRoles> {
  const { owner, app, database, password, sql } = renamed(MYSQL_ROLES_SQL);
  // The file creates each user with its password: `<… password>` is where the operator writes it.
  const [once, afterMigration] = splitAtMigration(MYSQL_ROLES_SQL, sql.replaceAll(/<\w+ password>/g, `'${password}'`));
  const onMysql = async (part: string) => {
    const connection = await mariadb.createConnection({ ...mysqlConnection(serverUrl), connectTimeout: 5_000 });
    try {
      for (const statement of statementsOf(part)) await connection.query(statement);
    } finally {
      await connection.end();
    }
  };
  stops.push(async () => {
    const admin = await mariadb.createConnection(mysqlConnection(serverUrl));
    try {
      await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
      await admin.query(`DROP USER IF EXISTS '${owner}'@'%', '${app}'@'%'`);
    } finally {
      await admin.end();
    }
  });
  await onMysql(once);
  return {
    ownerUrl: withDatabase(serverUrl, database, { name: owner, password }),
    appUrl: withDatabase(serverUrl, database, { name: app, password }),
    password,
    grantAfterMigration: () => onMysql(afterMigration),
  };
}
