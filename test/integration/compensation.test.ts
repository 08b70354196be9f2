// Writes that fail for good go to compensation: reconciled, nothing half-written, an operator
// decides, and a resubmit reuses the key so it can never double.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Client, WorkflowFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { createActivities } from '../../activities/index.js';
import { findRecord } from '../../services/db/idempotency-records.js';
import { canonicalOrder, totalAmountOf } from '../../domain/canonical-order.js';
import { fingerprintOf } from '../../domain-node/fingerprint.js';
import { compensationWorkflowIdFor, idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { workflowInputFor } from '../../submission/submit-approval.js';
import { startCompensationWorkflow, startOrderWorkflow } from '../../services/temporal/order-workflows.js';
import {
  type CompensationInput,
  type CompensationState,
  compensationStateQuery,
  decideUpdate,
  type DecisionResult,
} from '../../workflows/definitions.js';
import type { compensationWorkflow } from '../../workflows/compensation-workflow.js';
import type { orderWorkflow } from '../../workflows/order-workflow.js';
import { FaultPlan, startServiceWithFaults } from '../../tools/harness/faults.js';
import {
  approval,
  createSku,
  eventually,
  getOrder,
  orderCount,
  type OrderView,
  postApproval,
  recordedLastError,
  startTestService,
  statusReaches,
  stockOf,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

describe('compensation', () => {
  const faults = new FaultPlan();
  let service: TestService;

  before(async () => {
    service = await startServiceWithFaults(faults);
  });
  after(() => service.stop());

  function compensationHandle(key: string) {
    return service.temporal.workflow.getHandle<typeof compensationWorkflow>(compensationWorkflowIdFor(key));
  }

  async function compensationState(key: string): Promise<CompensationState> {
    return eventually(`compensation of ${key} to be queryable`, () =>
      compensationHandle(key).query(compensationStateQuery),
    );
  }

  /** How the key's compensation ended, once it has (it may not have started yet). */
  function compensationOutcome(key: string): Promise<CompensationState> {
    return eventually(`compensation of ${key} to finish`, async () => {
      try {
        return await compensationHandle(key).result();
      } catch {
        return undefined;
      }
    });
  }

  async function decide(key: string, decision: 'resubmit' | 'abandon'): Promise<DecisionResult> {
    const handle = compensationHandle(key);
    return handle.executeUpdate(decideUpdate, { args: [{ decision, decidedBy: 'test-operator' }] });
  }

  async function reservationsOf(key: string) {
    return service.prisma.stockReservation.count({ where: { idempotentKey: key } });
  }

  it('insufficient stock is tried once, leaves nothing half-written and waits in COMPENSATING', async () => {
    const sku = await createSku(service.prisma, 1);
    const other = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('NOSTOCK');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku, {
      order: {
        customerId: 'CUST-1',
        currency: 'CNY',
        // The first SKU in lock order has stock; the second has not: the first reservation must roll back.
        lines: [
          { sku: other, quantity: 3, unitPrice: '1' },
          { sku, quantity: 5, unitPrice: '1' },
        ].sort((a, b) => (a.sku < b.sku ? -1 : 1)),
      },
    });
    assert.equal((await postApproval(service, body)).statusCode, 202);

    const view = await statusReaches(service, key, 'COMPENSATING');
    assert.equal(view.attempts, 1, 'a business failure is never retried');
    assert.equal(view.lastError?.code, 'insufficient-stock');
    assert.match(await recordedLastError(service, key), /InsufficientStock/);
    assert.equal(await orderCount(service.prisma, key), 0);
    assert.equal(await reservationsOf(key), 0);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 1, reserved: 0 });
    assert.deepEqual(await stockOf(service.prisma, other), { onHand: 100, reserved: 0 });

    const state = await compensationState(key);
    assert.equal(state.reasonType, 'InsufficientStock');
    const records = await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } });
    assert.equal(records.length, 1);
    assert.equal(records[0]?.attempts, 1);

    // The order workflow itself failed fast with a typed, non-retryable failure.
    await assert.rejects(service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).result(), WorkflowFailedError);
  });

  it('a key already used for a different order is a conflict: one attempt, then compensation', async () => {
    // The backstop when the edge cannot know: an order row exists under the key with another
    // payload and the workflow is started directly (as a second entry point racing would).
    const sku = await createSku(service.prisma, 10);
    const approvalNo = uniqueApprovalNo('CONFLICT');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const stored = canonicalOrder({
      customerId: 'CUST-OTHER',
      currency: 'CNY',
      lines: [{ sku, quantity: 1, unitPrice: '1' }],
    });
    await service.prisma.orderMain.create({
      data: {
        idempotentKey: key,
        approvalNo,
        operation: 'MAIN',
        customerId: stored.customerId,
        currency: 'CNY',
        totalAmount: totalAmountOf(stored),
        fingerprint: fingerprintOf(stored),
        writtenAttempt: 1,
      },
    });
    const input = workflowInputFor(approval(approvalNo, sku), service.config.writePolicy);
    await startOrderWorkflow(service.temporal, service.config.temporal.taskQueue, input);

    const state = await compensationState(key);
    assert.equal(state.reasonType, 'IdempotencyKeyConflict');
    const records = await eventually('the compensation record', async () => {
      const rows = await service.prisma.compensationRecord.findMany({ where: { idempotentKey: key } });
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(records[0]?.attempts, 1);
    assert.equal(records[0]?.orderLanded, false, 'another order under the key is not this order landing');
    const waiting = await compensationState(key);
    assert.deepEqual([waiting.status, waiting.outcome], ['COMPENSATING', undefined], 'it waits for an operator');
    assert.equal(await orderCount(service.prisma, key), 1, 'the existing row is left alone');
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 10, reserved: 0 });
  });

  it('exhausted attempts go to compensation, and a resubmit after the fix writes exactly one order', async () => {
    const sku = await createSku(service.prisma, 30);
    const approvalNo = uniqueApprovalNo('DOWN');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    faults.set(approvalNo, { kind: 'database-down', attempts: Number.MAX_SAFE_INTEGER });
    assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);

    const view = await statusReaches(service, key, 'COMPENSATING');
    assert.equal(view.attempts, 3, 'the policy allows three attempts, no more');
    assert.equal(view.lastError?.code, 'connection-lost');
    assert.match(await recordedLastError(service, key), /ConnectionLost/);
    assert.equal(await orderCount(service.prisma, key), 0);

    faults.clear(approvalNo); // the database is back
    const decided = await decide(key, 'resubmit');
    assert.equal(decided.outcome, 'RESUBMITTED');
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 30, reserved: 2 });

    // A redelivery after all that still starts nothing.
    const again = await postApproval(service, approval(approvalNo, sku));
    assert.equal(again.statusCode, 200);
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('an abandoned order stays abandoned: a later redelivery answers duplicate and writes nothing', async () => {
    const sku = await createSku(service.prisma, 0);
    const approvalNo = uniqueApprovalNo('ABANDON');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku);
    assert.equal((await postApproval(service, body)).statusCode, 202);
    await statusReaches(service, key, 'COMPENSATING');
    await compensationState(key);

    const decided = await decide(key, 'abandon');
    assert.deepEqual([decided.status, decided.outcome], ['COMPENSATED', 'ABANDONED']);
    await statusReaches(service, key, 'COMPENSATED');

    // The stock arrives later and the OA system redelivers: the operator's decision stands.
    await service.prisma.inventory.update({ where: { sku }, data: { onHand: 10 } });
    const redelivery = await postApproval(service, body);
    assert.equal(redelivery.statusCode, 200);
    assert.deepEqual(
      {
        duplicate: redelivery.json<{ duplicate: boolean }>().duplicate,
        status: redelivery.json<{ status: string }>().status,
      },
      { duplicate: true, status: 'COMPENSATED' },
    );
    assert.equal(await orderCount(service.prisma, key), 0);
    const record = await service.prisma.compensationRecord.findFirstOrThrow({ where: { idempotentKey: key } });
    assert.deepEqual([record.decision, record.decidedBy], ['abandon', 'test-operator']);
  });

  it('reconciliation finds an order that landed despite the failure: SUBMITTED, nothing undone', async () => {
    const sku = await createSku(service.prisma, 5);
    const approvalNo = uniqueApprovalNo('LANDED');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    faults.set(approvalNo, { kind: 'commit-then-unclassified-failure' });
    assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);

    const outcome = await compensationOutcome(key);
    assert.deepEqual([outcome.status, outcome.outcome], ['SUBMITTED', 'ORDER_LANDED']);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 5, reserved: 2 });
  });

  it('an order whose commit lands after reconciliation looked is carried on by compensation, asking no one', async () => {
    const sku = await createSku(service.prisma, 5);
    const approvalNo = uniqueApprovalNo('LATE');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    faults.set(approvalNo, { kind: 'commit-after-reconciliation' });
    assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);

    // The record says SUBMITTED once the late commit landed: no operator is asked, nothing lists it.
    const outcome = await compensationOutcome(key);
    assert.deepEqual([outcome.status, outcome.outcome], ['SUBMITTED', 'ORDER_LANDED']);
    // A new run of the order finds the order and finishes; the one that failed stays failed.
    const finished = await service.temporal.workflow.getHandle<typeof orderWorkflow>(orderWorkflowIdFor(key)).result();
    assert.deepEqual([finished.finalStatus, finished.alreadyWritten], ['SUBMITTED', true]);
    assert.equal(await orderCount(service.prisma, key), 1);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 5, reserved: 2 });
    const record = await service.prisma.compensationRecord.findFirstOrThrow({ where: { idempotentKey: key } });
    assert.deepEqual([record.decision, record.decidedBy], ['resubmit', 'reconciliation']);
  });

  it('running compensation twice for the same failure changes nothing the second time', async () => {
    const sku = await createSku(service.prisma, 0);
    const approvalNo = uniqueApprovalNo('TWICE');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);
    await statusReaches(service, key, 'COMPENSATING');
    const firstState = await compensationState(key);
    await decide(key, 'abandon');
    await statusReaches(service, key, 'COMPENSATED');

    // Re-run the same compensation (same failed run) after it ended.
    const orderRun = await service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).describe();
    const input: CompensationInput = {
      order: workflowInputFor(approval(approvalNo, sku), service.config.writePolicy),
      orderRunId: orderRun.runId,
      reasonType: firstState.reasonType,
      reason: firstState.reason,
      attempts: 1,
    };
    const rerun = await startCompensationWorkflow(service.temporal, service.config.temporal.taskQueue, input);
    assert.equal(rerun.closedRunExists, false, 'a new compensation run was started');
    const second = await compensationHandle(key).result();
    assert.deepEqual([second.status, second.outcome], ['COMPENSATED', 'ABANDONED']);
    assert.equal((await getOrder(service, key)).json<OrderView>().status, 'COMPENSATED');
    assert.equal(await service.prisma.compensationRecord.count({ where: { idempotentKey: key } }), 1);
    assert.equal(await orderCount(service.prisma, key), 0);
    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 0, reserved: 0 });
  });
});

