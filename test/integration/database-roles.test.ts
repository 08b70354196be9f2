// The application role of deploy/database/postgresql-roles.sql and mysql-roles.sql does what the
// product does and nothing more. Each file is run as it stands (with names of the test's own) on a
// fresh database: the owner migrates, the last part grants, and then, as the application role,
// every write path of the product runs through the product's own functions — a claim, a first
// delivery, a mapped form, an order with its stock, its duplicate, status changes, a key-source
// conflict counted, cleared and reopened, a compensation and its decision, an OA event and its
// revocation alert, the duplicate scan (new, grown and merged alerts) and the retention purge — so
// a statement the product starts issuing without the right to it fails here. Then every other
// change is tried on every table and column the migrations made (the catalogue's list less the
// few the product changes, so a new table or column is covered the day it is added) and each must
// be refused with a permission error. PostgreSQL from the run's stack; MariaDB at MYSQL_TEST_URL.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import mariadb from 'mariadb';
import pg from 'pg';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { prepareDatabase } from '../../services/db/database-at-start.js';
import { scanForDuplicates } from '../../services/db/duplicate-scan.js';
import { recordCompensation, recordCompensationDecision } from '../../services/db/compensation-records.js';
import {
  claimRecord,
  decideFirstDelivery,
  findRecord,
  markWorkflowStarted,
  recordMappedOrder,
} from '../../services/db/idempotency-records.js';
import { clearKeySourceConflicts, recordKeySourceConflict } from '../../services/db/key-source-conflicts.js';
import { migrate } from '../../services/db/migrate.js';
import { recordOaEvent } from '../../services/db/oa-events.js';
import {
  findOrderByKey,
  insertOrderWithReservation,
  isIdempotencyKeyViolation,
  type NewOrder,
} from '../../services/db/order-repository.js';
import { transitionStatus } from '../../services/db/order-status-writer.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { purgeExpiredRecords, statusAtPurge } from '../../services/db/retention.js';
import { recordRevocationAlert } from '../../services/db/revocation-alerts.js';
import { receiptsToPost, recordReceipt } from '../../services/db/approval-receipts.js';
import { mysqlConnection } from '../../services/db/stores/mysql-connection.js';
import { type DatabaseRoles, mysqlRolesOf, rolesOf } from '../../tools/harness/database-roles.js';
import { MYSQL_TEST_URL, mysqlForSuite } from '../../tools/harness/mysql.js';
import { createSku, stackEnv, uniqueApprovalNo } from '../../tools/harness/service.js';

/**
 * What the application role may change: the rights the roles files grant, written out here on
 * their own so that a file that grants more (or a product that needs more) is caught. Every table
 * may be read.
 */
const MAY_INSERT = [
  'order_main',
  'order_line',
  'stock_reservation',
  'idempotency_record',
  'key_source_conflict',
  'compensation_record',
  'duplicate_alert',
  'oa_event',
  'approval_receipt',
];
const MAY_UPDATE: Record<string, string[]> = {
  order_main: ['status_at_purge', 'source_at_purge'],
  inventory: ['reserved', 'updated_at'],
  idempotency_record: [
    'fingerprint',
    'request',
    'status',
    'attempts',
    'last_error',
    'workflow_started_at',
    'first_delivery_at',
    'updated_at',
  ],
  key_source_conflict: [
    'claimed_by',
    'fingerprint',
    'refusals',
    'first_refused_at',
    'last_refused_at',
    'cleared_at',
    'cleared_by',
  ],
  compensation_record: ['decision', 'decided_by', 'decided_at'],
  duplicate_alert: [
    'order_nos',
    'idempotent_keys',
    'order_count',
    'detail',
    'last_order_at',
    'updated_at',
    'superseded_by',
  ],
};
/** MySQL numbers an order from the id its insert drew, in a second statement. */
const MYSQL_MAY_UPDATE: Record<string, string[]> = {
  ...MAY_UPDATE,
  order_main: ['order_no', ...(MAY_UPDATE.order_main ?? [])],
};
const MAY_DELETE = ['idempotency_record'];

