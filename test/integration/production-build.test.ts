// The production entry points as shipped: `npm run build`, then the built API and worker run by
// plain node (no tsx, no dev tooling), starting no embedded service, submit an order.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { type ApiProcess, apiProcess, processEnv, sendApproval, workerProcess } from '../support/processes.js';
import {
  approval,
  createSku,
  orderCount,
  startTestService,
  statusReaches,
  type TestService,
  uniqueApprovalNo,
} from '../support/service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the built production entry points (npm run build; start:api, start:worker)', () => {
  let service: TestService;
  let api: ApiProcess;
  let worker: ManagedProcess;

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'pipe' });
    // Plain node: whatever loader the test runner uses must not leak into the processes.
    // Empty is unset: the bundle shipped in dist/, not the one the test run built for its workers.
    const env = processEnv(service.config, { NODE_ENV: 'production', NODE_OPTIONS: '', WORKFLOW_BUNDLE_DIR: '' });
    api = await apiProcess('api-dist', env, 'dist');
    worker = workerProcess('worker-dist', env, 'dist');
    await Promise.all([api.start(), worker.start()]);
  });
  after(async () => {
    await Promise.all([api.kill('SIGTERM'), worker.kill('SIGTERM')]);
    await service.stop();
  });

  it('runs from dist/ with plain node and writes one order', async () => {
    const approvalNo = uniqueApprovalNo('DIST');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, await createSku(service.prisma, 10));
    assert.equal((await sendApproval(api.url, body)).status, 202);
    assert.equal((await sendApproval(api.url, body)).status, 200);
    await statusReaches(service, key, 'SUBMITTED');
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('runs the workflow bundle the build wrote, and bundles nothing at start', () => {
    const shipped = path.join(ROOT, 'dist', 'workflow-bundles', 'workflows.js');
    assert.ok(existsSync(shipped), 'npm run build writes dist/workflow-bundles/workflows.js');
    const polling = worker
      .output()
      .split('\n')
      .find((line) => line.includes('worker polling'));
    assert.ok(polling, `the worker logged its start:\n${worker.output().slice(-2_000)}`);
    assert.equal((JSON.parse(polling) as { workflows?: string }).workflows, `prebuilt ${shipped}`);
  });
});
