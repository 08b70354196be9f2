// Scale-out without weakening anything: two API instances and two workers, as real processes, on
// one Temporal and one PostgreSQL. Concurrent deliveries to both APIs, a worker killed mid-load,
// and SIGTERM to an API and to a worker during load — every key ends with exactly one order.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import {
  type ApiProcess,
  apiProcess,
  type HttpAnswer,
  processEnv,
  sendApproval,
  workerProcess,
} from '../../tools/harness/processes.js';
import {
  approval,
  createSku,
  orderCount,
  startTestService,
  statusReaches,
  stockOf,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const DRAIN_MS = 1_500;
const WORKER_GRACE_MS = 5_000;

describe('two API instances and two workers on one Temporal and one PostgreSQL', () => {
  let service: TestService;
  let apis: [ApiProcess, ApiProcess];
  let workers: [ManagedProcess, ManagedProcess];

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    const env = processEnv(service.config, {
      SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
      WORKER_SHUTDOWN_GRACE_MS: String(WORKER_GRACE_MS),
      DB_POOL_SIZE: '5',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '3',
    });
    apis = [await apiProcess('api-1', env), await apiProcess('api-2', env)];
    workers = [workerProcess('worker-1', env), workerProcess('worker-2', env)];
    await Promise.all([...apis, ...workers].map((process) => process.start()));
  });
  after(async () => {
    await Promise.all([...apis, ...workers].map((process) => process.kill('SIGKILL')));
    await service.stop();
  });

  /** Every key reaches SUBMITTED with exactly one order, and stock is reserved once per order. */
  async function assertExactlyOnce(keys: string[], sku: string, quantityEach: number) {
    for (const key of keys) {
      await statusReaches(service, key, 'SUBMITTED');
      assert.equal(await orderCount(service.prisma, key), 1, `${key} must have exactly one order`);
    }
    assert.equal((await stockOf(service.prisma, sku)).reserved, keys.length * quantityEach);
  }

  it('the same approval delivered to both APIs at once: one order, one first delivery', async () => {
    const sku = await createSku(service.prisma, 1_000);
    const keys: string[] = [];
    for (let i = 0; i < 8; i++) {
      const approvalNo = uniqueApprovalNo('SCALE');
      keys.push(idempotencyKeyFor(approvalNo, 'MAIN'));
      const body = approval(approvalNo, sku);
      const answers = await Promise.all(apis.map((api) => sendApproval(api.url, body)));
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 202], JSON.stringify(answers));
      assert.equal(answers[0]?.body.workflowId, answers[1]?.body.workflowId);
    }
    await assertExactlyOnce(keys, sku, 2);
  });

  it('one worker killed mid-load: the other finishes every order, none doubled', async () => {
    const sku = await createSku(service.prisma, 1_000);
    const keys: string[] = [];
    const posts: Promise<HttpAnswer>[] = [];
    for (let i = 0; i < 24; i++) {
      const approvalNo = uniqueApprovalNo('KILLW');
      keys.push(idempotencyKeyFor(approvalNo, 'MAIN'));
      posts.push(sendApproval(apis[i % 2 === 0 ? 0 : 1].url, approval(approvalNo, sku)));
      if (i === 8) await workers[0].kill('SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.deepEqual(new Set((await Promise.all(posts)).map((answer) => answer.status)), new Set([202]));
    await assertExactlyOnce(keys, sku, 2);
    await workers[0].start();
  });

  it('SIGTERM to an API during load: only 503 + Retry-After while draining, then it exits; nothing lost or doubled', async () => {
    const sku = await createSku(service.prisma, 1_000);
    const [leaving, staying] = apis;
    const leavingAnswers: (HttpAnswer & { sentAt: number })[] = [];
    let signalledAt = Number.POSITIVE_INFINITY;
    const keys: string[] = [];
    /** An OA side that redelivers to the other instance when one answers 503 or refuses. */
    const deliver = async (body: unknown) => {
      const sentAt = Date.now();
      const first = await sendApproval(leaving.url, body);
      leavingAnswers.push({ ...first, sentAt });
      if (first.status === 200 || first.status === 202) return first;
      return sendApproval(staying.url, body);
    };
    const deliveries: Promise<HttpAnswer>[] = [];
    let stopped: Promise<void> | undefined;
    for (let i = 0; leaving.exit() === undefined || i < 10; i++) {
      const approvalNo = uniqueApprovalNo('TERMA');
      keys.push(idempotencyKeyFor(approvalNo, 'MAIN'));
      deliveries.push(deliver(approval(approvalNo, sku)));
      if (i === 5) {
        signalledAt = Date.now();
        stopped = leaving.kill('SIGTERM');
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(i < 400, 'the API did not exit after SIGTERM');
    }
    await stopped;
    const final = await Promise.all(deliveries);
    assert.deepEqual(new Set(final.map((answer) => answer.status)), new Set([202]));

    assert.deepEqual(leaving.exit(), { code: 0, signal: null });
    const unexpected = leavingAnswers.filter(
      (answer) => ![0, 200, 202, 503].includes(answer.status) || (answer.status === 503 && !answer.retryAfter),
    );
    assert.deepEqual(unexpected, [], 'only 2xx, or 503 with Retry-After, or a closed socket after the drain');
    // The drain keeps the socket open: requests sent well after the signal are still answered
    // (503 + Retry-After), not refused — the time a load balancer needs to notice.
    assert.ok(
      leavingAnswers.some(
        (answer) =>
          answer.status === 503 &&
          answer.body.type === '/problems/shutting-down' &&
          answer.sentAt >= signalledAt + DRAIN_MS / 3,
      ),
      'requests during the drain are answered 503, not refused at the socket',
    );
    await assertExactlyOnce(keys, sku, 2);
    await leaving.start();
  });

  it('SIGTERM to a worker during load: it stops polling, exits 0 within its grace period; the other worker finishes', async () => {
    const sku = await createSku(service.prisma, 1_000);
    const keys: string[] = [];
    const posts: Promise<HttpAnswer>[] = [];
    let stopped: Promise<void> | undefined;
    let signalledAt = 0;
    for (let i = 0; i < 20; i++) {
      const approvalNo = uniqueApprovalNo('TERMW');
      keys.push(idempotencyKeyFor(approvalNo, 'MAIN'));
      posts.push(sendApproval(apis[i % 2 === 0 ? 0 : 1].url, approval(approvalNo, sku)));
      if (i === 6) {
        signalledAt = Date.now();
        stopped = workers[1].kill('SIGTERM');
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await stopped;
    assert.deepEqual(workers[1].exit(), { code: 0, signal: null });
    assert.ok(Date.now() - signalledAt < WORKER_GRACE_MS + 20_000, 'the worker exits within its grace period');
    assert.match(workers[1].output(), /worker stopped/);
    assert.deepEqual(new Set((await Promise.all(posts)).map((answer) => answer.status)), new Set([202]));
    await assertExactlyOnce(keys, sku, 2);
  });
});