const log = { info: () => undefined };
const fingerprintOf = (label: string) => createHash('sha256').update(label).digest('hex');

function orderOf(
  approvalNo: string,
  sku: string,
  fingerprint: string,
  key = idempotencyKeyFor(approvalNo, 'MAIN'),
): NewOrder {
  return {
    idempotencyKey: key,
    approvalNo,
    operation: 'MAIN',
    approvedAt: '2026-12-06T08:00:00Z',
    fingerprint,
    order: { customerId: 'CUST-ROLE', currency: 'CNY', lines: [{ sku, quantity: 1, unitPrice: '2.5000' }] },
    totalAmount: '2.5000',
    writtenAttempt: 1,
  };
}

/**
 * Every write path of the product, as `app` (the application role); `owner` only makes the stock
 * and moves orders back in time for the scan. Fails on the first statement the role may not run.
 */
async function runProductPaths(app: PrismaClient, owner: PrismaClient): Promise<void> {
  await prepareDatabase({ prisma: app, migrateWith: undefined, log });
  const sku = await createSku(owner, 1_000);
  const approvalNo = uniqueApprovalNo('ROLE');
  const key = idempotencyKeyFor(approvalNo, 'MAIN');
  const order = orderOf(approvalNo, sku, fingerprintOf(approvalNo));
  const newRecord = {
    idempotencyKey: key,
    approvalNo,
    operation: 'MAIN' as const,
    fingerprint: order.fingerprint,
    request: null,
    source: 'webhook' as const,
    workflowId: `order-${key}`,
  };

  // The start path: a claim, a second delivery's claim yielding to it, the start and the first answer.
  assert.equal((await claimRecord(app, newRecord)).record?.status, 'RECEIVED');
  assert.equal((await claimRecord(app, newRecord)).record?.idempotencyKey, key);
  await markWorkflowStarted(app, key);
  assert.equal((await decideFirstDelivery(app, key)).first, true);
  assert.equal((await decideFirstDelivery(app, key)).first, false);

  // The order and its stock with the status, once; the second write is the unique index's.
  const written = await app.$transaction((tx) => insertOrderWithReservation(tx, order, { status: 'SUBMITTED' }));
  assert.equal(written.recordChange?.applied, true);
  await assert.rejects(
    app.$transaction((tx) => insertOrderWithReservation(tx, order, { status: 'SUBMITTED' })),
    (error: unknown) => isIdempotencyKeyViolation(error),
  );
  const delivered = await transitionStatus(app, key, 'DELIVERED', { attempts: 2, lastError: null }, log);
  assert.equal(delivered.applied, true);

  // An OA connector's key: claimed without an order, then the form it mapped to; then it fails for
  // good, is compensated (twice, recorded once) and an operator abandons it.
  const formApproval = uniqueApprovalNo('ROLE-OA');
  const formKey = idempotencyKeyFor(formApproval, 'MAIN');
  await claimRecord(app, {
    ...newRecord,
    idempotencyKey: formKey,
    approvalNo: formApproval,
    fingerprint: null,
    source: 'feishu',
    workflowId: `order-${formKey}`,
  });
  const form = orderOf(formApproval, sku, fingerprintOf(formApproval));
  const mapped = {
    fingerprint: form.fingerprint,
    request: { approvedAt: form.approvedAt, order: form.order, totalAmount: form.totalAmount },
  };
  assert.equal((await recordMappedOrder(app, formKey, mapped)).fingerprint, mapped.fingerprint);
  const failedRun = {
    idempotencyKey: formKey,
    orderRunId: `run-${randomBytes(4).toString('hex')}`,
    reasonType: 'InsufficientStock',
    reason: 'the role test',
    attempts: 3,
    orderLanded: false,
    releasedLines: 0,
  };
  await recordCompensation(app, failedRun);
  await recordCompensation(app, failedRun);
  assert.equal(
    (await transitionStatus(app, formKey, 'COMPENSATING', { attempts: 3, lastError: 'x' }, log)).applied,
    true,
  );
  const decision = { idempotencyKey: formKey, orderRunId: failedRun.orderRunId, decision: 'abandon' as const };
  assert.equal(await recordCompensationDecision(app, { ...decision, decidedBy: 'operator' }), true);
  assert.equal(await recordCompensationDecision(app, { ...decision, decidedBy: 'another' }), false);
  assert.equal((await transitionStatus(app, formKey, 'COMPENSATED', {}, log)).applied, true);

  // A delivery through another door: refused twice (counted), cleared, refused again (reopened).
  const conflict = { idempotencyKey: key, door: 'mcp' as const, claimedBy: 'webhook' as const, fingerprint: null };
  await recordKeySourceConflict(app, conflict);
  await recordKeySourceConflict(app, conflict);
  assert.equal(await clearKeySourceConflicts(app, { idempotencyKey: key, clearedBy: 'operator' }), 1);
  await recordKeySourceConflict(app, conflict);

  // The approval revoked in its OA after the order: its event once, its alert once.
  const event = {
    vendor: 'feishu' as const,
    eventId: `evt-${randomBytes(6).toString('hex')}`,
    eventType: 'approval_instance',
    instanceId: approvalNo,
    status: 'REVOKED' as const,
    idempotencyKey: key,
  };
  assert.equal(await recordOaEvent(app, event), true);
  assert.equal(await recordOaEvent(app, event), false, 'a redelivered event is recorded once');
  assert.ok(await recordRevocationAlert(app, key));

  // The approval's receipt: found among those still to post until it settles, recorded once.
  const toPost = async () =>
    (await receiptsToPost(app, { vendors: ['webhook'], since: new Date(0), limit: 1_000 })).map(
      (each) => each.idempotencyKey,
    );
  assert.ok((await toPost()).includes(key), 'its receipt is still to post');
  const receipt = { vendor: 'webhook', idempotencyKey: key, instanceId: approvalNo, orderNo: 'SO-ROLE' };
  assert.equal(await recordReceipt(app, receipt, { status: 'POSTED', postedId: 'comment-1' }), true);
  assert.equal(await recordReceipt(app, receipt, { status: 'FAILED', failure: 'x' }), false, 'the first stands');
  assert.ok(!(await toPost()).includes(key), 'settled, it is no longer');
  assert.equal(await recordRevocationAlert(app, key), undefined);

  // The duplicate scan: a document under two keys (a new alert), then three (grown); two runs of
  // identical orders 18 minutes apart (two alerts, the window is 10), then an order between them
  // (one run: the alerts merge).
  const scan = () => scanForDuplicates(app, { lookbackMinutes: 60, nearWindowMinutes: 10 });
  const document = uniqueApprovalNo('ROLE-DOC');
  const write = (newOrder: NewOrder) => app.$transaction((tx) => insertOrderWithReservation(tx, newOrder));
  for (const n of [1, 2]) await write(orderOf(document, sku, fingerprintOf(`${document}${n}`), `DOC:${document}:${n}`));
  assert.ok((await scan()).newAlerts >= 1);
  await write(orderOf(document, sku, fingerprintOf(`${document}3`), `DOC:${document}:3`));
  const twin = fingerprintOf(`twin-${document}`);
  const twins = async (minutesAgo: number, count: number) => {
    for (let n = 0; n < count; n += 1) {
      const written = await write(orderOf(uniqueApprovalNo('ROLE-TWIN'), sku, twin));
      await owner.orderMain.update({
        where: { idempotentKey: written.order.idempotencyKey },
        data: { createdAt: new Date(Date.now() - minutesAgo * 60_000) },
      });
    }
  };
  await twins(18, 2);
  await twins(0, 2);
  const separate = await scan();
  assert.ok(separate.grownAlerts >= 1 && separate.newAlerts >= 2, JSON.stringify(separate));
  await twins(9, 1);
  assert.ok((await scan()).grownAlerts >= 1);
  const merged = await app.duplicateAlert.count({ where: { clusterKey: twin, supersededBy: { not: null } } });
  assert.equal(merged, 1, 'the later run of twins is merged into the earlier one');

  // The retention purge: the delivered key's record goes, its order keeps what it reached.
  const purge = await purgeExpiredRecords(app, { retentionDays: 0, dryRun: false });
  assert.ok(purge.purged >= 1, JSON.stringify(purge));
  assert.equal(await findRecord(app, key), undefined);
  assert.equal(await statusAtPurge(app, key), 'DELIVERED');
  const kept = await app.orderMain.findUnique({ where: { idempotentKey: key }, select: { sourceAtPurge: true } });
  assert.ok(kept?.sourceAtPurge, 'and the door that claimed it');
  assert.ok(await findOrderByKey(app, key));
}

