// Records the histories of representative runs into test/replay/histories/, the fixtures the replay
// test replays against the current workflow code. Run it on the real stack when a workflow change
// is released (after patching, the old fixtures must still replay — keep them, add new ones):
//
//   npm run replay:record
//   RECORD_ONLY='<part of a describe name>' npm run replay:record    (one group, the others kept)
//
// Each scenario drives the service the way production does (webhook, faults, operator decisions)
// and saves every workflow run it produced, as the Temporal CLI / Web UI export histories.
import { randomBytes } from 'node:crypto';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import pg from 'pg';
import { ApplicationFailure } from '@temporalio/common';
import { type ApprovalReceipt, approvalReceiptWorkflowId } from '../../domain/approval-receipts.js';
import { cardDecisionsFor, decisionCardWorkflowId } from '../../domain/decision-cards.js';
import { compensationWorkflowIdFor, idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { cardSendKey, waitingEpisode } from '../../domain-node/decision-card-keys.js';
import { listOrdersAwaitingDecision } from '../../submission/operator-decisions/awaiting.js';
import type { ApprovalReader } from '../../vendors/approval-reader.js';
import { decideDelivery } from '../../submission/operator-decisions/delivery.js';
import { submissionDepsFrom, submitApprovalForm } from '../../submission/submit-approval.js';
import { decideUpdate, deliveryWorkflowIdFor } from '../../workflows/definitions.js';
import { approvalReceiptWorkflow } from '../../workflows/approval-receipt-workflows.js';
import { decisionCardWorkflow } from '../../workflows/decision-card-workflows.js';
import { duplicateScanWorkflow, retentionPurgeWorkflow } from '../../workflows/safety-net-workflows.js';
import { FaultPlan, faultyActivities } from '../../tools/harness/faults.js';
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
} from '../../tools/harness/service.js';

// Always the current shape: fixtures of earlier shapes live in folders of their own and stay as recorded.
// Into the checkout's folder, also when this file runs from a test build: the build links each
// source file back to the checkout, and a fixture recorded into the build would vanish with it.
const OUT = `${path.dirname(realpathSync(fileURLToPath(import.meta.url).replace(/\.js$/, '.ts')))}/histories/`;
/** Records only the groups whose name contains RECORD_ONLY; the others' fixtures stay as they are. */
const only = process.env.RECORD_ONLY;
const group = (name: string) => [name, { skip: only !== undefined && !name.includes(only) }] as const;
const SECRET = 'replay-downstream-secret-0123456789';

/** Saves every closed run of these workflow ids as `<scenario>.<n>.json`. */
async function save(service: TestService, scenario: string, workflowIds: string[]) {
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

describe(...group('record replay fixtures'), () => {
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
    await save(service, 'first-delivery', [orderWorkflowIdFor(key)]);
  });

  it('lost response after the commit, then the retry finds the order', async () => {
    const approvalNo = uniqueApprovalNo('LOST');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    plan.set(approvalNo, { kind: 'lost-response' });
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)));
    await statusReaches(service, key, 'DELIVERED');
    await save(service, 'lost-response-retry', [orderWorkflowIdFor(key)]);
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
    await save(service, 'compensation-resubmit', [orderWorkflowIdFor(key), compensationWorkflowIdFor(key)]);
  });

  it('compensation, then abandon', async () => {
    const approvalNo = uniqueApprovalNo('ABANDON');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 1)));
    await statusReaches(service, key, 'COMPENSATING');
    await decide(compensationWorkflowIdFor(key), 'abandon');
    await statusReaches(service, key, 'COMPENSATED');
    await save(service, 'compensation-abandon', [orderWorkflowIdFor(key), compensationWorkflowIdFor(key)]);
  });

  it('delivery refused, then an operator redelivers', async () => {
    const approvalNo = uniqueApprovalNo('REDELIVER');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    downstream.script(key, [{ kind: 'status', status: 400 }]);
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)));
    await statusReaches(service, key, 'DELIVERY_FAILED');
    await decide(orderWorkflowIdFor(key), 'redeliver');
    await statusReaches(service, key, 'DELIVERED');
    await save(service, 'delivery-failed-redeliver', [orderWorkflowIdFor(key)]);
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
    await save(service, 'safety-nets', ids);
  });
});

