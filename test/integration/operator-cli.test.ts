// The operator CLI (bin `orders-cli`) against the real stack: decisions reach the compensation
// workflow (resubmit → one order, abandon → COMPENSATED), compensation runs again for a key that
// already ended, the duplicate scan finds an order planted behind the service's back, expired
// records are purged (with --dry-run first), and histories replay against the current code. The
// commands run in this process, through the function the bin runs (`cliInProcess`): the same
// parsing, output and exit codes without a second of process start-up each; one test runs the bin
// as a separate process, as an operator does (its start, its runtime, its exit codes).
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { compensationWorkflowIdFor, idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { eventIdFor } from '../../domain-node/order-event.js';
import { claimRecord, findRecord } from '../../services/db/idempotency-records.js';
import { migrate, readMigrations } from '../../services/db/migrate.js';
import { COMMANDS } from '../../edges/cli/commands/index.js';
import { workflowInputFor } from '../../submission/submit-approval.js';
import { startScriptedDownstream, type ScriptedDownstream } from '../../tools/harness/scripted-downstream.js';
import {
  approval,
  createSku,
  orderCount,
  postApproval,
  stackEnv,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';
import { cli, cliInProcess, type CliRun } from '../../tools/harness/operator-cli.js';

/** One row of `orders-cli awaiting --json`. */
interface AwaitingRow {
  idempotencyKey: string;
  workflowId: string;
  status: string;
  nextActions: string[];
  reason: string;
}

async function awaitingRow(service: TestService, key: string): Promise<AwaitingRow | undefined> {
  const run = await cliInProcess(service, ['awaiting', '--json', '--limit', '1000']);
  assert.equal(run.code, 0, run.stderr);
  return json<AwaitingRow[]>(run).find((row) => row.idempotencyKey === key);
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = path.join(ROOT, 'test/replay/histories/first-delivery.1.orderWorkflow.json');

function json<T>(run: CliRun): T {
  return JSON.parse(run.stdout) as T;
}

/** An approval written through the front door: SUBMITTED, one order. */
async function submittedApproval(service: TestService, prefix: string) {
  const approvalNo = uniqueApprovalNo(prefix);
  const key = idempotencyKeyFor(approvalNo, 'MAIN');
  assert.equal(
    (await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)))).statusCode,
    202,
  );
  await statusReaches(service, key, 'SUBMITTED');
  return { approvalNo, key };
}

/** An approval whose write fails for good (not enough stock): it waits in COMPENSATING. */
async function failedWrite(service: TestService, prefix: string) {
  const approvalNo = uniqueApprovalNo(prefix);
  const key = idempotencyKeyFor(approvalNo, 'MAIN');
  const sku = await createSku(service.prisma, 1);
  assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);
  await statusReaches(service, key, 'COMPENSATING');
  return { key, sku };
}

