// Records the histories of representative runs into test/replay/histories/, the fixtures the replay
// test replays against the current workflow code. Run it on the real stack when a workflow change
// is released (after patching, the old fixtures must still replay — keep them, add new ones):
//
//   npm run replay:record
//
// Each scenario drives the service the way production does (webhook, faults, operator decisions)
// and saves every workflow run it produced, as the Temporal CLI / Web UI export histories.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import pg from 'pg';
import { compensationWorkflowIdFor, idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { decideDelivery } from '../../services/submission/operator-decisions.js';
import { decideUpdate, deliveryWorkflowIdFor } from '../../workflows/definitions.js';
import { duplicateScanWorkflow, retentionPurgeWorkflow } from '../../workflows/safety-net-workflows.js';
import { FaultPlan, faultyActivities } from '../support/faults.js';
import { startScriptedDownstream, type ScriptedDownstream } from '../../tools/harness/scripted-downstream.js';
import {
  approval,
  createSku,
  eventually,
  postApproval,
  startTestService,
  statusReaches,
  stackEnv,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../support/service.js';

const OUT = fileURLToPath(new URL('./histories/', import.meta.url));
const SECRET = 'replay-downstream-secret-0123456789';

describe('record replay fixtures', () => {
  const plan = new FaultPlan();
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;

  before(async () => {
    mkdirSync(OUT, { recursive: true });
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
    downstream = await startScriptedDownstream(pool, SECRET, `replay_${randomBytes(3).toString('hex')}`);
    const config = testConfig({ DOWNSTREAM_URL: downstream.url, DOWNSTREAM_SECRET: SECRET });
    service = await startTestService({
      config,
      activities: await faultyActivities(plan, { startToCloseMs: config.writePolicy.startToCloseMs }),
    });
  });
  after(async () => {
    await service.stop();
    await downstream.close();
    await pool.end();
  });

  /** Saves every closed run of these workflow ids as `<scenario>.<n>.json`. */
  async function save(scenario: string, workflowIds: string[]) {
    const runs: WorkflowExecutionInfo[] = [];
    for (const workflowId of workflowIds) {
      for await (const run of service.temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
        runs.push(run);
      }
    }
    runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
    let n = 0;
    for (const run of runs) {
      await eventually(`${run.workflowId} to close`, async () =>
        (await service.temporal.workflow.getHandle(run.workflowId, run.runId).describe()).closeTime ? true : undefined,
      );
      const history = await service.temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      writeFileSync(`${OUT}${scenario}.${++n}.${run.type}.json`, `${historyToJSON(history)}\n`);
    }
    console.log(`${scenario}: ${n} run(s)`);
  }

  async function decide(workflowId: string, decision: string) {
    await eventually(`${workflowId} to take a decision`, () =>
      service.temporal.workflow
        .getHandle(workflowId)
        .executeUpdate(decideUpdate, { args: [{ decision: decision as 'abandon', decidedBy: 'fixture-recorder' }] }),
    );
  }

  it('first delivery, with two redeliveries while it runs; delivered downstream', async () => {
    const approvalNo = uniqueApprovalNo('FIRST');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, await createSku(service.prisma, 10));
    await Promise.all([postApproval(service, body), postApproval(service, body), postApproval(service, body)]);
    await statusReaches(service, key, 'DELIVERED');
    await save('first-delivery', [orderWorkflowIdFor(key)]);
  });

  it('lost response after the commit, then the retry finds the order', async () => {
    const approvalNo = uniqueApprovalNo('LOST');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    plan.set(approvalNo, { kind: 'lost-response' });
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)));
    await statusReaches(service, key, 'DELIVERED');
    await save('lost-response-retry', [orderWorkflowIdFor(key)]);
  });

  it('compensation, then resubmit after the cause is fixed', async () => {
    const approvalNo = uniqueApprovalNo('RESUB');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const sku = await createSku(service.prisma, 1);
    await postApproval(service, approval(approvalNo, sku));
    await statusReaches(service, key, 'COMPENSATING');
    await service.prisma.inventory.update({ where: { sku }, data: { onHand: 10 } });
    await decide(compensationWorkflowIdFor(key), 'resubmit');
    await statusReaches(service, key, 'DELIVERED');
    await save('compensation-resubmit', [orderWorkflowIdFor(key), compensationWorkflowIdFor(key)]);
  });

  it('compensation, then abandon', async () => {
    const approvalNo = uniqueApprovalNo('ABANDON');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 1)));
    await statusReaches(service, key, 'COMPENSATING');
    await decide(compensationWorkflowIdFor(key), 'abandon');
    await statusReaches(service, key, 'COMPENSATED');
    await save('compensation-abandon', [orderWorkflowIdFor(key), compensationWorkflowIdFor(key)]);
  });

  it('delivery refused, then an operator redelivers', async () => {
    const approvalNo = uniqueApprovalNo('REDELIVER');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    downstream.script(key, [{ kind: 'status', status: 400 }]);
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)));
    await statusReaches(service, key, 'DELIVERY_FAILED');
    await decide(orderWorkflowIdFor(key), 'redeliver');
    await statusReaches(service, key, 'DELIVERED');
    await save('delivery-failed-redeliver', [orderWorkflowIdFor(key)]);
  });

  it('a duplicate scan and a retention purge', async () => {
    await service.temporal.workflow.execute(duplicateScanWorkflow, {
      taskQueue: service.config.temporal.taskQueue,
      workflowId: `replay-duplicate-scan-${randomBytes(3).toString('hex')}`,
      args: [{ lookbackMinutes: 60, nearWindowMinutes: 10 }],
    });
    await service.temporal.workflow.execute(retentionPurgeWorkflow, {
      taskQueue: service.config.temporal.taskQueue,
      workflowId: `replay-retention-${randomBytes(3).toString('hex')}`,
      args: [{ retentionDays: 30 }],
    });
    const ids: string[] = [];
    for await (const run of service.temporal.workflow.list({
      query: `WorkflowType = 'duplicateScanWorkflow' OR WorkflowType = 'retentionPurgeWorkflow'`,
    })) {
      if (run.taskQueue === service.config.temporal.taskQueue) ids.push(run.workflowId);
    }
    await save('safety-nets', ids);
  });
});

