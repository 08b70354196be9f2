// The API and the worker behind PgBouncer in transaction mode, as deploy/ runs them: the roles of
// deploy/database/postgresql-roles.sql, the schema migrated by the owner over a direct connection,
// the application role through the pooler with `pgbouncer=true`. An approval becomes one order and
// its redelivery is a duplicate. Without the flag the processes cannot even connect (the pooler
// refuses the timeouts they send at connect); with it, a role that does not set those timeouts
// itself is refused at start, naming the statement that fixes it; and the migrate command will not
// take its session lock through the pooler.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { migrate } from '../../services/db/migrate.js';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import { type DatabaseRoles, rolesOf } from '../../tools/harness/database-roles.js';
import { type RunningPgBouncer, startPgBouncer } from '../../tools/harness/pgbouncer.js';
import { type ApiProcess, apiProcess, processEnv, sendApproval, workerProcess } from '../../tools/harness/processes.js';
import { approval, eventually, stackEnv, testConfig, uniqueApprovalNo } from '../../tools/harness/service.js';
import { nodeArgsFor } from '../../tools/harness/test-build.js';

/** A pooler's URL as the service is told of it: `pgbouncer=true`. */
function flagged(url: string): string {
  const withFlag = new URL(url);
  withFlag.searchParams.set('pgbouncer', 'true');
  return withFlag.toString();
}

/** The roles file's timeouts are 2 s: the service's default, which the processes run with here. */
const STATEMENT_TIMEOUT_MS = '2000';

describe('behind PgBouncer in transaction mode', () => {
  const stops: (() => Promise<void>)[] = [];
  let roles: DatabaseRoles;
  let pooler: RunningPgBouncer;
  let owner: pg.Pool;
  let pooledUrl: string;
  const config = testConfig({ DB_STATEMENT_TIMEOUT_MS: STATEMENT_TIMEOUT_MS });

  /** The processes' environment: the application role through the pooler, never migrating. */
  const envWith = (databaseUrl: string) => processEnv(config, { DATABASE_URL: databaseUrl, MIGRATE_ON_START: 'false' });

  /** What an API process that cannot start said before it exited. */
  async function refusalOf(databaseUrl: string): Promise<string> {
    const api = await apiProcess('api-refused', envWith(databaseUrl));
    const started = await api.start().then(
      () => undefined,
      (error: unknown) => String(error),
    );
    await api.kill('SIGKILL');
    assert.ok(started !== undefined, 'the API refused to start');
    return `${started}\n${api.output()}`;
  }

  before(async () => {
    roles = await rolesOf(stackEnv().databaseUrl, stops);
    await migrate(roles.ownerUrl);
    await roles.grantAfterMigration();
    pooler = await startPgBouncer(roles.appUrl);
    stops.unshift(() => pooler.stop());
    pooledUrl = flagged(pooler.urlOf(roles.appUrl));
    owner = new pg.Pool({ connectionString: roles.ownerUrl, max: 2 });
    stops.unshift(() => owner.end());
  });

  after(async () => {
    for (const stop of stops) await stop();
  });

  it('writes an approval once through the pooler, and answers its redelivery as a duplicate', async () => {
    const processes: (ApiProcess | ManagedProcess)[] = [];
    try {
      const api = await apiProcess('api-pooled', envWith(pooledUrl));
      const worker = workerProcess('worker-pooled', envWith(pooledUrl));
      processes.push(api, worker);
      await Promise.all([api.start(), worker.start()]);
      const sku = `SKU-${uniqueApprovalNo('PGB')}`;
      await owner.query('INSERT INTO inventory (sku, on_hand, reserved, updated_at) VALUES ($1, 100, 0, now())', [sku]);
      const approvalNo = uniqueApprovalNo('PGB');
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      const first = await sendApproval(api.url, approval(approvalNo, sku));
      assert.equal(first.status, 202, JSON.stringify(first.body));
      const status = await eventually(`${key} past RECEIVED`, async () => {
        const { rows } = await owner.query<{ status: string }>(
          'SELECT status FROM idempotency_record WHERE idempotent_key = $1',
          [key],
        );
        return rows[0]?.status === 'RECEIVED' ? undefined : rows[0]?.status;
      });
      assert.ok(['SUBMITTED', 'DELIVERED'].includes(status), `${key} is ${status}`);
      const again = await sendApproval(api.url, approval(approvalNo, sku));
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const { rows } = await owner.query<{ orders: string }>(
        'SELECT count(*) AS orders FROM order_main WHERE idempotent_key = $1',
        [key],
      );
      assert.equal(Number(rows[0]?.orders), 1, 'one order');
    } finally {
      for (const process of processes) await process.kill('SIGTERM');
    }
  });

  it('cannot connect through it without pgbouncer=true: the pooler refuses the timeouts sent at connect', async () => {
    const refusal = await refusalOf(pooler.urlOf(roles.appUrl));
    assert.match(refusal, /unsupported startup parameter: statement_timeout/);
  });

  it('keeps the migrate command off the pooler: it stops before taking a session lock there', () => {
    const migrate = spawnSync(process.execPath, nodeArgsFor('app/migrate-main.ts'), {
      encoding: 'utf8',
      env: {
        ...process.env,
        DATABASE_URL: pooledUrl,
        DATABASE_MIGRATION_URL: '',
        MIGRATE_ON_START: 'false',
        LOG_LEVEL: 'info',
      },
    });
    assert.equal(migrate.status, 1, migrate.stderr);
    assert.match(`${migrate.stdout}${migrate.stderr}`, /the migrations need a direct connection/);
    assert.doesNotMatch(`${migrate.stdout}${migrate.stderr}`, new RegExp(roles.password), 'no password');
  });

  it('refuses to start when the role leaves a timeout unset, naming the ALTER ROLE that sets it', async () => {
    const role = new URL(roles.appUrl).username;
    // As the superuser: only it may change another role's settings.
    const superuser = new pg.Client({ connectionString: stackEnv().databaseUrl });
    await superuser.connect();
    try {
      await superuser.query(`ALTER ROLE "${role}" RESET lock_timeout`);
    } finally {
      await superuser.end();
    }
    // A pooler of its own: the first one's server connections began with the old setting and keep it.
    const fresh = await startPgBouncer(roles.appUrl);
    stops.unshift(() => fresh.stop());
    const refusal = await refusalOf(flagged(fresh.urlOf(roles.appUrl)));
    assert.match(
      refusal,
      new RegExp(`${role}'s lock_timeout is unset: ALTER ROLE ${role} SET lock_timeout = '2000ms'`),
    );
    assert.doesNotMatch(refusal, /statement_timeout is/, 'the statement timeout the file sets is accepted');
  });
});
