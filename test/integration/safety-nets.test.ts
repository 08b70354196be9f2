// The scheduled safety nets on the real stack: the duplicate scan finds orders planted behind the
// service's back and records each finding once; the retention purge removes only records whose
// key an order row answers (or that never started), and a late redelivery after it still cannot
// double.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { findRecord } from '../../services/db/idempotency-records.js';
import { purgeExpiredRecords } from '../../services/db/retention.js';
import type { PurgeResult, ScanResult } from '../../domain/safety-nets.js';
import {
  duplicateScanScheduleId,
  ensureSafetyNetSchedules,
  retentionScheduleId,
  safetyNetSchedules,
} from '../../services/temporal/schedules.js';
import {
  approval,
  createSku,
  eventually,
  getOrder,
  orderCount,
  postApproval,
  startTestService,
  statusReaches,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

/** Triggers a schedule now and returns the result of the run it started, and that run's id. */
async function runScheduleOnce<T>(temporal: Client, scheduleId: string): Promise<{ result: T; workflowId: string }> {
  const handle = temporal.schedule.getHandle(scheduleId);
  const before = (await handle.describe()).info.recentActions.length;
  await handle.trigger();
  const action = await eventually(`${scheduleId} to start a run`, async () => {
    const { recentActions } = (await handle.describe()).info;
    return recentActions.length > before ? recentActions.at(-1) : undefined;
  });
  const { workflowId } = action.action.workflow;
  return { result: (await temporal.workflow.getHandle(workflowId).result()) as T, workflowId };
}

async function runSchedule<T>(temporal: Client, scheduleId: string): Promise<T> {
  return (await runScheduleOnce<T>(temporal, scheduleId)).result;
}

/** Bytes of the result payload the run's activity handed back to Temporal. */
async function activityResultBytes(temporal: Client, workflowId: string): Promise<number> {
  const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
  const completed = (history.events ?? []).filter((event) => event.activityTaskCompletedEventAttributes);
  assert.equal(completed.length, 1, 'one activity completed');
  const payloads = completed[0]?.activityTaskCompletedEventAttributes?.result?.payloads ?? [];
  return payloads.reduce((sum, payload) => sum + (payload.data?.length ?? 0), 0);
}

/** Plants `count` orders of different approvals with one customer, currency and lines, a second apart. */
async function plantNearIdentical(
  service: TestService,
  prefix: string,
  count: number,
  fingerprint = randomBytes(32).toString('hex'),
): Promise<{ fingerprint: string; orderNos: string[] }> {
  const approvalPrefix = uniqueApprovalNo(prefix);
  const rows = await service.prisma.$queryRaw<{ order_no: string }[]>`
    INSERT INTO order_main (idempotent_key, approval_no, operation, customer_id, currency, total_amount, fingerprint, written_attempt, created_at)
    SELECT 'APPROVAL:' || ${approvalPrefix} || '-' || n || ':MAIN', ${approvalPrefix} || '-' || n, 'MAIN',
           ${`CUST-${approvalPrefix}`}, 'CNY', 21, ${fingerprint}, 1, now() - make_interval(secs => ${count} - n)
    FROM generate_series(1, ${count}) AS n
    RETURNING order_no`;
  return { fingerprint, orderNos: rows.map((row) => row.order_no) };
}

/** Alerts not superseded by a larger one, naming any of these orders. */
async function alertsNaming(service: TestService, orderNos: string[]) {
  return service.prisma.$queryRaw<{ id: bigint; kind: string; order_nos: string[] }[]>`
    SELECT id, kind, order_nos FROM duplicate_alert
    WHERE order_nos && ${orderNos}::text[] AND superseded_by IS NULL`;
}

describe('safety nets (Temporal Schedules)', () => {
  let service: TestService;

  before(async () => {
    service = await startTestService();
    const schedules = safetyNetSchedules(service.config);
    await ensureSafetyNetSchedules(service.temporal, schedules);
    // Idempotent: a second worker starting (or a restart) changes nothing and does not fail.
    await ensureSafetyNetSchedules(service.temporal, schedules);
  });
  after(async () => {
    const { taskQueue } = service.config.temporal;
    for (const id of [duplicateScanScheduleId(taskQueue), retentionScheduleId(taskQueue)]) {
      await service.temporal.schedule.getHandle(id).delete();
    }
    await service.stop();
  });

  it('the duplicate scan finds an order planted under another key for the same approval, and near-identical orders', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('DUPSCAN');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);
    const first = await statusReaches(service, key, 'SUBMITTED');
    // A second approval with the same customer and lines, through the front door: near-identical.
    const twinNo = uniqueApprovalNo('DUPTWIN');
    assert.equal((await postApproval(service, approval(twinNo, sku))).statusCode, 202);
    const twin = await statusReaches(service, idempotencyKeyFor(twinNo, 'MAIN'), 'SUBMITTED');

    // Behind the service's back: the same approval and operation under a key made elsewhere.
    const [planted] = await service.prisma.$queryRaw<{ order_no: string }[]>`
      INSERT INTO order_main (idempotent_key, approval_no, operation, customer_id, currency, total_amount, fingerprint, written_attempt)
      SELECT ${`${key}#retry-2`}, approval_no, operation, customer_id, currency, total_amount, fingerprint, 1
      FROM order_main WHERE idempotent_key = ${key}
      RETURNING order_no`;
    assert.ok(planted);

    const scan = await runSchedule<ScanResult>(
      service.temporal,
      duplicateScanScheduleId(service.config.temporal.taskQueue),
    );
    // One alert for the document, naming both orders and both keys; the scan's result names it new.
    const [sameDocument, ...more] = await service.prisma.duplicateAlert.findMany({
      where: { approvalNo, supersededBy: null },
    });
    assert.ok(sameDocument, JSON.stringify(scan));
    assert.deepEqual(more, []);
    assert.equal(sameDocument.kind, 'SAME_DOCUMENT');
    assert.deepEqual([...sameDocument.orderNos].sort(), [first.orderNo, planted.order_no].sort());
    assert.deepEqual(new Set(sameDocument.idempotentKeys), new Set([key, `${key}#retry-2`]));
    assert.ok(scan.newAlertIds.includes(sameDocument.id.toString()), JSON.stringify(scan));
    const near = (await alertsNaming(service, [twin.orderNo as string])).filter(
      (alert) => alert.kind === 'NEAR_IDENTICAL',
    );
    assert.equal(near.length, 1, near.map((alert) => alert.order_nos.join(' ')).join('; '));
    assert.ok(near[0]?.order_nos.includes(first.orderNo as string));
    assert.ok(scan.newAlertIds.includes(String(near[0]?.id)));

    // Recorded once: the next scan records nothing new for the same orders.
    const again = await runSchedule<ScanResult>(
      service.temporal,
      duplicateScanScheduleId(service.config.temporal.taskQueue),
    );
    assert.ok(!again.newAlertIds.includes(sameDocument.id.toString()));
    assert.ok(!again.newAlertIds.includes(String(near[0]?.id)));
    assert.equal(await service.prisma.duplicateAlert.count({ where: { approvalNo } }), 1);
    assert.equal((await alertsNaming(service, [twin.orderNo as string])).length, 1);
  });

  it('200 near-identical orders make one alert, and the scheduled scan returns counts small enough for Temporal', async () => {
    const cluster = await plantNearIdentical(service, 'DUPMANY', 200);
    const scheduleId = duplicateScanScheduleId(service.config.temporal.taskQueue);

    const { result: scan, workflowId } = await runScheduleOnce<ScanResult>(service.temporal, scheduleId);
    // The workflow's result and the activity's result, as Temporal stores them: far below its
    // 2 MB payload limit, whatever the size of the cluster.
    assert.ok(JSON.stringify(scan).length < 64 * 1024, `workflow result of ${JSON.stringify(scan).length} bytes`);
    const activityBytes = await activityResultBytes(service.temporal, workflowId);
    assert.ok(activityBytes < 64 * 1024, `activity result of ${activityBytes} bytes`);

    const alerts = await alertsNaming(service, cluster.orderNos);
    assert.equal(alerts.length, 1, 'one alert for the cluster');
    const [alert] = alerts;
    assert.equal(alert?.kind, 'NEAR_IDENTICAL');
    assert.deepEqual([...(alert?.order_nos ?? [])].sort(), [...cluster.orderNos].sort());
    assert.ok(scan.newAlertIds.includes(String(alert?.id)));
    assert.ok(scan.newAlerts >= 1);
    assert.ok(scan.nearIdenticalClusters >= 1);

    // The next scan finds the same cluster and records nothing new.
    const again = await runSchedule<ScanResult>(service.temporal, scheduleId);
    assert.ok(!again.newAlertIds.includes(String(alert?.id)));
    assert.equal((await alertsNaming(service, cluster.orderNos)).length, 1);
    assert.equal(await service.prisma.duplicateAlert.count({ where: { orderNos: { hasSome: cluster.orderNos } } }), 1);

    // One more order joins the cluster: the same alert grows, no pairwise alerts appear.
    const joined = await plantNearIdentical(service, 'DUPMORE', 1, cluster.fingerprint);
    const grown = await runSchedule<ScanResult>(service.temporal, scheduleId);
    assert.ok(JSON.stringify(grown).length < 64 * 1024);
    assert.ok(grown.grownAlerts >= 1, JSON.stringify(grown));
    assert.ok(!grown.newAlertIds.includes(String(alert?.id)));
    const after = await alertsNaming(service, [...cluster.orderNos, ...joined.orderNos]);
    assert.equal(after.length, 1, 'still one alert for the cluster');
    assert.equal(after[0]?.id, alert?.id);
    assert.equal(after[0]?.order_nos.length, 201);
    assert.equal(
      await service.prisma.duplicateAlert.count({
        where: { orderNos: { hasSome: [...cluster.orderNos, ...joined.orderNos] } },
      }),
      1,
    );
  });

  it('two runs of one customer and lines, further apart than the window, are two alerts until orders in between join them', async () => {
    const window = service.config.safetyNets.nearDuplicateWindowMinutes;
    const early = await plantNearIdentical(service, 'DUPEARLY', 3);
    await service.prisma.$executeRaw`
      UPDATE order_main SET created_at = created_at - make_interval(mins => ${window * 3})
      WHERE order_no = ANY(${early.orderNos}::text[])`;
    const late = await plantNearIdentical(service, 'DUPLATE', 3, early.fingerprint);

    await runSchedule<ScanResult>(service.temporal, duplicateScanScheduleId(service.config.temporal.taskQueue));
    const earlyAlerts = await alertsNaming(service, early.orderNos);
    const lateAlerts = await alertsNaming(service, late.orderNos);
    assert.equal(earlyAlerts.length, 1);
    assert.equal(lateAlerts.length, 1);
    assert.notEqual(earlyAlerts[0]?.id, lateAlerts[0]?.id);
    assert.deepEqual([...(lateAlerts[0]?.order_nos ?? [])].sort(), [...late.orderNos].sort());

    // Orders in between join the two runs into one: the older alert carries on with every order,
    // the younger one is marked superseded by it.
    const bridge = await plantNearIdentical(service, 'DUPBRIDGE', 3, early.fingerprint);
    for (const [i, orderNo] of bridge.orderNos.entries()) {
      await service.prisma.$executeRaw`
        UPDATE order_main SET created_at = now() - make_interval(mins => ${((3 - i) * window * 7) / 10})
        WHERE order_no = ${orderNo}`;
    }
    const joined = await runSchedule<ScanResult>(
      service.temporal,
      duplicateScanScheduleId(service.config.temporal.taskQueue),
    );
    assert.ok(joined.grownAlerts >= 1, JSON.stringify(joined));
    const all = [...early.orderNos, ...bridge.orderNos, ...late.orderNos];
    const merged = await alertsNaming(service, all);
    assert.equal(merged.length, 1);
    assert.equal(merged[0]?.id, earlyAlerts[0]?.id);
    assert.deepEqual([...(merged[0]?.order_nos ?? [])].sort(), [...all].sort());
    const superseded = await service.prisma.duplicateAlert.findUnique({ where: { id: lateAlerts[0]?.id as bigint } });
    assert.equal(superseded?.supersededBy, earlyAlerts[0]?.id);
  });

  it('the retention purge removes expired records of settled orders, keeps abandoned ones, unconfirmed claims, those awaiting an operator and those changed within the window; a late redelivery still cannot double', async () => {
    const sku = await createSku(service.prisma, 100);
    const writtenNo = uniqueApprovalNo('RETAIN');
    const writtenKey = idempotencyKeyFor(writtenNo, 'MAIN');
    const body = approval(writtenNo, sku);
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, writtenKey, 'SUBMITTED');
    // Two records without an order: a claim whose workflow never started, and an abandoned key.
    const unstartedKey = idempotencyKeyFor(uniqueApprovalNo('RETUNS'), 'MAIN');
    const abandonedKey = idempotencyKeyFor(uniqueApprovalNo('RETABN'), 'MAIN');
    for (const [key, status] of [
      [unstartedKey, 'RECEIVED'],
      [abandonedKey, 'COMPENSATED'],
    ] as const) {
      await service.prisma.$executeRaw`
        INSERT INTO idempotency_record (idempotent_key, approval_no, operation, fingerprint, request, workflow_id, status)
        SELECT ${key}, 'X', 'MAIN', fingerprint, request, ${`order-${key}`}, ${status}
        FROM idempotency_record WHERE idempotent_key = ${writtenKey}`;
    }
    // And a written order whose delivery still waits for an operator: its record must stay.
    const waitingNo = uniqueApprovalNo('RETWAIT');
    const waitingKey = idempotencyKeyFor(waitingNo, 'MAIN');
    assert.equal((await postApproval(service, approval(waitingNo, sku))).statusCode, 202);
    await statusReaches(service, waitingKey, 'SUBMITTED');
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET status = 'DELIVERY_FAILED' WHERE idempotent_key = ${waitingKey}`;
    // And a settled order accepted long ago whose key an operator took up again recently (its run
    // may still be working): its record must stay until it has rested a whole window.
    const revivedNo = uniqueApprovalNo('RETREV');
    const revivedKey = idempotencyKeyFor(revivedNo, 'MAIN');
    assert.equal((await postApproval(service, approval(revivedNo, sku))).statusCode, 202);
    await statusReaches(service, revivedKey, 'SUBMITTED');
    const keys = [writtenKey, unstartedKey, abandonedKey, waitingKey];
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET created_at = now() - interval '40 days', updated_at = now() - interval '40 days'
      WHERE idempotent_key = ANY(${keys}::text[])`;
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET created_at = now() - interval '40 days' WHERE idempotent_key = ${revivedKey}`;

    const purge = await runSchedule<PurgeResult>(
      service.temporal,
      retentionScheduleId(service.config.temporal.taskQueue),
    );
    assert.equal(purge.dryRun, false);
    assert.ok(purge.purged >= 1);
    assert.ok((purge.kept.COMPENSATED ?? 0) >= 1);
    assert.equal(await findRecord(service.prisma, writtenKey), undefined);
    // A claim whose start was never confirmed stays: the start may have reached Temporal.
    assert.equal((await findRecord(service.prisma, unstartedKey))?.status, 'RECEIVED');
    assert.equal((await findRecord(service.prisma, revivedKey))?.status, 'SUBMITTED');
    assert.equal((await findRecord(service.prisma, abandonedKey))?.status, 'COMPENSATED');
    assert.equal((await findRecord(service.prisma, waitingKey))?.status, 'DELIVERY_FAILED');

    // After expiry: the order row answers. A changed payload is a conflict and leaves nothing
    // behind; the original redelivery is still a duplicate; one order, one workflow run.
    const changed = approval(writtenNo, sku, { order: { ...body.order, customerId: 'CUST-LATE' } });
    assert.equal((await postApproval(service, changed)).statusCode, 422);
    assert.equal(await findRecord(service.prisma, writtenKey), undefined);
    const late = await postApproval(service, body);
    assert.equal(late.statusCode, 200, late.body);
    assert.equal(late.json<{ duplicate: boolean }>().duplicate, true);
    assert.equal(await orderCount(service.prisma, writtenKey), 1);
  });
  it('the retention purge keeps the record of a written order whose sender was never answered, so its late redelivery still hears the one 202', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('RETUNANS');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku);
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'SUBMITTED');
    // As when every delivery heard 503 — the start's answer was lost — and the run wrote the order
    // all the same: no delivery of the key was answered with success.
    await service.prisma.$executeRaw`
      UPDATE idempotency_record
      SET first_delivery_at = NULL, created_at = now() - interval '40 days', updated_at = now() - interval '40 days'
      WHERE idempotent_key = ${key}`;

    const purge = await runSchedule<PurgeResult>(
      service.temporal,
      retentionScheduleId(service.config.temporal.taskQueue),
    );
    assert.equal((await findRecord(service.prisma, key))?.status, 'SUBMITTED', 'the record is kept');
    assert.ok(purge.unanswered >= 1, JSON.stringify(purge));

    // The sender comes back late: its delivery is the first one answered, 202, and only that one.
    const late = await postApproval(service, body);
    assert.equal(late.statusCode, 202, late.body);
    assert.equal(late.json<{ duplicate: boolean }>().duplicate, false);
    assert.equal((await postApproval(service, body)).statusCode, 200);
    assert.equal(await orderCount(service.prisma, key), 1);
    // Answered, the record goes with the next run.
    await runSchedule<PurgeResult>(service.temporal, retentionScheduleId(service.config.temporal.taskQueue));
    assert.equal(await findRecord(service.prisma, key), undefined);
  });

  it('an operator releases the records of unanswered senders once they know: a late redelivery then hears 200 and still writes nothing', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('RETRELEASE');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku);
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'SUBMITTED');
    await service.prisma.$executeRaw`
      UPDATE idempotency_record
      SET first_delivery_at = NULL, created_at = now() - interval '40 days', updated_at = now() - interval '40 days'
      WHERE idempotent_key = ${key}`;

    const options = { retentionDays: 30, dryRun: false };
    await purgeExpiredRecords(service.prisma, options);
    assert.ok(await findRecord(service.prisma, key), 'kept by the ordinary purge');
    const released = await purgeExpiredRecords(service.prisma, { ...options, releaseUnanswered: true });
    assert.ok(released.purged >= 1);
    assert.equal(released.unanswered, 0);
    assert.equal(await findRecord(service.prisma, key), undefined);

    const late = await postApproval(service, body);
    assert.equal(late.statusCode, 200, late.body);
    assert.equal(late.json<{ duplicate: boolean }>().duplicate, true);
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('a key whose record the purge removed still reads what it reached: DELIVERED stays DELIVERED, SUBMITTED stays SUBMITTED', async () => {
    const sku = await createSku(service.prisma, 100);
    const deliveredKey = idempotencyKeyFor(uniqueApprovalNo('RETDLV'), 'MAIN');
    const submittedKey = idempotencyKeyFor(uniqueApprovalNo('RETSUB'), 'MAIN');
    for (const key of [deliveredKey, submittedKey]) {
      const approvalNo = key.split(':')[1] as string;
      assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);
      await statusReaches(service, key, 'SUBMITTED');
    }
    // This stack has no downstream: the delivery's last step, as the order workflow records it.
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET status = 'DELIVERED' WHERE idempotent_key = ${deliveredKey}`;
    await statusReaches(service, deliveredKey, 'DELIVERED');
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET created_at = now() - interval '40 days', updated_at = now() - interval '40 days'
      WHERE idempotent_key = ANY(${[deliveredKey, submittedKey]}::text[])`;

    await runSchedule<PurgeResult>(service.temporal, retentionScheduleId(service.config.temporal.taskQueue));
    assert.equal(await findRecord(service.prisma, deliveredKey), undefined);
    assert.equal(await findRecord(service.prisma, submittedKey), undefined);

    const delivered = await getOrder(service, deliveredKey);
    assert.equal(delivered.statusCode, 200);
    assert.equal(delivered.json<{ status: string }>().status, 'DELIVERED');
    const submitted = await getOrder(service, submittedKey);
    assert.equal(submitted.statusCode, 200);
    assert.equal(submitted.json<{ status: string }>().status, 'SUBMITTED');
  });
});
