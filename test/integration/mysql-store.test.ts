// The order store on MySQL/MariaDB keeps the promises it keeps on PostgreSQL: one order per key
// however many deliveries race, exactly one of them answered 202, stock exact under concurrent
// orders, and keys compared byte for byte — `a1` and `A1` are two approvals. A key column that does
// not compare bytes stops the service at start. Runs against the MariaDB at MYSQL_TEST_URL, on a
// database of its own, with the real start path, worker and Temporal dev server.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import fc from 'fast-check';
import mariadb from 'mariadb';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createEventLedger, parseOrderCreatedEvent, type ReceivedEvent } from '../../examples/consumer/apply-once.js';
import { ledgerStatements, openLedgerPool } from '../../examples/consumer/ledger-stores.js';
import { idempotencyKeyFor, type KeySource, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { ConfigError } from '../../services/config/environment.js';
import { prepareDatabase } from '../../services/db/database-at-start.js';
import { checkKeyColumns, KEY_COLUMN_NAMES } from '../../services/db/key-columns.js';
import { migrate } from '../../services/db/migrate.js';
import { scanForDuplicates } from '../../services/db/duplicate-scan.js';
import { claimRecord, findRecord } from '../../services/db/idempotency-records.js';
import { findOrderByKey, insertOrderWithReservation, type NewOrder } from '../../services/db/order-repository.js';
import { recordOaEvent } from '../../services/db/oa-events.js';
import { purgeExpiredRecords } from '../../services/db/retention.js';
import { recordRevocationAlert } from '../../services/db/revocation-alerts.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { mysqlConnection } from '../../services/db/stores/mysql-connection.js';
import { statementsFor } from '../../services/db/stores/store.js';
import { MYSQL_TEST_URL, mysqlForSuite, onMysqlServer } from '../../tools/harness/mysql.js';
import { mysqlRolesOf } from '../../tools/harness/database-roles.js';
import { migrationsWith } from '../../tools/harness/migrations-with.js';
import { assertDoorShapeChecked } from '../../tools/harness/door-shape.js';
import { orderEvent } from '../../tools/harness/forged-events.js';
import { answerOf, MCP_STDIO_ARGS } from '../../tools/harness/mcp-clients.js';
import { cliInProcess } from '../../tools/harness/operator-cli.js';
import { apiProcess, processEnv } from '../../tools/harness/processes.js';
import { mysqlSchemaDrift, readSchemaDmmf } from '../../tools/harness/schema-drift.js';
import { startTcpProxy } from '../../tools/harness/tcp-proxy.js';
import {
  approval,
  createSku,
  eventually,
  orderCount,
  postApproval,
  startTestService,
  stockOf,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const SCHEMA = fileURLToPath(new URL('../../prisma/mysql/schema.prisma', import.meta.url));

/** An order of one line on `sku`, written straight through the repository (no workflow). */
function orderOf(approvalNo: string, sku: string, quantity = 1): NewOrder {
  return {
    idempotencyKey: idempotencyKeyFor(approvalNo, 'MAIN'),
    approvalNo,
    operation: 'MAIN',
    approvedAt: '2026-12-05T08:00:00Z',
    fingerprint: 'e'.repeat(64),
    order: { customerId: 'CUST-M', currency: 'CNY', lines: [{ sku, quantity, unitPrice: '3.2500' }] },
    totalAmount: (3.25 * quantity).toFixed(4),
    writtenAttempt: 1,
  };
}

function write(prisma: PrismaClient, order: NewOrder) {
  return prisma.$transaction((tx) => insertOrderWithReservation(tx, order));
}

/**
 * The property: for generated approval numbers, the lower- and upper-case spellings are two keys
 * and get two orders, each its own.
 */
async function caseVariantsAreTwoOrders(prisma: PrismaClient, runs: number): Promise<void> {
  const sku = await createSku(prisma, 10_000);
  const stem = fc.stringMatching(/^[a-z][a-z0-9]{2,12}$/);
  await fc.assert(
    fc.asyncProperty(stem, async (body) => {
      const unique = uniqueApprovalNo('c').toLowerCase();
      const lower = `${unique}-${body}`;
      const upper = lower.toUpperCase();
      const [a, b] = [await write(prisma, orderOf(lower, sku)), await write(prisma, orderOf(upper, sku))];
      assert.notEqual(a.order.orderNo, b.order.orderNo);
      assert.equal((await findOrderByKey(prisma, idempotencyKeyFor(lower, 'MAIN')))?.orderNo, a.order.orderNo);
      assert.equal((await findOrderByKey(prisma, idempotencyKeyFor(upper, 'MAIN')))?.orderNo, b.order.orderNo);
    }),
    { numRuns: runs },
  );
}

describe('the order store on MySQL/MariaDB', () => {
  const server = mysqlForSuite();
  let service: TestService;
  let databaseUrl: string;
  /** A database whose order key column compares case-insensitively, as the server's default would. */
  let caseBlindUrl: string;
  let caseBlind: PrismaClient;

  before(async () => {
    if (!server.reachable()) return;
    databaseUrl = await server.database();
    assert.ok((await migrate(databaseUrl)).length > 0, 'a new database gets every migration');
    service = await startTestService({ config: testConfig({ DATABASE_URL: databaseUrl }) });
    caseBlindUrl = await server.database();
    await migrate(caseBlindUrl);
    await onMysqlServer(
      caseBlindUrl,
      `ALTER TABLE order_main
         MODIFY idempotent_key VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL`,
    );
    caseBlind = createPrismaClient({ databaseUrl: caseBlindUrl, poolSize: 4, statementTimeoutMs: 5_000 });
  });
  after(async () => {
    await caseBlind?.$disconnect();
    await service?.stop();
  });

  it('applies its migrations once, and every key column compares bytes (ascii_bin)', async () => {
    assert.deepEqual(await migrate(databaseUrl), [], 'a second run applies nothing');
    const columns = await statementsFor(service.prisma).textColumns(service.prisma, KEY_COLUMN_NAMES);
    assert.ok(columns.length >= 8, `key columns found: ${columns.map((c) => `${c.table}.${c.column}`).join(', ')}`);
    for (const column of columns) {
      assert.deepEqual([column.charset, column.collation], ['ascii', 'ascii_bin'], `${column.table}.${column.column}`);
    }
    await checkKeyColumns(service.prisma);
  });

  it('its migrations leave the database exactly as prisma/mysql/schema.prisma describes it, and a disagreement is reported', async () => {
    const db = await mariadb.createConnection(mysqlConnection(databaseUrl));
    try {
      assert.deepEqual(await mysqlSchemaDrift(db, await readSchemaDmmf(SCHEMA)), []);
      const edited = readFileSync(SCHEMA, 'utf8')
        .replace('@map("idempotent_key") @db.VarChar(128)', '@map("idempotent_key") @db.VarChar(64)')
        .replace(
          '  currency       String      @db.Char(3)\n',
          '  currency       String      @db.Char(3)\n  region String?\n',
        );
      const problems = await mysqlSchemaDrift(db, await readSchemaDmmf(SCHEMA, edited));
      assert.ok(
        problems.includes('order_main.idempotent_key: schema.prisma says varchar(64), the database has varchar(128)'),
        problems.join('\n'),
      );
      assert.ok(problems.includes('order_main.region: in schema.prisma, missing in the database'), problems.join('\n'));
    } finally {
      await db.end();
    }
  });

  it('a door is checked by its shape, not by a list: a name is taken where a door is named exactly when it fits (generated)', async () => {
    await assertDoorShapeChecked(service.prisma);
  });

  it('keeps keys that differ only in case apart: two approvals, two orders (generated)', async () => {
    await caseVariantsAreTwoOrders(service.prisma, 25);
  });

  it('the same property fails on a key column with the server default collation (the check can fail)', async () => {
    await assert.rejects(caseVariantsAreTwoOrders(caseBlind, 5), (error: Error) =>
      String(error.cause).includes("for key 'uk_order_idempotent'"),
    );
  });

  it('refuses to start on a key column that does not compare bytes, naming table, column, charset and collation', async () => {
    await assert.rejects(checkKeyColumns(caseBlind), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(
        error.message,
        /order_main\.idempotent_key \(charset utf8mb4, collation utf8mb4_general_ci\): a key column must compare bytes/,
      );
      assert.equal(error.problems.length, 1, 'only the altered column is named');
      return true;
    });
    const api = await apiProcess('api-case-blind', processEnv(service.config, { DATABASE_URL: caseBlindUrl }));
    await assert.rejects(api.start(), /exited during start-up/);
    assert.match(api.output(), /order_main\.idempotent_key \(charset utf8mb4, collation utf8mb4_general_ci\)/);
  });

  it(
    'a migration that waits for a table lock past MIGRATION_LOCK_TIMEOUT_MS fails naming the wait',
    // Without the lock timeout it would wait for the server's own (a year, by default).
    { timeout: 60_000 },
    async () => {
      const url = await server.database();
      await migrate(url);
      const { dir, remove } = migrationsWith('mysql', 'lock_probe', 'ALTER TABLE inventory ADD COLUMN lock_probe INT;');
      // A transaction that has read the table holds its metadata lock, which ALTER TABLE waits for.
      const holder = await mariadb.createConnection(mysqlConnection(url));
      try {
        await holder.query('START TRANSACTION');
        await holder.query('SELECT * FROM inventory LIMIT 1');
        await assert.rejects(
          migrate(url, { dir, lockTimeoutMs: 1_000 }),
          /migration 29991231000000_lock_probe waited 1000 ms for a lock another transaction holds \(MIGRATION_LOCK_TIMEOUT_MS\)/,
        );
      } finally {
        await holder.query('ROLLBACK');
        await holder.end();
        remove();
      }
    },
  );

  it("refuses latin1 even with a binary collation: the report's pitfall", async () => {
    const url = await server.database();
    await migrate(url);
    await onMysqlServer(
      url,
      `ALTER TABLE idempotency_record
         MODIFY idempotent_key VARCHAR(128) CHARACTER SET latin1 COLLATE latin1_bin NOT NULL`,
    );
    const prisma = createPrismaClient({ databaseUrl: url, poolSize: 1, statementTimeoutMs: 5_000 });
    try {
      await assert.rejects(
        checkKeyColumns(prisma),
        /idempotency_record\.idempotent_key \(charset latin1, collation latin1_bin\): a key column must not be latin1/,
      );
    } finally {
      await prisma.$disconnect();
    }
  });

  it('concurrent deliveries of a fresh key: one order, exactly one first answer (generated)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 6 }), fc.integer({ min: 1, max: 4 }), async (deliveries, quantity) => {
        const approvalNo = uniqueApprovalNo('MY');
        const key = idempotencyKeyFor(approvalNo, 'MAIN');
        const sku = await createSku(service.prisma, 50);
        const body = approval(approvalNo, sku, {
          order: { customerId: 'CUST-M', currency: 'CNY', lines: [{ sku, quantity, unitPrice: '1.00' }] },
        });
        const answers = await Promise.all(Array.from({ length: deliveries }, () => postApproval(service, body)));
        const statuses = answers.map((answer) => answer.statusCode).sort();
        assert.deepEqual(statuses, [...Array<number>(deliveries - 1).fill(200), 202].sort(), answers[0]?.body);
        await eventually(`the order of ${key}`, async () =>
          (await orderCount(service.prisma, key)) === 1 ? true : undefined,
        );
        const record = await eventually(`${key} settled`, async () => {
          const row = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
          return row && ['SUBMITTED', 'DELIVERED'].includes(row.status) ? row : undefined;
        });
        assert.ok(record.firstDeliveryAt, 'the one first answer is recorded');
        assert.equal(await orderCount(service.prisma, key), 1);
        assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 50, reserved: quantity });
      }),
      { numRuns: 6 },
    );
  });

  it('concurrent orders sharing SKUs keep stock exact and never reserve past it', async () => {
    const [a, b] = [await createSku(service.prisma, 7), await createSku(service.prisma, 7)];
    const orders = Array.from({ length: 12 }, (_, index) => {
      const order = orderOf(uniqueApprovalNo('S'), index % 2 ? a : b);
      // Each order takes one of each SKU, named in either order: the write locks them in byte order.
      const other = index % 2 ? b : a;
      order.order.lines.push({ sku: other, quantity: 1, unitPrice: '1.0000' });
      return order;
    });
    const results = await Promise.allSettled(orders.map((order) => write(service.prisma, order)));
    const written = results.filter((result) => result.status === 'fulfilled').length;
    for (const result of results) {
      if (result.status === 'rejected')
        assert.match(String(result.reason), /^InsufficientStockError: insufficient stock/);
    }
    assert.equal(written, 7, 'as many orders as the stock holds');
    assert.deepEqual(await stockOf(service.prisma, a), { onHand: 7, reserved: 7 });
    assert.deepEqual(await stockOf(service.prisma, b), { onHand: 7, reserved: 7 });
  });

  it('an order takes the stock of every SKU or of none, moves its key only when written, and a refusal names the first SKU short or unknown (generated)', async () => {
    // Mostly known SKUs with the stock, so that orders of several SKUs are written as often as refused.
    const line = fc.record({
      quantity: fc.integer({ min: 1, max: 4 }),
      spare: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 3 }), weight: 3 },
        { arbitrary: fc.integer({ min: -4, max: -1 }), weight: 1 },
      ),
      known: fc.oneof({ arbitrary: fc.constant(true), weight: 5 }, { arbitrary: fc.constant(false), weight: 1 }),
    });
    const outcomes = { written: 0, writtenWithSeveral: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(line, { minLength: 1, maxLength: 4 }), async (wanted) => {
        const lines = await Promise.all(
          wanted.map(async ({ quantity, spare, known }) => {
            const onHand = Math.max(0, quantity + spare);
            // An unknown SKU is named as a known one is, so it may sort anywhere among them.
            const sku = known ? await createSku(service.prisma, onHand) : `SKU-T-${randomBytes(5).toString('hex')}`;
            return { sku, quantity, onHand, known };
          }),
        );
        const approvalNo = uniqueApprovalNo('R');
        const order = orderOf(approvalNo, '');
        order.order.lines = lines.map(({ sku, quantity }) => ({ sku, quantity, unitPrice: '1.0000' }));
        await claimRecord(service.prisma, {
          idempotencyKey: order.idempotencyKey,
          approvalNo,
          operation: 'MAIN',
          fingerprint: order.fingerprint,
          request: null,
          source: 'webhook',
          workflowId: orderWorkflowIdFor(order.idempotencyKey),
        });
        const outcome = await service.prisma
          .$transaction((tx) =>
            insertOrderWithReservation(tx, order, { status: 'SUBMITTED', attempts: 1, lastError: null }),
          )
          .then(
            (written) => written,
            (error: unknown) => String(error),
          );
        const byName = [...lines].sort((x, y) => (x.sku < y.sku ? -1 : 1));
        const firstShort = byName.find(({ known, onHand, quantity }) => !known || onHand < quantity);
        if (!firstShort) {
          assert.notEqual(typeof outcome, 'string', `every SKU had the stock, yet: ${JSON.stringify(outcome)}`);
          assert.deepEqual(
            typeof outcome === 'object' && [outcome.recordChange?.from_status, outcome.recordChange?.applied],
            ['RECEIVED', true],
          );
        } else if (!firstShort.known) {
          assert.equal(outcome, `UnknownSkuError: unknown SKU ${firstShort.sku}`);
        } else {
          assert.equal(
            outcome,
            `InsufficientStockError: insufficient stock for ${firstShort.sku}: ` +
              `requested ${firstShort.quantity}, available ${firstShort.onHand}`,
          );
        }
        for (const { sku, known, onHand, quantity } of byName) {
          if (known)
            assert.deepEqual(await stockOf(service.prisma, sku), { onHand, reserved: firstShort ? 0 : quantity }, sku);
        }
        const reservations = await service.prisma.stockReservation.findMany({
          where: { idempotentKey: order.idempotencyKey },
          orderBy: { sku: 'asc' },
        });
        assert.deepEqual(
          reservations.map(({ sku, quantity }) => ({ sku, quantity })),
          firstShort ? [] : byName.map(({ sku, quantity }) => ({ sku, quantity })),
        );
        const stored = await findOrderByKey(service.prisma, order.idempotencyKey);
        assert.equal(stored === undefined, !!firstShort);
        if (stored) {
          const day = stored.createdAt.toISOString().slice(0, 10).replaceAll('-', '');
          assert.equal(stored.orderNo, `SO-${day}-${stored.orderId.padStart(8, '0')}`);
          assert.equal(
            typeof outcome === 'object' && outcome.order.orderNo,
            stored.orderNo,
            'the number answered is stored',
          );
        }
        const record = await findRecord(service.prisma, order.idempotencyKey);
        assert.equal(record?.status, firstShort ? 'RECEIVED' : 'SUBMITTED', 'the key moves with its order only');
        assert.equal(record?.attempts, firstShort ? 0 : 1, 'the attempts move with the order only');
        if (!firstShort) outcomes.written += 1;
        if (!firstShort && lines.length > 1) outcomes.writtenWithSeveral += 1;
        if (firstShort) outcomes.refused += 1;
      }),
      {
        numRuns: 30,
        // Always among the cases: three SKUs each taking a different quantity, the whole stock of each;
        // and two SKUs, one of them unknown.
        examples: [
          [
            [
              { quantity: 1, spare: 0, known: true },
              { quantity: 2, spare: 0, known: true },
              { quantity: 3, spare: 0, known: true },
            ],
          ],
          [
            [
              { quantity: 2, spare: 1, known: true },
              { quantity: 1, spare: 0, known: false },
            ],
          ],
        ],
      },
    );
    assert.ok(outcomes.writtenWithSeveral > 0 && outcomes.refused > 0, JSON.stringify(outcomes));
  });

  it('the duplicate scan finds a document under two keys and a run of near-identical orders, records each once and grows it', async () => {
    const { prisma } = service;
    const sku = await createSku(prisma, 1_000);
    const approvalNo = uniqueApprovalNo('DS');
    const order = orderOf(approvalNo, sku);
    const first = await write(prisma, order);
    // The same approval and operation under a key made elsewhere.
    const planted = await write(prisma, { ...order, idempotencyKey: `${order.idempotencyKey}#retry-2` });
    // Three approvals of one customer and lines, written one after another: a near-identical run.
    const fingerprint = randomBytes(32).toString('hex');
    const twin = (no: string) => ({ ...orderOf(no, sku), fingerprint });
    const run = [];
    for (let n = 0; n < 3; n += 1) run.push((await write(prisma, twin(uniqueApprovalNo('NI')))).order.orderNo);

    const options = { lookbackMinutes: 60, nearWindowMinutes: 10 };
    const scan = await scanForDuplicates(prisma, options);
    const alerts = await prisma.duplicateAlert.findMany({ where: { supersededBy: null } });
    const sameDocument = alerts.filter((alert) => alert.approvalNo === approvalNo);
    assert.equal(sameDocument.length, 1);
    assert.equal(sameDocument[0]?.kind, 'SAME_DOCUMENT');
    assert.deepEqual(sameDocument[0]?.orderNos, [first.order.orderNo, planted.order.orderNo].sort());
    assert.deepEqual(
      new Set(sameDocument[0]?.idempotentKeys),
      new Set([order.idempotencyKey, planted.order.idempotencyKey]),
    );
    const near = alerts.filter((alert) => alert.kind === 'NEAR_IDENTICAL' && alert.clusterKey === fingerprint);
    assert.equal(near.length, 1);
    assert.deepEqual(near[0]?.orderNos, [...run].sort());
    assert.ok(scan.newAlertIds.includes(String(sameDocument[0]?.id)) && scan.newAlertIds.includes(String(near[0]?.id)));

    const again = await scanForDuplicates(prisma, options);
    assert.ok(!again.newAlertIds.includes(String(near[0]?.id)), 'found again, recorded once');
    run.push((await write(prisma, twin(uniqueApprovalNo('NI')))).order.orderNo);
    const grown = await scanForDuplicates(prisma, options);
    assert.ok(grown.grownAlerts >= 1, JSON.stringify(grown));
    const after = await prisma.duplicateAlert.findUniqueOrThrow({ where: { id: near[0]?.id } });
    assert.deepEqual([after.orderCount, after.orderNos], [4, [...run].sort()]);
  });

  it('the retention purge removes expired settled records, keeps the unanswered and the unsettled, and the order keeps what the key reached and its door', async () => {
    const { prisma } = service;
    const sku = await createSku(prisma, 100);
    const settle = async (prefix: string, status: string, answered: boolean, source: KeySource = 'webhook') => {
      const approvalNo = uniqueApprovalNo(prefix);
      const order = orderOf(approvalNo, sku);
      await claimRecord(prisma, {
        idempotencyKey: order.idempotencyKey,
        approvalNo,
        operation: 'MAIN',
        fingerprint: order.fingerprint,
        request: null,
        source,
        workflowId: `order-${order.idempotencyKey}`,
      });
      if (status !== 'FAILED') await write(prisma, order);
      const old = new Date(Date.now() - 40 * 24 * 3600_000);
      await prisma.idempotencyRecord.update({
        where: { idempotentKey: order.idempotencyKey },
        data: { status, createdAt: old, updatedAt: old, firstDeliveryAt: answered ? old : null },
      });
      return order.idempotencyKey;
    };
    const delivered = await settle('RD', 'DELIVERED', true, 'mcp');
    const submitted = await settle('RS', 'SUBMITTED', true);
    const unanswered = await settle('RU', 'DELIVERED', false);
    const failed = await settle('RF', 'FAILED', true);

    const dry = await purgeExpiredRecords(prisma, { retentionDays: 30, dryRun: true });
    assert.ok(dry.purged >= 2, JSON.stringify(dry));
    const result = await purgeExpiredRecords(prisma, { retentionDays: 30, dryRun: false, batchSize: 1 });
    assert.equal(result.purged, dry.purged, 'the dry run counted what the run purged');
    assert.ok(result.unanswered >= 1 && (result.kept.FAILED ?? 0) >= 1, JSON.stringify(result));
    assert.equal(await findRecord(prisma, delivered), undefined);
    assert.equal(await findRecord(prisma, submitted), undefined);
    assert.ok(await findRecord(prisma, unanswered), 'its sender has not heard its 202 yet');
    assert.ok(await findRecord(prisma, failed), 'waiting for an operator');
    const statuses = await prisma.orderMain.findMany({
      where: { idempotentKey: { in: [delivered, submitted] } },
      select: { idempotentKey: true, statusAtPurge: true, sourceAtPurge: true },
    });
    assert.deepEqual(
      Object.fromEntries(statuses.map((row) => [row.idempotentKey, [row.statusAtPurge, row.sourceAtPurge]])),
      { [delivered]: ['DELIVERED', 'mcp'], [submitted]: ['SUBMITTED', 'webhook'] },
    );
    // A late redelivery finds the order and the door that holds the key, not a new claim.
    const [, approvalNo] = delivered.split(':');
    const claim = await claimRecord(prisma, {
      idempotencyKey: delivered,
      approvalNo: approvalNo as string,
      operation: 'MAIN',
      fingerprint: 'e'.repeat(64),
      request: null,
      source: 'webhook',
      workflowId: `order-${delivered}`,
    });
    assert.deepEqual(
      [claim.record, claim.orderStatusAtPurge, claim.orderSourceAtPurge],
      [undefined, 'DELIVERED', 'mcp'],
    );
  });

  it("a lost COMMIT answer: the write's retry finds the committed order, and the key has one order", async () => {
    // The worker reaches MariaDB through a proxy that, once, lets a COMMIT through and drops its
    // answer, then cuts the connection: the order is committed and the write never hears it.
    const target = new URL(MYSQL_TEST_URL);
    const proxy = await startTcpProxy(`${target.hostname}:${target.port || 3306}`);
    const proxied = new URL(databaseUrl);
    proxied.host = `127.0.0.1:${proxy.port}`;
    const lossy = await startTestService({ config: testConfig({ DATABASE_URL: proxied.toString() }) });
    try {
      const approvalNo = uniqueApprovalNo('LC');
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      const sku = await createSku(lossy.prisma, 10);
      await proxy.setMode({ kind: 'lose-one-answer', containing: 'COMMIT', cutAfterMs: 200 });
      assert.equal((await postApproval(lossy, approval(approvalNo, sku))).statusCode, 202);
      // The committed transaction already set SUBMITTED; the retry that found the order counts itself.
      const record = await eventually(`${key} written and found again by the retry`, async () => {
        const row = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
        return row && row.attempts >= 2 && ['SUBMITTED', 'DELIVERED'].includes(row.status) ? row : undefined;
      });
      assert.equal(proxy.lostAnswers(), 1, 'one COMMIT answer was lost');
      const order = await findOrderByKey(service.prisma, key);
      assert.equal(await orderCount(service.prisma, key), 1);
      assert.equal(order?.writtenAttempt, 1, 'the first attempt committed');
      assert.equal(record.lastError, null);
      // The run goes on from the order it found, to its end.
      await lossy.temporal.workflow.getHandle(orderWorkflowIdFor(key)).result();
      assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 10, reserved: 2 });
    } finally {
      await lossy.stop();
      await proxy.close();
    }
  });

  it('an OA event is recorded once per vendor event id, and a revoked approval with a written order raises one alert', async () => {
    const { prisma } = service;
    const approvalNo = uniqueApprovalNo('RV');
    const order = orderOf(approvalNo, await createSku(prisma, 10));
    await write(prisma, order);
    assert.equal(await recordRevocationAlert(prisma, order.idempotencyKey), undefined, 'no revocation yet');
    const event = {
      vendor: 'feishu' as const,
      eventId: `ev-${approvalNo}`,
      eventType: 'approval_instance',
      instanceId: approvalNo,
      status: 'REVOKED' as const,
      idempotencyKey: order.idempotencyKey,
    };
    assert.equal(await recordOaEvent(prisma, event), true);
    assert.equal(await recordOaEvent(prisma, event), false, 'the same event id again');
    const alert = await recordRevocationAlert(prisma, order.idempotencyKey);
    assert.equal(alert?.kind, 'REVOKED_AFTER_ORDER');
    assert.match(alert?.detail ?? '', new RegExp(`^approval ${approvalNo} was REVOKED in feishu and its order SO-`));
    assert.equal(await recordRevocationAlert(prisma, order.idempotencyKey), undefined, 'one alert per key');
  });

  it("orders-cli works on the MySQL store: a key's status, the keys awaiting an operator, a duplicate scan", async () => {
    const approvalNo = uniqueApprovalNo('CLI');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal(
      (await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)))).statusCode,
      202,
    );
    await eventually(`${key} written`, async () => ((await orderCount(service.prisma, key)) === 1 ? true : undefined));
    const status = await cliInProcess(service, ['status', key, '--json']);
    assert.equal(status.code, 0, status.stderr);
    const shown = JSON.parse(status.stdout) as { status: string; orderNo: string };
    assert.equal(shown.orderNo, (await findOrderByKey(service.prisma, key))?.orderNo);
    const awaiting = await cliInProcess(service, ['awaiting', '--json']);
    assert.equal(awaiting.code, 0, awaiting.stderr);
    // The same approval under a key made elsewhere: the scan finds it, lists it and exits 1.
    const planted = orderOf(approvalNo, await createSku(service.prisma, 10));
    await write(service.prisma, { ...planted, idempotencyKey: `${key}#elsewhere` });
    const scan = await cliInProcess(service, ['scan-duplicates', '--since-hours', '1', '--json']);
    assert.equal(scan.code, 1, scan.stderr);
    const found = JSON.parse(scan.stdout) as { alerts: { kind: string; approvalNo: string | null }[] };
    assert.ok(
      found.alerts.some((alert) => alert.kind === 'SAME_DOCUMENT' && alert.approvalNo === approvalNo),
      scan.stdout,
    );
  });

  it('the MCP stdio server submits an order and reads its status on the MySQL store', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [...MCP_STDIO_ARGS],
      env: { ...processEnv(service.config, { LOG_LEVEL: 'warn' }), PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    });
    const stderr: string[] = [];
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const client = new Client({ name: 'mysql-store-stdio', version: '1.0.0' });
    await client.connect(transport);
    try {
      const approvalNo = uniqueApprovalNo('MCPMY');
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      const body = approval(approvalNo, await createSku(service.prisma, 10));
      const submitted = await answerOf(
        client.callTool({ name: 'submit_approved_order', arguments: body as unknown as Record<string, unknown> }),
      );
      assert.equal(submitted.isError, undefined, `${submitted.text}\n${stderr.join('')}`);
      const order = await eventually(`the order of ${key}`, () => findOrderByKey(service.prisma, key));
      const status = await answerOf(client.callTool({ name: 'get_order_status', arguments: { idempotencyKey: key } }));
      assert.equal(status.structured?.orderNo, order.orderNo, status.text);
      assert.equal(await orderCount(service.prisma, key), 1);
    } finally {
      await client.close();
    }
  });

  it('orders-cli and the MCP stdio server refuse a key column that does not compare bytes, naming it', async () => {
    const named = /order_main\.idempotent_key \(charset utf8mb4, collation utf8mb4_general_ci\)/;
    const refused = await cliInProcess(service, ['status', idempotencyKeyFor('a1', 'MAIN')], {
      DATABASE_URL: caseBlindUrl,
    });
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(refused.stderr, named);
    // Its stdin stays open, as an agent holds it: only a refusal at start ends the process in time.
    const mcp = await new Promise<{ code: number | string | undefined; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        MCP_STDIO_ARGS,
        { env: processEnv(service.config, { DATABASE_URL: caseBlindUrl }), timeout: 60_000 },
        (error, _stdout, stderr) => resolve({ code: error?.killed ? 'killed' : (error?.code ?? 0), stderr }),
      );
    });
    assert.equal(mcp.code, 1, mcp.stderr);
    assert.match(mcp.stderr, named);
  });
  it('deploy/database/mysql-roles.sql: the owner migrates, the application user writes orders and cannot change the schema', async () => {
    const stops: (() => Promise<void>)[] = [];
    try {
      const roles = await mysqlRolesOf(MYSQL_TEST_URL, stops);
      const app = createPrismaClient({ databaseUrl: roles.appUrl, poolSize: 2, statementTimeoutMs: 5_000 });
      stops.unshift(() => app.$disconnect());
      // Not migrated yet: a process that may not migrate refuses, naming what is missing.
      await assert.rejects(
        prepareDatabase({ prisma: app, migrateWith: undefined, log: { info: () => undefined } }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(
            error.message,
            /the database schema is behind this build: \d+ migration\(s\) not applied \(\d+_init/,
          );
          return true;
        },
      );
      await assert.rejects(migrate(roles.appUrl), /CREATE command denied/, 'the application user cannot migrate');
      assert.ok((await migrate(roles.ownerUrl)).length > 0);
      await roles.grantAfterMigration();
      await prepareDatabase({ prisma: app, migrateWith: undefined, log: { info: () => undefined } });
      // Stock is not the application user's to create (test/integration/database-roles.test.ts).
      const owner = createPrismaClient({ databaseUrl: roles.ownerUrl, poolSize: 1, statementTimeoutMs: 5_000 });
      stops.unshift(() => owner.$disconnect());
      const sku = await createSku(owner, 1);
      const written = await write(app, orderOf(uniqueApprovalNo('ROLE'), sku));
      assert.match(written.order.orderNo, /^SO-/);
      await assert.rejects(app.$executeRawUnsafe('CREATE TABLE app_may_not (a INT)'), /CREATE command denied/);
      await assert.rejects(app.$executeRawUnsafe('ALTER TABLE order_main ADD COLUMN x INT'), /ALTER command denied/);
    } finally {
      for (const stop of stops) await stop();
    }
  });
  it("the reference consumer's ledger on MariaDB: twins apply once, a1 and A1 are two events, a case-blind key column stops it", async () => {
    const database = openLedgerPool(MYSQL_TEST_URL, 8);
    const schemas = [`consumer_${randomBytes(4).toString('hex')}`, `consumer_${randomBytes(4).toString('hex')}`];
    const received = (approvalNo: string): ReceivedEvent => {
      const parsed = parseOrderCreatedEvent(JSON.parse(JSON.stringify(orderEvent(approvalNo, 2, '1.50'))));
      assert.ok(parsed.ok);
      return parsed.event;
    };
    try {
      const ledger = createEventLedger({ database, schema: schemas[0] });
      await ledger.migrate();
      await ledger.migrate(); // a second start finds its tables
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 2, max: 6 }), async (twins) => {
          const lower = `${uniqueApprovalNo('ev').toLowerCase()}-a1`;
          const outcomes = await Promise.all([
            ...Array.from({ length: twins }, () => ledger.apply(received(lower))),
            ledger.apply(received(lower.toUpperCase())),
          ]);
          assert.deepEqual(outcomes.filter((outcome) => outcome === 'applied').length, 2, outcomes.join(','));
        }),
        { numRuns: 8 },
      );
      const [counted] = await (database.pool as mariadb.Pool).query<{ n: bigint }[]>(
        `SELECT COUNT(*) AS n FROM \`${schemas[0]}\`.shipment_request`,
      );
      assert.equal(Number(counted?.n), 16, 'one effect per key: 8 runs of a lower- and an upper-case key');
      // A table made beforehand with the server's default collation: the consumer refuses to start.
      await onMysqlServer(MYSQL_TEST_URL, `CREATE DATABASE \`${schemas[1]}\``);
      await onMysqlServer(
        MYSQL_TEST_URL,
        `CREATE TABLE \`${schemas[1]}\`.processed_event (idempotency_key VARCHAR(128) NOT NULL PRIMARY KEY,
           event_id VARCHAR(64) NOT NULL, processed_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3))
         DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_general_ci`,
      );
      await assert.rejects(
        createEventLedger({ database, schema: schemas[1] }).migrate(),
        (error: unknown) =>
          error instanceof ConfigError &&
          /processed_event\.idempotency_key \(charset utf8mb4, collation utf8mb4_general_ci\): a key column must compare bytes/.test(
            error.message,
          ),
      );
    } finally {
      for (const schema of schemas) await onMysqlServer(MYSQL_TEST_URL, `DROP DATABASE IF EXISTS \`${schema}\``);
      await ledgerStatements(database).end();
    }
  });
});
