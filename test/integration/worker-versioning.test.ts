// A workflow change rolled out with Worker Deployment Versioning on the dev server, the way
// docs/production.md ("Rolling out a release") tells a platform team to, every step an `orders-cli
// builds` command: build A's workers hold orders in every waiting state, build B's workers start
// beside them with a changed order workflow, B is ramped then promoted, A is still needed while a
// run is pinned to it, then drained; A's workers stop and A is retired; the decisions are taken,
// and every order finishes on the build its behaviour promises, printed as a table.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { bundleWorkflowCode, DefaultLogger, type Worker } from '@temporalio/worker';
import pg from 'pg';
import type { createActivities } from '../../activities/index.js';
import { compensationWorkflowIdFor, idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { decideCompensation } from '../../submission/operator-decisions/compensation.js';
import { decideDelivery } from '../../submission/operator-decisions/delivery.js';
import { workerSlots } from '../../worker/worker-slots.js';
import { temporalTargetFrom } from '../../services/temporal/connection.js';
import { type runsByBuild } from '../../services/temporal/worker-deployment.js';
import { connectWorker, createWorker } from '../../worker/create-worker.js';
import { historyFromServer, replayHistories } from '../../worker/replay.js';
import { type WorkflowCode, workflowCode } from '../../worker/workflow-bundle.js';
import { startScriptedDownstream, type ScriptedDownstream } from '../../tools/harness/scripted-downstream.js';
import { type Stack, startStack } from '../../tools/harness/stack.js';
import { versioningOf } from '../../tools/harness/worker-deployment.js';
import { cliInProcess } from '../../tools/harness/operator-cli.js';
import { table } from '../../edges/cli/table.js';
import { ROLLOUT_CHANGE } from '../../tools/harness/rollout/change.js';
import {
  approval,
  createSku,
  eventually,
  postApproval,
  stackEnv,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const SECRET = 'rollout-downstream-secret-0123456789';
/** Named as the Temporal Worker Controller names a deployment: `<namespace>/<name>`. */
const DEPLOYMENT = `orders/rollout-${randomBytes(3).toString('hex')}`;

type Activities = ReturnType<typeof createActivities>;

/** What the test does to the real activities of both builds, by key: the waiting states. */
const faults = {
  /** The write is refused for good: compensation, waiting for an operator. */
  refuseWrite: new Set<string>(),
  /** The downstream refuses the event for good: DELIVERY_FAILED, waiting for an operator. */
  refuseDelivery: new Set<string>(),
  /** The downstream is unavailable: the delivery is retried (written and delivering). */
  holdDelivery: new Set<string>(),
  /** Delivery attempts held so far, by key. */
  heldAttempts: new Map<string, number>(),
  /** A duplicate scan waits inside its activity until this settles: a pinned run, open on its build. */
  scanGate: gate(),
  scanStarted: false,
};

function gate(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}

type History = Awaited<ReturnType<typeof historyFromServer>>['history'];

/** Whether the run recorded B's patch marker: it was started by B and took the new step. */
function tookNewStep(history: History): boolean {
  return (history.events ?? []).some((event) =>
    Object.values(event.markerRecordedEventAttributes?.details ?? {}).some((payloads) =>
      payloads.payloads?.some((payload) =>
        Buffer.from(payload.data ?? [])
          .toString('utf8')
          .includes(ROLLOUT_CHANGE),
      ),
    ),
  );
}

function withFaults(real: Activities): Activities {
  return {
    ...real,
    writeOrder: async (input) => {
      if (faults.refuseWrite.has(input.idempotencyKey)) {
        throw ApplicationFailure.nonRetryable('refused by the rollout test', 'BusinessRuleViolation');
      }
      return real.writeOrder(input);
    },
    deliverOrderEvent: async (input) => {
      const key = input.order.idempotencyKey;
      if (faults.holdDelivery.has(key)) {
        faults.heldAttempts.set(key, (faults.heldAttempts.get(key) ?? 0) + 1);
        throw ApplicationFailure.retryable(
          'downstream unavailable (held by the rollout test)',
          'DownstreamUnavailable',
        );
      }
      if (faults.refuseDelivery.has(key)) {
        throw ApplicationFailure.nonRetryable('refused by the rollout test', 'DownstreamRejected');
      }
      return real.deliverOrderEvent(input);
    },
    scanForDuplicateOrders: async (options) => {
      faults.scanStarted = true;
      await faults.scanGate.promise;
      return real.scanForDuplicateOrders(options);
    },
  };
}

interface RunningBuild {
  buildId: string;
  worker: Worker;
  stop: () => Promise<void>;
}

describe('rolling out a workflow change with Worker Deployment Versioning', () => {
  let temporal: Stack;
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;
  let codeA: WorkflowCode;
  let codeB: WorkflowCode;
  const started: RunningBuild[] = [];
  const histories: Awaited<ReturnType<typeof historyFromServer>>[] = [];

  before(async () => {
    // A Temporal of its own, on the timings that let a retired build end in seconds (the suite's
    // shared one runs on the server's own: an idle poll answered after a minute), beside the
    // file's database.
    temporal = await startStack({
      dataDir: os.tmpdir(),
      databaseUrl: stackEnv().databaseUrl,
      persistTemporal: false,
      headless: true,
    });
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
    downstream = await startScriptedDownstream(pool, SECRET, `rollout_${randomBytes(3).toString('hex')}`);
    const config = testConfig({
      TEMPORAL_ADDRESS: temporal.temporalAddress,
      DOWNSTREAM_URL: downstream.url,
      DOWNSTREAM_SECRET: SECRET,
      TEMPORAL_DEPLOYMENT_NAME: DEPLOYMENT,
      TEMPORAL_BUILD_ID: 'build-a',
      // A held delivery keeps retrying (about once a second) for as long as the test holds it.
      RETRY_MAX_ATTEMPTS: '100',
      ACTIVITY_SCHEDULE_TO_CLOSE_MS: '150000',
      COMPENSATION_DECISION_TIMEOUT_MS: '600000',
    });
    service = await startTestService({ config, inProcessWorker: false });
    codeA = await workflowCode({ traced: false, dir: config.worker.bundleDir });
    codeB = await bundle('build-b-workflows.ts');
  });

  after(async () => {
    faults.scanGate.resolve();
    for (const build of started) await build.stop();
    await service?.stop();
    await downstream?.close();
    await pool?.end();
    await temporal?.stop();
  });

  async function bundle(file: string): Promise<WorkflowCode> {
    const { code } = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL(`../../tools/harness/rollout/${file}`, import.meta.url)),
      logger: new DefaultLogger('WARN'),
    });
    return { code };
  }

  /** A build's workers (one here), versioned, polling the service's task queue. */
  async function startBuild(buildId: string, workflows: WorkflowCode): Promise<RunningBuild> {
    const { config } = service;
    const connection = await connectWorker(temporalTargetFrom(config.temporal));
    const worker = await createWorker({
      workflows,
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      prisma: service.prisma,
      temporal: service.temporal,
      downstream: config.downstream,
      deployment: { deploymentName: DEPLOYMENT, buildId },
      slots: workerSlots(config, false),
      activities: (real) => withFaults(real),
    });
    const running = worker.run();
    let stopped: Promise<void> | undefined;
    const build = {
      buildId,
      worker,
      stop: () =>
        (stopped ??= (async () => {
          if (worker.getState() === 'RUNNING') worker.shutdown();
          await running;
          await connection.close();
        })()),
    };
    started.push(build);
    return build;
  }

  /** `orders-cli builds …` as the operator types it, on the deployment of the test. */
  async function builds(...args: string[]) {
    // The operator's shell has the Worker Controller's name of the build; the service has its own.
    const run = await cliInProcess(service, ['builds', ...args, '--json'], {
      TEMPORAL_DEPLOYMENT_NAME: DEPLOYMENT,
      TEMPORAL_WORKER_BUILD_ID: 'operator',
    });
    return { code: run.code, stderr: run.stderr, data: JSON.parse(run.stdout || 'null') as Record<string, unknown> };
  }

  async function step(...args: string[]) {
    const run = await builds(...args);
    assert.equal(run.code, 0, `orders-cli builds ${args.join(' ')}: ${run.stderr} ${JSON.stringify(run.data)}`);
    return run.data;
  }

  it('moves the waiting orders to build B, drains the pinned run on build A, and lets A stop', async () => {
    const { config } = service;
    await startBuild('build-a', codeA);
    await step('promote', 'build-a');

    // Build A holds orders in every waiting state, and one pinned run (a duplicate scan).
    const delivering = idempotencyKeyFor(uniqueApprovalNo('RO-DLV'), 'MAIN');
    const compensating = idempotencyKeyFor(uniqueApprovalNo('RO-CMP'), 'MAIN');
    const deliveryFailed = idempotencyKeyFor(uniqueApprovalNo('RO-DF'), 'MAIN');
    faults.holdDelivery.add(delivering);
    faults.refuseWrite.add(compensating);
    faults.refuseDelivery.add(deliveryFailed);
    for (const key of [delivering, compensating, deliveryFailed]) await submitKey(key);
    const scanId = `rollout-scan-${randomBytes(3).toString('hex')}`;
    await service.temporal.workflow.start('duplicateScanWorkflow', {
      workflowId: scanId,
      taskQueue: config.temporal.taskQueue,
      args: [{ lookbackMinutes: 5, nearWindowMinutes: 1 }],
    });
    await statusReaches(service, compensating, 'COMPENSATING');
    await statusReaches(service, deliveryFailed, 'DELIVERY_FAILED');
    await eventually('the held delivery to be retried', () =>
      Promise.resolve((faults.heldAttempts.get(delivering) ?? 0) >= 2 ? true : undefined),
    );
    await eventually('the scan to be running', () => Promise.resolve(faults.scanStarted ? true : undefined));
    for (const id of [orderWorkflowIdFor(delivering), compensationWorkflowIdFor(compensating), scanId]) {
      assert.equal((await versioningOf(service.temporal, id)).buildId, 'build-a', `${id} started on build A`);
    }

    // Build B beside A: ramped (all of the new runs, so that the one below lands there for sure),
    // then current.
    await startBuild('build-b', codeB);
    assert.equal(
      (await step('ramp', 'build-b', '--percentage', '100')).routed,
      true,
      'the ramp has reached every partition',
    );
    const ramped = idempotencyKeyFor(uniqueApprovalNo('RO-RMP'), 'MAIN');
    await submitKey(ramped);
    await statusReaches(service, ramped, 'DELIVERED');
    assert.equal((await versioningOf(service.temporal, orderWorkflowIdFor(ramped))).buildId, 'build-b', 'ramped');
    await step('promote', 'build-b');
    const listed = (await step()) as unknown as Awaited<ReturnType<typeof runsByBuild>>;
    const onA = listed.builds.find((build) => build.buildId === 'build-a');
    assert.deepEqual(
      { routing: onA?.routing, pinned: onA?.pinnedRuns },
      { routing: 'none', pinned: 1 },
      'the scan is still pinned to A',
    );
    assert.equal(listed.builds.find((build) => build.buildId === 'build-b')?.routing, 'current');

    // A mistyped step changes nothing: usage, exit code 2.
    for (const args of [
      ['ramp', 'build-b'],
      ['roll', 'build-b'],
      ['promote'],
      ['ramp', 'build-b', '--percentage', '101'],
    ]) {
      assert.equal((await builds(...args)).code, 2, `orders-cli builds ${args.join(' ')}`);
    }

    // A is still needed while the scan is pinned to it: neither drained nor retired.
    const stillNeeded = await builds('drained', 'build-a');
    assert.equal(stillNeeded.code, 1, 'drained answers 1 while a run is pinned to A');
    assert.deepEqual(stillNeeded.data.reasons, ['1 run(s) pinned to it are open']);
    const tooEarly = await builds('retire', 'build-a');
    assert.equal(tooEarly.code, 1, 'retire refuses a build still needed');

    // The pinned run finishes where it started; then nothing holds A and its workers stop.
    faults.scanGate.resolve();
    await service.temporal.workflow.getHandle(scanId).result();
    assert.deepEqual(await versioningOf(service.temporal, scanId), {
      status: 'COMPLETED',
      buildId: 'build-a',
      behaviour: 'PINNED',
    });
    assert.equal((await step('drained', 'build-a', '--wait-seconds', '120')).drained, true);
    await started.find((build) => build.buildId === 'build-a')?.stop();
    // Retired once the server no longer counts A's workers as polling.
    await step('retire', 'build-a', '--wait-seconds', '120');
    const left = (await step()) as unknown as Awaited<ReturnType<typeof runsByBuild>>;
    assert.deepEqual(
      left.builds.map((build) => [build.buildId, build.routing]),
      [['build-b', 'current']],
    );

    // The waiting orders go on, on B alone: the downstream is back, the operators decide.
    faults.holdDelivery.delete(delivering);
    faults.refuseWrite.delete(compensating);
    faults.refuseDelivery.delete(deliveryFailed);
    await decideCompensation(service.temporal, {
      idempotencyKey: compensating,
      decision: 'resubmit',
      decidedBy: 'rollout-test',
    });
    const operator = {
      prisma: service.prisma,
      temporal: service.temporal,
      taskQueue: config.temporal.taskQueue,
      writePolicy: config.writePolicy,
    };
    await decideDelivery(operator, {
      idempotencyKey: deliveryFailed,
      decision: 'redeliver',
      decidedBy: 'rollout-test',
    });
    const fresh = idempotencyKeyFor(uniqueApprovalNo('RO-NEW'), 'MAIN');
    await submitKey(fresh);
    for (const key of [delivering, compensating, deliveryFailed, fresh, ramped]) {
      await statusReaches(service, key, 'DELIVERED');
      const written = await service.prisma.orderMain.count({ where: { idempotentKey: key } });
      assert.equal(written, 1, `${key}: one order`);
    }

    // Every run finished on the build its behaviour promises, and none hit a determinism error.
    const rows: string[][] = [];
    for (const [waited, key] of [
      ['delivering', delivering],
      ['DELIVERY_FAILED', deliveryFailed],
      ['COMPENSATING', compensating],
      ['ramped to B', ramped],
      ['after the switch', fresh],
    ] as const) {
      const id = orderWorkflowIdFor(key);
      const where = await versioningOf(service.temporal, id);
      const record = await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
      const orders = await service.prisma.orderMain.count({ where: { idempotentKey: key } });
      rows.push([waited, key, where.buildId ?? '-', where.status, record?.status ?? '-', String(orders)]);
    }
    const scan = await versioningOf(service.temporal, scanId);
    rows.push(['pinned (a scan)', scanId, scan.buildId ?? '-', scan.status, '-', '-']);
    console.log(
      `rollout, A to B: where each order finished\n${table(['WAITED', 'KEY', 'BUILD', 'RUN', 'STATUS', 'ORDERS'], rows)}`,
    );
    for (const key of [delivering, deliveryFailed, compensating, fresh, ramped]) {
      const id = orderWorkflowIdFor(key);
      await service.temporal.workflow.getHandle(id).result();
      assert.deepEqual(
        await versioningOf(service.temporal, id),
        { status: 'COMPLETED', buildId: 'build-b', behaviour: 'AUTO_UPGRADE' },
        id,
      );
    }
    await eventually('compensation to close', async () =>
      (await versioningOf(service.temporal, compensationWorkflowIdFor(compensating))).status === 'COMPLETED'
        ? true
        : undefined,
    );
    assert.equal((await versioningOf(service.temporal, compensationWorkflowIdFor(compensating))).buildId, 'build-b');
    const workflowIds = [delivering, deliveryFailed, compensating, fresh].map((key) => orderWorkflowIdFor(key));
    for (const id of [...workflowIds, compensationWorkflowIdFor(compensating), scanId]) {
      const runs = service.temporal.workflow.list({ query: `WorkflowId = '${id}'` });
      for await (const execution of runs) {
        const history = await historyFromServer(service.temporal, id, execution.runId);
        histories.push(history);
        const failedTasks = (history.history.events ?? []).filter((event) => event.workflowTaskFailedEventAttributes);
        assert.deepEqual(
          failedTasks.map((event) => event.workflowTaskFailedEventAttributes?.failure?.message),
          [],
          id,
        );
      }
    }
    // Only the runs B started took the new step; the ones that moved there skipped it.
    const historyOf = (workflowId: string) => service.temporal.workflow.getHandle(workflowId).fetchHistory();
    assert.equal(tookNewStep(await historyOf(orderWorkflowIdFor(fresh))), true, 'a new order ran the new step on B');
    assert.equal(tookNewStep(await historyOf(orderWorkflowIdFor(delivering))), false, 'a moved order skipped it');
    assert.equal(
      started.find((build) => build.buildId === 'build-a')?.worker.getState(),
      'STOPPED',
      "A's workers had stopped before the waiting orders finished",
    );
  });

  async function submitKey(key: string) {
    const approvalNo = key.split(':')[1] as string;
    const sku = await createSku(service.prisma, 100);
    const answer = await postApproval(service, approval(approvalNo, sku));
    assert.equal(answer.statusCode, 202, answer.body);
  }

  it('catches the same change without patched() before B is made current: the replay check of the runs A started fails', async () => {
    const orderRuns = histories.filter((history) => history.name.startsWith('order-') && !tookNewStep(history.history));
    assert.ok(orderRuns.length >= 3, `runs A started: ${orderRuns.map((history) => history.name).join(', ')}`);
    const broken = await replayHistories(orderRuns, { workflows: await bundle('build-b-unpatched-workflows.ts') });
    assert.ok(broken.length > 0 && broken.every((outcome) => !outcome.ok), JSON.stringify(broken));
    assert.match(broken[0]?.error ?? '', /nondetermin/i);
    const patched = await replayHistories(orderRuns, { workflows: codeB });
    assert.deepEqual(
      patched.filter((outcome) => !outcome.ok),
      [],
    );
  });
});