describe('operator CLI (orders-cli)', () => {
  let service: TestService;

  before(async () => {
    service = await startTestService();
  });
  after(() => service.stop());

  it('every command has --help (exit 0); bad arguments exit 2', async () => {
    // Independent invocations, all at once.
    const [overview, helps, usageErrors] = await Promise.all([
      cliInProcess(service, ['--help']),
      Promise.all(COMMANDS.map((command) => cliInProcess(service, [command.name, '--help']))),
      Promise.all(
        [
          ['frobnicate'],
          ['status', 'not-a-key'],
          ['list', '--status', 'LOST'],
          ['purge-expired', '--retention-days', 'soon'],
        ].map((args) => cliInProcess(service, args)),
      ),
    ]);
    assert.equal(overview.code, 0);
    for (const [index, command] of COMMANDS.entries()) {
      assert.match(overview.stdout, new RegExp(`\\b${command.name}\\b`));
      assert.equal(helps[index]!.code, 0, `${command.name} --help`);
      assert.match(helps[index]!.stdout, new RegExp(`usage: orders-cli ${command.name}`));
    }
    assert.deepEqual(
      usageErrors.map((run) => run.code),
      [2, 2, 2, 2],
    );
  });

  it('the bin as a process: --help exits 0, a replay prints JSON alone on stdout and exits 0, a missing key exits 1, an unknown command 2', async () => {
    // Independent invocations, all at once: each is a process of its own.
    const missingKey = idempotencyKeyFor(uniqueApprovalNo('CLIPROC'), 'MAIN');
    const [overview, replay, missing, unknown] = await Promise.all([
      cli(service, ['--help']),
      // A replay worker runs in the process: the Temporal runtime's log stays off stdout, and the
      // process still exits once the command is done.
      cli(service, ['replay', FIXTURE, '--json']),
      // Reaches the service's database through the environment alone.
      cli(service, ['status', missingKey, '--json']),
      cli(service, ['frobnicate']),
    ]);
    assert.equal(overview.code, 0, overview.stderr);
    for (const command of COMMANDS) assert.match(overview.stdout, new RegExp(`\\b${command.name}\\b`));
    assert.equal(replay.code, 0, replay.stderr);
    assert.deepEqual(
      json<{ ok: boolean }[]>(replay).map((outcome) => outcome.ok),
      [true],
    );
    assert.equal(missing.code, 1, missing.stderr);
    assert.deepEqual(json<{ idempotencyKey: string; found: boolean }>(missing), {
      idempotencyKey: missingKey,
      found: false,
    });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown command: frobnicate/);
  });

  it('awaiting lists a failed write; resubmit after the fix writes exactly one order; a second decision is refused', async () => {
    const { key, sku } = await failedWrite(service, 'CLIRESUB');
    const waiting = await awaitingRow(service, key);
    assert.equal(waiting?.status, 'COMPENSATING');
    assert.deepEqual(waiting.nextActions, ['resubmit', 'abandon']);

    await service.prisma.inventory.update({ where: { sku }, data: { onHand: 10 } });
    const resubmit = await cliInProcess(service, ['resubmit', key, '--by', 'alice']);
    assert.equal(resubmit.code, 0, resubmit.stderr);
    assert.match(resubmit.stdout, /resubmit: .* is now RECEIVED/);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);

    const again = await cliInProcess(service, ['resubmit', key]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no decision is pending/);
    assert.equal(await orderCount(service.prisma, key), 1);

    const status = json<{ status: string; orderNo: string }>(await cliInProcess(service, ['status', key, '--json']));
    assert.equal(status.status, 'SUBMITTED');
    assert.ok(status.orderNo);
    const decision = await service.prisma.compensationRecord.findFirst({ where: { idempotentKey: key } });
    assert.equal(decision?.decidedBy, 'alice');
  });

  it('abandon ends the order as COMPENSATED; re-running its compensation keeps it abandoned', async () => {
    const { key } = await failedWrite(service, 'CLIABAN');
    const abandon = await cliInProcess(service, ['abandon', key]);
    assert.equal(abandon.code, 0, abandon.stderr);
    assert.match(abandon.stdout, /COMPENSATED/);
    assert.equal(
      json<{ status: string }>(await cliInProcess(service, ['status', key, '--json'])).status,
      'COMPENSATED',
    );

    const rerun = await cliInProcess(service, ['recompensate', key]);
    assert.equal(rerun.code, 0, rerun.stderr);
    await service.temporal.workflow.getHandle(`compensation-${key}`).result();
    assert.equal((await findRecord(service.prisma, key))?.status, 'COMPENSATED');
    assert.equal(await orderCount(service.prisma, key), 0);
  });

  it('a claim whose workflow start was never confirmed is listed by awaiting; resubmit starts it once', async () => {
    const approvalNo = uniqueApprovalNo('CLICLAIM');
    const input = workflowInputFor(
      approval(approvalNo, await createSku(service.prisma, 10)),
      service.config.writePolicy,
    );
    const key = input.idempotencyKey;
    // What the edge leaves when its start call ran out of time: the claim, no confirmed start (the
    // sender was answered 503 and has not redelivered).
    await claimRecord(service.prisma, {
      idempotencyKey: key,
      approvalNo,
      operation: 'MAIN',
      fingerprint: input.fingerprint,
      request: { approvedAt: input.approvedAt, order: input.order, totalAmount: input.totalAmount },
      source: 'webhook',
      workflowId: orderWorkflowIdFor(key),
    });
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET created_at = now() - interval '10 minutes', updated_at = now() - interval '10 minutes'
      WHERE idempotent_key = ${key}`;

    const waiting = await awaitingRow(service, key);
    assert.equal(waiting?.status, 'RECEIVED');
    assert.deepEqual(waiting.nextActions, ['sender-redelivery', 'resubmit']);
    assert.equal(waiting.workflowId, orderWorkflowIdFor(key));

    const resubmit = await cliInProcess(service, ['resubmit', key, '--by', 'erin', '--json']);
    assert.equal(resubmit.code, 0, resubmit.stderr);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.ok((await findRecord(service.prisma, key))?.workflowStartedAt, 'the start is confirmed');
    assert.equal(await awaitingRow(service, key), undefined);

    const again = await cliInProcess(service, ['resubmit', key]);
    assert.equal(again.code, 1);
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('recompensate continues a landed order whose follow-up runs hit the cap: the operator resets the count', async () => {
    const { key } = await submittedApproval(service, 'CLICAP');
    await service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).result();
    // Five earlier reconciliations each continued the landed order and each follow-up run failed:
    // compensation gave up and asked for a person.
    for (let run = 0; run < 5; run++) {
      await service.prisma.compensationRecord.create({
        data: {
          idempotentKey: key,
          orderRunId: randomUUID(),
          reasonType: 'Unknown',
          reason: 'the follow-up run failed',
          attempts: 1,
          orderLanded: true,
          releasedLines: 0,
          decision: 'resubmit',
          decidedBy: 'reconciliation',
          decidedAt: new Date(),
        },
      });
    }
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET status = 'FAILED', last_error = 'the order landed, but 5 follow-up runs failed too'
      WHERE idempotent_key = ${key}`;

    const rerun = await cliInProcess(service, ['recompensate', key, '--by', 'frank']);
    assert.equal(rerun.code, 0, rerun.stderr);
    const outcome = (await service.temporal.workflow.getHandle(compensationWorkflowIdFor(key)).result()) as {
      status: string;
      outcome: string;
    };
    assert.deepEqual([outcome.status, outcome.outcome], ['SUBMITTED', 'ORDER_LANDED']);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('scan-duplicates finds an order planted behind the service and exits 1; alerts shows it', async () => {
    const { approvalNo, key } = await submittedApproval(service, 'CLIDUP');
    await service.prisma.$executeRaw`
      INSERT INTO order_main (idempotent_key, approval_no, operation, customer_id, currency, total_amount, fingerprint, written_attempt)
      SELECT ${`${key}-copy`}, approval_no, operation, customer_id, currency, total_amount, fingerprint, 1
      FROM order_main WHERE idempotent_key = ${key}`;

    const scan = await cliInProcess(service, ['scan-duplicates', '--since-hours', '1', '--json']);
    assert.equal(scan.code, 1, 'a finding is a failed check');
    const found = json<{
      sameDocumentClusters: number;
      newAlertIds: string[];
      alerts: { id: string; kind: string; approvalNo: string; idempotentKeys: string[] }[];
    }>(scan);
    assert.ok(found.sameDocumentClusters >= 1);
    const alert = found.alerts.find((candidate) => candidate.approvalNo === approvalNo);
    assert.equal(alert?.kind, 'SAME_DOCUMENT');
    assert.deepEqual(new Set(alert.idempotentKeys), new Set([key, `${key}-copy`]));
    assert.ok(found.newAlertIds.includes(alert.id));

    const alerts = await cliInProcess(service, ['alerts']);
    assert.equal(alerts.code, 0);
    assert.match(alerts.stdout, new RegExp(`approval ${approvalNo} MAIN has 2 orders`));
    const one = await cliInProcess(service, ['alerts', '--limit', '1', '--json']);
    assert.equal(one.code, 0, one.stderr);
    assert.equal(json<{ alerts: unknown[] }>(one).alerts.length, 1);
    assert.equal((await cliInProcess(service, ['alerts', '--limit', '0'])).code, 2);
  });

  it('purge-expired --dry-run counts without deleting; without it the expired record goes, the order stays', async () => {
    const { key } = await submittedApproval(service, 'CLIPURGE');
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET created_at = now() - interval '400 days', updated_at = now() - interval '400 days'
      WHERE idempotent_key = ${key}`;

    const dry = await cliInProcess(service, ['purge-expired', '--dry-run', '--retention-days', '365', '--json']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.ok(json<{ purged: number }>(dry).purged >= 1);
    assert.ok(await findRecord(service.prisma, key), 'a dry run deletes nothing');

    const purge = await cliInProcess(service, ['purge-expired', '--retention-days', '365']);
    assert.equal(purge.code, 0, purge.stderr);
    assert.match(purge.stdout, /purged [1-9]\d* record/);
    assert.equal(await findRecord(service.prisma, key), undefined);
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('replay: a recorded file and a live workflow id replay (exit 0); a history the code cannot replay exits 1', async () => {
    const file = await cliInProcess(service, ['replay', FIXTURE]);
    assert.equal(file.code, 0, file.stderr);
    assert.match(file.stdout, /1 history\(ies\) replay/);

    const { approvalNo, key } = await submittedApproval(service, 'CLIREPLAY');
    await service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).result();
    const live = await cliInProcess(service, ['replay', '--workflow-id', orderWorkflowIdFor(key)]);
    assert.equal(live.code, 0, live.stderr);

    // A history in which the workflow scheduled another activity than this code does.
    const tampered = path.join(tmpdir(), `tampered-${approvalNo}.json`);
    const recorded = readFileSync(FIXTURE, 'utf8');
    assert.match(recorded, /"name": "deliverOrderEvent"/);
    writeFileSync(tampered, recorded.replace('"name": "deliverOrderEvent"', '"name": "deliverOrderEventV0"'));
    try {
      const bad = await cliInProcess(service, ['replay', tampered, '--json']);
      assert.equal(bad.code, 1);
      assert.match(json<{ ok: boolean; error: string }[]>(bad)[0]?.error ?? '', /nondeterminism/i);
    } finally {
      rmSync(tampered, { force: true });
    }
  });
});

describe('operator CLI: a key whose compensation already ended', () => {
  let service: TestService;

  before(async () => {
    // A short decision window, so a compensation runs out of it within the test.
    service = await startTestService({
      config: testConfig({ ACTIVITY_SCHEDULE_TO_CLOSE_MS: '8000', COMPENSATION_DECISION_TIMEOUT_MS: '10000' }),
    });
  });
  after(() => service.stop());

  it('recompensate a FAILED key: compensation waits again, resubmit writes one order; a written key is refused', async () => {
    const { key, sku } = await failedWrite(service, 'CLIFAIL');
    await statusReaches(service, key, 'FAILED');
    const waiting = await awaitingRow(service, key);
    assert.equal(waiting?.status, 'FAILED');
    assert.deepEqual(waiting.nextActions, ['recompensate', 'resubmit', 'abandon']);

    // The new compensation's decision window comes from the CLI's configuration: long enough here
    // that the decision below cannot race it on a slow machine.
    const rerun = await cliInProcess(service, ['recompensate', key, '--by', 'bob'], {
      COMPENSATION_DECISION_TIMEOUT_MS: '600000',
    });
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.match(rerun.stdout, /compensation started again .* \(was FAILED\)/);
    await statusReaches(service, key, 'COMPENSATING');
    const twice = await cliInProcess(service, ['recompensate', key]);
    assert.equal(twice.code, 0);
    assert.match(twice.stdout, /already in compensation/);

    await service.prisma.inventory.update({ where: { sku }, data: { onHand: 10 } });
    assert.equal((await cliInProcess(service, ['resubmit', key])).code, 0);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);

    const refused = await cliInProcess(service, ['recompensate', key]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /nothing to compensate .* status is SUBMITTED/);
  });
});

describe('operator CLI: a failed delivery whose decision window has closed', () => {
  const SECRET = 'downstream-secret-0123456789';
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;

  before(async () => {
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 4 });
    downstream = await startScriptedDownstream(pool, SECRET, `consumer_${randomBytes(3).toString('hex')}`);
    // A short decision window: the order workflow closes with DELIVERY_FAILED within the test.
    service = await startTestService({
      config: testConfig({
        DOWNSTREAM_URL: downstream.url,
        DOWNSTREAM_SECRET: SECRET,
        ACTIVITY_SCHEDULE_TO_CLOSE_MS: '5000',
        COMPENSATION_DECISION_TIMEOUT_MS: '6000',
      }),
    });
  });
  after(async () => {
    await service.stop();
    await downstream.close();
    await pool.end();
  });

  /** An order written whose delivery the downstream refused (400, not retried); its window closed. */
  async function refusedDelivery(prefix: string) {
    const approvalNo = uniqueApprovalNo(prefix);
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    downstream.script(key, [{ kind: 'status', status: 400 }]);
    assert.equal(
      (await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)))).statusCode,
      202,
    );
    await statusReaches(service, key, 'DELIVERY_FAILED');
    const result = (await service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).result()) as {
      finalStatus: string;
    };
    assert.equal(result.finalStatus, 'DELIVERY_FAILED', 'the order workflow closed without a decision');
    return { approvalNo, key };
  }

  it('awaiting lists the failed delivery; redeliver delivers once with the same event id; again is refused', async () => {
    const { key } = await refusedDelivery('CLIREDO');
    const waiting = await awaitingRow(service, key);
    assert.equal(waiting?.status, 'DELIVERY_FAILED');
    assert.deepEqual(waiting.nextActions, ['redeliver', 'mark-handled']);
    assert.match(waiting.reason, /DownstreamRejected/);

    const redeliver = await cliInProcess(service, ['redeliver', key, '--by', 'carol', '--json']);
    assert.equal(redeliver.code, 0, redeliver.stderr);
    assert.equal(json<{ status: string }>(redeliver).status, 'DELIVERED');
    await statusReaches(service, key, 'DELIVERED');
    const arrivals = downstream.arrivals(key);
    assert.equal(arrivals.length, 2, 'the refused attempt and the redelivery');
    assert.deepEqual(
      arrivals.map((arrival) => arrival.eventId),
      [eventIdFor(key), eventIdFor(key)],
    );
    assert.equal(await downstream.effects(key), 1);

    const again = await cliInProcess(service, ['redeliver', key]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /status is DELIVERED/);
    assert.equal(downstream.arrivals(key).length, 2, 'nothing was sent again');
    assert.equal(await awaitingRow(service, key), undefined);
  });

  it('mark-handled after the window closed reads DELIVERED, sends nothing and names who decided', async () => {
    const { approvalNo, key } = await refusedDelivery('CLIHANDLED');
    const handled = await cliInProcess(service, ['mark-handled', '--approval-no', approvalNo, '--by', 'dave']);
    assert.equal(handled.code, 0, handled.stderr);
    assert.match(handled.stdout, /DELIVERED/);
    const status = json<{ status: string; lastError: string }>(await cliInProcess(service, ['status', key, '--json']));
    assert.equal(status.status, 'DELIVERED');
    assert.match(status.lastError, /marked handled by dave/);
    assert.equal(downstream.arrivals(key).length, 1, 'only the refused attempt reached the downstream');

    const again = await cliInProcess(service, ['mark-handled', key]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /status is DELIVERED/);
    assert.equal((await findRecord(service.prisma, key))?.status, 'DELIVERED');
  });

  it('redeliver and mark-handled refuse a key that is not DELIVERY_FAILED, and bad arguments exit 2', async () => {
    const unknown = idempotencyKeyFor(uniqueApprovalNo('CLINONE'), 'MAIN');
    const refused = await cliInProcess(service, ['redeliver', unknown]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /unknown/);
    assert.equal((await cliInProcess(service, ['mark-handled', '--approval-no', 'X', '--operation', 'OTHER'])).code, 2);
    assert.equal((await cliInProcess(service, ['redeliver'])).code, 2);
  });
  it("schema-status says a fresh database lacks every migration (exit 1), and with --wait ends 0 once the migrate Job's work is done", async () => {
    const name = `schema_status_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: stackEnv().databaseUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    const fresh = new URL(stackEnv().databaseUrl);
    fresh.pathname = `/${name}`;
    const env = { DATABASE_URL: fresh.toString() };

    const behind = await cliInProcess(service, ['schema-status', '--json'], env);
    assert.equal(behind.code, 1, behind.stderr);
    assert.deepEqual(json<{ current: boolean; missing: string[] }>(behind), {
      current: false,
      missing: (await readMigrations()).map((migration) => migration.name),
    });
    // The init container's wait, while the migrate Job migrates.
    const waiting = cliInProcess(service, ['schema-status', '--wait', '120', '--json'], env);
    await migrate(fresh.toString());
    const current = await waiting;
    assert.equal(current.code, 0, current.stderr);
    assert.deepEqual(json(current), { current: true, missing: [] });
    assert.equal((await cliInProcess(service, ['schema-status'])).code, 0, "the service's own database is current");
  });
});