/**
 * Migrates as the owner and grants as an administrator does after every migration, then opens a
 * client as the application role and one as the owner (closed first among `stops`).
 */
async function migratedAndGranted(
  roles: DatabaseRoles,
  stops: (() => Promise<void>)[],
): Promise<{ app: PrismaClient; owner: PrismaClient }> {
  await migrate(roles.ownerUrl);
  await roles.grantAfterMigration();
  const app = createPrismaClient({ databaseUrl: roles.appUrl, poolSize: 2, statementTimeoutMs: 5_000 });
  const owner = createPrismaClient({ databaseUrl: roles.ownerUrl, poolSize: 1, statementTimeoutMs: 5_000 });
  stops.unshift(
    () => app.$disconnect(),
    () => owner.$disconnect(),
  );
  return { app, owner };
}

/** A change the application role must not make, and the statement that tries it. */
interface Forbidden {
  what: string;
  sql: string;
}

/**
 * Every change outside the lists above, on the tables and columns the catalogue names: an UPDATE
 * of each column, a DELETE and an INSERT of each table, and (PostgreSQL) a TRUNCATE.
 */
function forbiddenChanges(
  columns: { table: string; column: string }[],
  mayUpdate: Record<string, string[]>,
  quote: (name: string) => string,
  emptyInsert: string,
  truncate: boolean,
): Forbidden[] {
  const tables = [...new Set(columns.map((column) => column.table))].sort();
  return [
    ...columns
      .filter(({ table, column }) => !(mayUpdate[table] ?? []).includes(column))
      .map(({ table, column }) => ({
        what: `UPDATE ${table}.${column}`,
        sql: `UPDATE ${quote(table)} SET ${quote(column)} = ${quote(column)}`,
      })),
    ...tables
      .filter((table) => !MAY_DELETE.includes(table))
      .map((table) => ({ what: `DELETE ${table}`, sql: `DELETE FROM ${quote(table)}` })),
    ...tables
      .filter((table) => !MAY_INSERT.includes(table))
      .map((table) => ({ what: `INSERT ${table}`, sql: `INSERT INTO ${quote(table)} ${emptyInsert}` })),
    ...(truncate ? tables.map((table) => ({ what: `TRUNCATE ${table}`, sql: `TRUNCATE ${quote(table)}` })) : []),
  ];
}