describe('record replay fixtures: decisions after the decision window closed', () => {
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;

  before(async () => {
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
    downstream = await startScriptedDownstream(pool, SECRET, `replay_${randomBytes(3).toString('hex')}`);
    // A short window, so the order workflow closes with DELIVERY_FAILED within the recording.
    const config = testConfig({
      DOWNSTREAM_URL: downstream.url,
      DOWNSTREAM_SECRET: SECRET,
      ACTIVITY_SCHEDULE_TO_CLOSE_MS: '5000',
      COMPENSATION_DECISION_TIMEOUT_MS: '6000',
    });
    service = await startTestService({ config });
  });
  after(async () => {
    await service.stop();
    await downstream.close();
    await pool.end();
  });

  it('delivery refused, the window closes, then an operator redelivers and a second refusal is marked handled', async () => {
    const deps = {
      prisma: service.prisma,
      temporal: service.temporal,
      taskQueue: service.config.temporal.taskQueue,
      writePolicy: service.config.writePolicy,
    };
    const approvalNo = uniqueApprovalNo('LATE');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    // Refused first, refused again on the redelivery, then marked handled.
    downstream.script(key, [
      { kind: 'status', status: 400 },
      { kind: 'status', status: 400 },
    ]);
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)));
    await statusReaches(service, key, 'DELIVERY_FAILED');
    await service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).result();
    await decideDelivery(deps, { idempotencyKey: key, decision: 'redeliver', decidedBy: 'fixture-recorder' });
    await decideDelivery(deps, { idempotencyKey: key, decision: 'mark-handled', decidedBy: 'fixture-recorder' });
    await statusReaches(service, key, 'DELIVERED');
    const runs: WorkflowExecutionInfo[] = [];
    for await (const run of service.temporal.workflow.list({ query: `WorkflowId = '${deliveryWorkflowIdFor(key)}'` })) {
      runs.push(run);
    }
    runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
    let n = 0;
    for (const run of runs) {
      const history = await service.temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      writeFileSync(`${OUT}delivery-after-window.${++n}.${run.type}.json`, `${historyToJSON(history)}\n`);
    }
    console.log(`delivery-after-window: ${n} run(s)`);
  });
});