describe(...group('record replay fixtures: decisions after the decision window closed'), () => {
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

describe(...group('record replay fixtures: an order read from an OA approval form'), () => {
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;
  const forms = new Map<string, string>();
  // The OA's open API, as the workflow's first step sees it: the instance approved, its form.
  const reader: ApprovalReader = {
    vendor: 'feishu',
    readInstance: (instanceId) =>
      Promise.resolve({
        vendor: 'feishu',
        instanceId,
        status: 'APPROVED',
        approvedAt: '2026-12-01T09:30:00.000Z',
        form: {
          fields: { 'Customer ID': 'CUST-OA-REPLAY', Currency: 'CNY' },
          tables: { Items: [{ SKU: forms.get(instanceId) ?? 'missing', Quantity: '2', 'Unit price': '3.50' }] },
        },
      }),
  };

  before(async () => {
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
    downstream = await startScriptedDownstream(pool, SECRET, `replay_${randomBytes(3).toString('hex')}`);
    const config = testConfig({
      DOWNSTREAM_URL: downstream.url,
      DOWNSTREAM_SECRET: SECRET,
      OA_FORM_MAPPING: fileURLToPath(new URL('../../examples/oa-form-mapping.json', import.meta.url)),
    });
    service = await startTestService({ config, readers: { feishu: reader } });
  });
  after(async () => {
    await service.stop();
    await downstream.close();
    await pool.end();
  });

  it('a Feishu approval: the form read and mapped, the order written and delivered', async () => {
    const instanceId = uniqueApprovalNo('OAFORM');
    const key = idempotencyKeyFor(instanceId, 'MAIN');
    forms.set(instanceId, await createSku(service.prisma, 10));
    await submitApprovalForm({
      deps: submissionDepsFrom(service.config, service.prisma, service.temporal),
      form: { vendor: 'feishu', instanceId },
    });
    await statusReaches(service, key, 'DELIVERED');
    await save(service, 'oa-form-order', [orderWorkflowIdFor(key)]);
  });
});

describe(...group('record replay fixtures: a start that waits for the write (Update-with-Start)'), () => {
  let service: TestService;

  before(async () => {
    service = await startTestService();
  });
  after(() => service.stop());

  it('a webhook delivery with Prefer: wait, answered 201 with the order number', async () => {
    const approvalNo = uniqueApprovalNo('UWS');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const response = await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)), {
      prefer: 'wait=10',
    });
    if (response.statusCode !== 201) throw new Error(`expected 201, got ${response.statusCode} ${response.body}`);
    await save(service, 'update-with-start', [orderWorkflowIdFor(key)]);
  });
});

describe(...group('record replay fixtures: a commit that lands after reconciliation'), () => {
  const plan = new FaultPlan();
  let service: TestService;

  before(async () => {
    const config = testConfig();
    service = await startTestService({
      config,
      activities: await faultyActivities(plan, { startToCloseMs: config.writePolicy.startToCloseMs }),
    });
  });
  after(() => service.stop());

  it('the write gives up before its commit lands; compensation looks again, finds the order and carries it on', async () => {
    const approvalNo = uniqueApprovalNo('LATE');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    plan.set(approvalNo, { kind: 'commit-after-reconciliation' });
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)));
    await eventually(`${key} to be carried on`, async () => {
      const runs = [];
      for await (const run of service.temporal.workflow.list({ query: `WorkflowId = '${orderWorkflowIdFor(key)}'` })) {
        runs.push(run);
      }
      return runs.length === 2 && runs.every((run) => run.closeTime) ? true : undefined;
    });
    await save(service, 'compensation-landed-late', [orderWorkflowIdFor(key), compensationWorkflowIdFor(key)]);
  });
});

