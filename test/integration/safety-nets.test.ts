// The scheduled safety nets on the real stack: the duplicate scan finds orders planted behind the
// service's back and records each finding once; the retention purge removes only records whose
// key an order row answers (or that never started), and a late redelivery after it still cannot
// double.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { findRecord } from '../../db/idempotency-records.js';
import type { PurgeResult, ScanResult } from '../../domain/safety-nets.js';
import {
  duplicateScanScheduleId,
  ensureSafetyNetSchedules,
  retentionScheduleId,
  safetyNetSchedules,
} from '../../temporal/schedules.js';
import {
  approval,
  createSku,
  eventually,
  orderCount,
  postApproval,
  startTestService,
  statusReaches,
  type TestService,
  uniqueApprovalNo,
} from '../support/service.js';

/** Triggers a schedule now and returns the result of the run it started. */
async function runSchedule<T>(temporal: Client, scheduleId: string): Promise<T> {
  const handle = temporal.schedule.getHandle(scheduleId);
  const before = (await handle.describe()).info.recentActions.length;
  await handle.trigger();
  const action = await eventually(`${scheduleId} to start a run`, async () => {
    const { recentActions } = (await handle.describe()).info;
    return recentActions.length > before ? recentActions.at(-1) : undefined;
  });
  return temporal.workflow.getHandle(action.action.workflow.workflowId).result() as Promise<T>;
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
    const sameDocument = scan.findings.find(
      (finding) => finding.kind === 'SAME_DOCUMENT' && finding.approvalNo === approvalNo,
    );
    assert.ok(sameDocument, JSON.stringify(scan.findings));
    assert.deepEqual([...sameDocument.orderNos].sort(), [first.orderNo, planted.order_no].sort());
    assert.deepEqual(new Set(sameDocument.idempotencyKeys), new Set([key, `${key}#retry-2`]));
    assert.equal(sameDocument.newAlert, true);
    const near = scan.findings.find(
      (finding) =>
        finding.kind === 'NEAR_IDENTICAL' &&
        finding.orderNos.includes(twin.orderNo as string) &&
        finding.orderNos.includes(first.orderNo as string),
    );
    assert.ok(near, JSON.stringify(scan.findings));

    // Recorded once: the alert row exists, and the next scan reports the finding as known.
    const alerts = await service.prisma.duplicateAlert.findMany({ where: { approvalNo } });
    assert.equal(alerts.length, 1);
    const again = await runSchedule<ScanResult>(
      service.temporal,
      duplicateScanScheduleId(service.config.temporal.taskQueue),
    );
    const repeated = again.findings.find((finding) => finding.approvalNo === approvalNo);
    assert.equal(repeated?.newAlert, false);
    assert.equal(await service.prisma.duplicateAlert.count({ where: { approvalNo } }), 1);
  });

  it('the retention purge removes expired records of settled orders, keeps abandoned ones and those awaiting an operator; a late redelivery still cannot double', async () => {
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
    const keys = [writtenKey, unstartedKey, abandonedKey, waitingKey];
    await service.prisma.$executeRaw`
      UPDATE idempotency_record SET created_at = now() - interval '40 days' WHERE idempotent_key = ANY(${keys}::text[])`;

    const purge = await runSchedule<PurgeResult>(
      service.temporal,
      retentionScheduleId(service.config.temporal.taskQueue),
    );
    assert.equal(purge.dryRun, false);
    assert.ok(purge.purged >= 2);
    assert.ok((purge.kept.COMPENSATED ?? 0) >= 1);
    assert.equal(await findRecord(service.prisma, writtenKey), undefined);
    assert.equal(await findRecord(service.prisma, unstartedKey), undefined);
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
});
