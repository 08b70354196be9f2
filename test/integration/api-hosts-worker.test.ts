// API_HOSTS_WORKER: the API process runs the order worker itself, on the connection its client
// uses, so an approval's workflow gets its first workflow task in the start's answer (eager start)
// instead of through a poll. Real processes on the test's Temporal and PostgreSQL; no standalone
// worker runs, so every order below is written by the API's own worker.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import { startTcpProxy, type TcpProxy } from '../../tools/harness/tcp-proxy.js';
import { makeBuildCurrent, versioningOf } from '../../tools/harness/worker-deployment.js';
import { type ApiProcess, apiProcess, processEnv, sendApproval, workerProcess } from '../../tools/harness/processes.js';
import {
  approval,
  createSku,
  eventually,
  orderCount,
  startTestService,
  stockOf,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';
import { sleep } from '../../tools/harness/time.js';

/**
 * Whether the run's first workflow task was handed out with the start itself. The server writes an
 * eagerly started task in the same batch as the run's start (events 1–3 take consecutive task ids);
 * a task a worker polls for is started in a later write, after the task queue's own bookkeeping
 * took ids in between.
 */
async function startedEagerly(temporal: Client, workflowId: string): Promise<boolean> {
  const events = (await temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const started = events.find((event) => event.workflowExecutionStartedEventAttributes);
  const firstTask = events.find((event) => event.workflowTaskStartedEventAttributes);
  assert.ok(started && firstTask, `${workflowId} has a start and a workflow task`);
  return Number(firstTask.taskId) - Number(started.taskId) === Number(firstTask.eventId) - Number(started.eventId);
}

/** Posts a fresh approval and waits until its run completed; returns the run's workflow id. */
async function orderThrough(api: ApiProcess, service: TestService, sku: string): Promise<string> {
  const approvalNo = uniqueApprovalNo('HOSTED');
  const answer = await sendApproval(api.url, approval(approvalNo, sku));
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  const workflowId = orderWorkflowIdFor(idempotencyKeyFor(approvalNo, 'MAIN'));
  assert.equal(answer.body.workflowId, workflowId);
  await service.temporal.workflow.getHandle(workflowId).result();
  assert.equal(await orderCount(service.prisma, idempotencyKeyFor(approvalNo, 'MAIN')), 1);
  return workflowId;
}

describe('an API that hosts the order worker (API_HOSTS_WORKER=1)', () => {
  let service: TestService;
  let hosting: ApiProcess;

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    hosting = await apiProcess('api-hosting', processEnv(service.config, { API_HOSTS_WORKER: '1' }));
    await hosting.start();
  });
  after(async () => {
    await hosting.kill('SIGKILL');
    await service.stop();
  });

  it('writes the order with no worker process, its first workflow task handed over with the start', async () => {
    const sku = await createSku(service.prisma, 100);
    const workflowIds: string[] = [];
    for (let i = 0; i < 3; i++) workflowIds.push(await orderThrough(hosting, service, sku));
    assert.equal((await stockOf(service.prisma, sku)).reserved, 6);
    for (const workflowId of workflowIds) {
      assert.ok(await startedEagerly(service.temporal, workflowId), `${workflowId} was started eagerly`);
    }
  });

  it('/readyz names the worker it hosts: 200 while it polls', async () => {
    const ready = await fetch(`${hosting.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'ok', database: 'ok', temporal: 'ok', worker: 'ok' });
  });

  it('SIGTERM: drains HTTP (/readyz 503 at once), then stops its worker and exits 0', async () => {
    const stopped = hosting.kill('SIGTERM');
    await eventually('/readyz to answer 503 during the drain', async () => {
      const ready = await fetch(`${hosting.url}/readyz`);
      assert.equal(ready.status, 503);
      return ready;
    });
    await stopped;
    assert.deepEqual(hosting.exit(), { code: 0, signal: null });
    const output = hosting.output();
    assert.ok(output.indexOf('worker stopped') > output.indexOf('draining'), output.slice(-2_000));
    assert.match(output, /api stopped/);
  });
});

describe('an API hosting a versioned worker (TEMPORAL_DEPLOYMENT_NAME + TEMPORAL_BUILD_ID)', () => {
  const version = { deploymentName: `orders-hosted-${randomBytes(3).toString('hex')}`, buildId: 'hosted-1' };
  let service: TestService;
  let hosting: ApiProcess;

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    hosting = await apiProcess(
      'api-hosting-versioned',
      processEnv(service.config, {
        API_HOSTS_WORKER: '1',
        TEMPORAL_DEPLOYMENT_NAME: version.deploymentName,
        TEMPORAL_BUILD_ID: version.buildId,
      }),
    );
    await hosting.start();
  });
  after(async () => {
    await hosting.kill('SIGKILL');
    await service.stop();
  });

  it('polls as its build: once the build is current, the order runs on it, auto-upgrading', async () => {
    assert.match(hosting.output(), new RegExp(`${version.deploymentName}, build ${version.buildId}`));
    await makeBuildCurrent(service.config.temporal.address as string, version);
    const workflowId = await orderThrough(hosting, service, await createSku(service.prisma, 10));
    assert.deepEqual(await versioningOf(service.temporal, workflowId), {
      status: 'COMPLETED',
      buildId: version.buildId,
      behaviour: 'AUTO_UPGRADE',
    });
  });
});

describe('an API hosting the worker, when Temporal refuses connections', () => {
  const START_TIMEOUT_MS = 1_500;
  let service: TestService;
  let proxy: TcpProxy;
  let hosting: ApiProcess;

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    proxy = await startTcpProxy(service.config.temporal.address as string);
    hosting = await apiProcess(
      'api-hosting-proxied',
      processEnv(service.config, {
        API_HOSTS_WORKER: '1',
        TEMPORAL_ADDRESS: proxy.address,
        WEBHOOK_START_TIMEOUT_MS: String(START_TIMEOUT_MS),
      }),
    );
    await hosting.start();
  });
  after(async () => {
    await hosting.kill('SIGKILL');
    await proxy.close();
    await service.stop();
  });

  it('answers 503 at the start deadline, not when the native client gives up retrying', async () => {
    await proxy.setMode({ kind: 'refuse' });
    const approvalNo = uniqueApprovalNo('HOSTED-DARK');
    const body = approval(approvalNo, await createSku(service.prisma, 10));
    const sent = Date.now();
    const answer = await sendApproval(hosting.url, body);
    const waited = Date.now() - sent;
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.ok(answer.retryAfter, 'a 503 carries Retry-After');
    // The native client bounds each attempt by the deadline but goes on retrying a refused
    // connection for seconds (10 s here without the race); the sender must hear back at the start
    // deadline, with room for a slow machine.
    assert.ok(
      waited < START_TIMEOUT_MS * 8,
      `answered after ${waited} ms, the start deadline is ${START_TIMEOUT_MS} ms`,
    );

    // The claim stays for the sender's redelivery: once Temporal is back it starts the one run.
    await proxy.setMode({ kind: 'pass' });
    let again = answer;
    for (let tries = 0; again.status !== 202 && tries < 30; tries++) {
      await sleep(1_000);
      again = await sendApproval(hosting.url, body);
    }
    assert.equal(again.status, 202, JSON.stringify(again.body));
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    await service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).result();
    assert.equal(await orderCount(service.prisma, key), 1);
  });
});

describe('an API without the setting, beside a worker process', () => {
  let service: TestService;
  let api: ApiProcess;
  let worker: ManagedProcess;

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    const env = processEnv(service.config);
    api = await apiProcess('api', env);
    worker = workerProcess('worker', env);
    await Promise.all([api.start(), worker.start()]);
  });
  after(async () => {
    await Promise.all([api.kill('SIGKILL'), worker.kill('SIGKILL')]);
    await service.stop();
  });

  it('writes the order the usual way: the worker polls for the first workflow task', async () => {
    const sku = await createSku(service.prisma, 100);
    const workflowId = await orderThrough(api, service, sku);
    assert.equal(await startedEagerly(service.temporal, workflowId), false);
  });
});
