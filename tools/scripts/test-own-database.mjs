// Loaded with `--import` into every test file's process when the test runner runs files side by
// side: gives the file a database of its own, copied from the migrated template the runner made,
// and points DATABASE_URL at it before the file's first line runs. Files then share the Temporal
// dev server (each on task queues of its own) but no table: a scan, a purge or a count over all
// orders in one file never sees another file's rows. The processes a test starts inherit the
// variable, so an API or worker child writes to the same database as the test that reads it.
// JavaScript, not TypeScript: the workflow worker's threads inherit the `--import` flags, and load
// this module before any TypeScript loader is in place.
import { randomBytes } from 'node:crypto';
import { URL } from 'node:url';
import pg from 'pg';

const template = process.env.TEST_DATABASE_TEMPLATE;
const databaseUrl = process.env.DATABASE_URL;
// The runner's own process (tools/scripts/test-lane.mjs) loads this module too; only the files'
// processes each take a database.
const isRunner = process.argv[1]?.endsWith('test-lane.mjs') ?? false;

if (template && databaseUrl && !isRunner && !process.env.TEST_OWN_DATABASE) {
  const name = `test_${process.pid}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    // Several files start at the same instant: each copies the template, to which no session is
    // connected (the runner made it and left), as PostgreSQL requires of a copy's source.
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  } finally {
    await admin.end();
  }
  const own = new URL(databaseUrl);
  own.pathname = `/${name}`;
  process.env.DATABASE_URL = own.href;
  // A child process or thread that loads this module again keeps the database it was given.
  process.env.TEST_OWN_DATABASE = name;
}