describe(...group('record replay fixtures: a decision card'), () => {
  let service: TestService;

  before(async () => {
    // The chat stood in for: the post and the redraw answer as a vendor's would; the key's state is read for real.
    service = await startTestService({
      activities: (real) => ({
        ...real,
        sendDecisionCard: () => Promise.resolve({ messageId: 'om_fixture' }),
        refreshDecisionCard: () => Promise.resolve(),
      }),
    });
  });
  after(() => service.stop());

  it('a card posted for a key waiting in compensation, looked at until an operator abandons it, then redrawn', async () => {
    const approvalNo = uniqueApprovalNo('CARD');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    // One in stock, two ordered: the write fails for good and waits for a decision.
    await postApproval(service, approval(approvalNo, await createSku(service.prisma, 1)));
    await statusReaches(service, key, 'COMPENSATING');
    const [entry] = await eventually(`${key} in the awaiting list`, async () => {
      const found = await listOrdersAwaitingDecision(service.prisma, 10, { idempotencyKey: key });
      return found.length > 0 ? found : undefined;
    });
    if (!entry) throw new Error(`${key} does not wait`);
    const episode = waitingEpisode(entry.status, entry.waitingSince);
    const workflowId = decisionCardWorkflowId('feishu', key, episode);
    const card = await service.temporal.workflow.start(decisionCardWorkflow, {
      taskQueue: service.config.temporal.taskQueue,
      workflowId,
      args: [
        {
          vendor: 'feishu',
          card: {
            idempotencyKey: key,
            episode,
            waitingIn: entry.status,
            customerId: entry.customerId,
            amount: `${entry.totalAmount} ${entry.currency}`,
            cause: { code: 'insufficient-stock', sentence: 'fixture' },
            waitingSince: entry.waitingSince,
            decisions: cardDecisionsFor(entry.nextActions),
          },
          sendKey: cardSendKey('feishu', key, episode),
          lookEveryMs: 200,
        },
      ],
    });
    await eventually(`${workflowId} to look at its key`, async () =>
      (await card.fetchHistory()).events?.some((event) => event.timerStartedEventAttributes) ? true : undefined,
    );
    await service.temporal.workflow
      .getHandle(compensationWorkflowIdFor(key))
      .executeUpdate(decideUpdate, { args: [{ decision: 'abandon', decidedBy: 'fixture-recorder' }] });
    await card.result();
    await save(service, 'decision-card', [workflowId]);
  });
});

describe(...group('record replay fixtures: an approval receipt'), () => {
  let service: TestService;

  before(async () => {
    // The vendor stood in for: one receipt posts, the other is refused for good and recorded failed.
    service = await startTestService({
      activities: (real) => ({
        ...real,
        postApprovalReceipt: (receipt: ApprovalReceipt) =>
          receipt.instanceId.endsWith('-REFUSED')
            ? Promise.reject(
                ApplicationFailure.create({ type: 'OaApiRefused', message: 'fixture refusal', nonRetryable: true }),
              )
            : Promise.resolve({ postedId: 'fixture-comment', found: false }),
      }),
    });
  });
  after(() => service.stop());

  it('a receipt posted, and one refused for good and recorded failed', async () => {
    const workflowIds: string[] = [];
    for (const outcome of ['POSTED', 'REFUSED']) {
      const instanceId = `${uniqueApprovalNo('RCPT')}-${outcome}`;
      const receipt: ApprovalReceipt = {
        vendor: 'feishu',
        idempotencyKey: idempotencyKeyFor(instanceId, 'MAIN'),
        instanceId,
        orderNo: 'SO-20261206-00000001',
      };
      const workflowId = approvalReceiptWorkflowId(receipt.idempotencyKey);
      await service.temporal.workflow.execute(approvalReceiptWorkflow, {
        taskQueue: service.config.temporal.taskQueue,
        workflowId,
        args: [receipt],
      });
      workflowIds.push(workflowId);
    }
    await save(service, 'approval-receipt', workflowIds);
  });
});