describe('compensation: a resubmit whose start keeps failing', () => {
  let service: TestService;
  // While set, the resubmit step talks to a Temporal namespace that does not exist: every start
  // of the new run is refused, as when Temporal turns the start down.
  let startRefused = true;
  let refusedAttempts = 0;

  before(async () => {
    service = await startTestService({
      activities: (real, deps) => {
        const refusing = createActivities({
          ...deps,
          temporal: new Client({
            connection: deps.temporal.connection,
            namespace: `missing-${randomBytes(4).toString('hex')}`,
          }),
        });
        return {
          ...real,
          async resubmitOrder(request: Parameters<typeof real.resubmitOrder>[0]) {
            if (!startRefused) return real.resubmitOrder(request);
            try {
              return await refusing.resubmitOrder(request);
            } finally {
              refusedAttempts++;
            }
          },
        };
      },
    });
  });
  after(() => service.stop());

  it('an operator resubmit is recorded only once the new run started: while the start fails the key still waits', async () => {
    const sku = await createSku(service.prisma, 0);
    const approvalNo = uniqueApprovalNo('RESUBFAIL');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);
    await statusReaches(service, key, 'COMPENSATING');
    const handle = service.temporal.workflow.getHandle<typeof compensationWorkflow>(compensationWorkflowIdFor(key));
    await eventually('compensation to wait', async () =>
      (await handle.query(compensationStateQuery)).status === 'COMPENSATING' ? true : undefined,
    );

    await service.prisma.inventory.update({ where: { sku }, data: { onHand: 10 } });
    await handle.startUpdate(decideUpdate, {
      args: [{ decision: 'resubmit', decidedBy: 'test-operator' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    await eventually('a refused start', () => Promise.resolve(refusedAttempts >= 1 ? true : undefined));
    const pending = await service.prisma.compensationRecord.findFirstOrThrow({ where: { idempotentKey: key } });
    assert.equal(pending.decision, null, 'no decision is recorded while no new run started');
    assert.equal((await findRecord(service.prisma, key))?.status, 'COMPENSATING');

    startRefused = false; // Temporal accepts starts again: the step's retry carries the decision out
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
    // The step records the decision once the new run started; that run may write first.
    const decided = await eventually('the decision recorded', async () => {
      const row = await service.prisma.compensationRecord.findFirstOrThrow({ where: { idempotentKey: key } });
      return row.decision === null ? undefined : row;
    });
    assert.deepEqual([decided.decision, decided.decidedBy], ['resubmit', 'test-operator']);
  });
});