/** Runs each forbidden change; the ones not refused with a permission error, with what happened. */
async function notRefused(
  changes: Forbidden[],
  run: (sql: string) => Promise<unknown>,
  isPermissionError: (error: unknown) => boolean,
): Promise<string[]> {
  const allowed: string[] = [];
  for (const change of changes) {
    try {
      await run(change.sql);
      allowed.push(`${change.what}: ran`);
    } catch (error) {
      if (!isPermissionError(error)) allowed.push(`${change.what}: ${(error as Error).message}`);
    }
  }
  return allowed;
}

/** The tables every migration made must each be in the list tried (a new one is covered too). */
const EXPECTED_TABLES = [
  '_prisma_migrations',
  'approval_receipt',
  'compensation_record',
  'duplicate_alert',
  'idempotency_record',
  'inventory',
  'key_source_conflict',
  'oa_event',
  'order_line',
  'order_main',
  'stock_reservation',
];

describe('deploy/database/postgresql-roles.sql: the application role changes what the product changes, nothing else', () => {
  const stops: (() => Promise<void>)[] = [];
  let roles: DatabaseRoles;
  let app: PrismaClient;
  let owner: PrismaClient;

  before(async () => {
    roles = await rolesOf(stackEnv().databaseUrl, stops);
    ({ app, owner } = await migratedAndGranted(roles, stops));
  });
  after(async () => {
    for (const stop of stops) await stop();
  });

  it('runs every write path of the product as the application role', async () => {
    await runProductPaths(app, owner);
  });

  it('refuses every other UPDATE, DELETE, INSERT and TRUNCATE on every table, a permission error each', async () => {
    const client = new pg.Client({ connectionString: roles.appUrl });
    await client.connect();
    try {
      const { rows: columns } = await client.query<{ table: string; column: string }>(
        `SELECT table_name AS table, column_name AS column FROM information_schema.columns
         WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
      );
      assert.deepEqual([...new Set(columns.map((column) => column.table))].sort(), EXPECTED_TABLES);
      const changes = forbiddenChanges(columns, MAY_UPDATE, (name) => `"${name}"`, 'DEFAULT VALUES', true);
      assert.ok(changes.length > 80, `${changes.length} changes tried`);
      const allowed = await notRefused(
        changes,
        (sql) => client.query(sql),
        (error) => (error as { code?: string }).code === '42501',
      );
      assert.deepEqual(allowed, [], 'each is refused for want of the right');
    } finally {
      await client.end();
    }
  });
});

describe('deploy/database/mysql-roles.sql: the application user changes what the product changes, nothing else', () => {
  const server = mysqlForSuite();
  const stops: (() => Promise<void>)[] = [];
  let roles: DatabaseRoles;
  let app: PrismaClient;
  let owner: PrismaClient;

  before(async () => {
    if (!server.reachable()) return;
    roles = await mysqlRolesOf(MYSQL_TEST_URL, stops);
    ({ app, owner } = await migratedAndGranted(roles, stops));
  });
  after(async () => {
    for (const stop of stops) await stop();
  });

  it('runs every write path of the product as the application user', async () => {
    await runProductPaths(app, owner);
  });

  it('refuses every other UPDATE, DELETE and INSERT on every table, a permission error each', async () => {
    const connection = await mariadb.createConnection(mysqlConnection(roles.appUrl));
    try {
      const columns = await connection.query<{ table: string; column: string }[]>(
        `SELECT TABLE_NAME AS \`table\`, COLUMN_NAME AS \`column\` FROM information_schema.COLUMNS
         WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, ORDINAL_POSITION`,
      );
      assert.deepEqual([...new Set(columns.map((column) => column.table))].sort(), EXPECTED_TABLES);
      const changes = forbiddenChanges(columns, MYSQL_MAY_UPDATE, (name) => `\`${name}\``, '() VALUES ()', false);
      assert.ok(changes.length > 70, `${changes.length} changes tried`);
      // 1142: the table's right is missing; 1143: the column's.
      const allowed = await notRefused(
        changes,
        (sql) => connection.query(sql),
        (error) => [1142, 1143].includes((error as { errno?: number }).errno ?? 0),
      );
      assert.deepEqual(allowed, [], 'each is refused for want of the right');
    } finally {
      await connection.end();
    }
  });
});
