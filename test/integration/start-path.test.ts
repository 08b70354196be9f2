// The promises around the one order row, at the start path: exactly one delivery hears "first",
// a start whose answer was lost is never forgotten, a redelivery never overrides an operator (also
// after Temporal's history is gone), a conflicting payload leaves nothing behind, and
// reconciliation never releases a live order's stock. The edge under test reaches Temporal through
// a proxy that delays, swallows or refuses; the worker reaches it directly.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import pg from 'pg';
import { findRecord } from '../../services/db/idempotency-records.js';
import { insertOrderWithReservation } from '../../services/db/order-repository.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { listOrdersAwaitingDecision } from '../../submission/operator-decisions/awaiting.js';
import { decideCompensation } from '../../submission/operator-decisions/compensation.js';
import { submissionDepsFrom, submitApproval, workflowInputFor } from '../../submission/submit-approval.js';
import { startCompensationWorkflow } from '../../services/temporal/order-workflows.js';
import type { TcpProxy } from '../../tools/harness/tcp-proxy.js';
import { sleep } from '../../tools/harness/time.js';
import {
  approval,
  type ApprovalBody,
  createSku,
  eventually,
  orderCount,
  postApproval,
  statusReaches,
  stockOf,
  startTestService,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  type WebhookAnswer,
  workflowExists,
} from '../../tools/harness/service.js';
import { type ProxiedEdge, startProxiedEdge } from '../../tools/harness/proxied-edge.js';

describe('the start path keeps its promises around the one order', () => {
  let service: TestService;
  let proxied: ProxiedEdge;
  let proxy: TcpProxy;
  let proxiedTemporal: Client;
  /** The HTTP edge under test: it reaches Temporal only through the proxy. */
  let edge: ProxiedEdge['edge'];

  before(async () => {
    service = await startTestService({ config: testConfig({ WEBHOOK_START_TIMEOUT_MS: '3000' }) });
    proxied = await startProxiedEdge(service);
    ({ proxy, temporal: proxiedTemporal, edge } = proxied);
  });
  after(async () => {
    await proxied.close();
    await service.stop();
  });
  beforeEach(() => proxy.setMode({ kind: 'pass' }));

  /** One delivery whose start reaches Temporal while its answer is lost, then the line goes down. */
  async function deliverWithLostAnswer(body: ApprovalBody, key: string) {
    await proxiedTemporal.workflowService.getSystemInfo({}); // the connection is up before the fault
    await proxy.setMode({ kind: 'swallow-replies' });
    const answer = postApproval({ app: edge }, body);
    await eventually('the start to reach Temporal', async () =>
      (await workflowExists(service.temporal, `order-${key}`)) ? true : undefined,
    );
    await proxy.setMode({ kind: 'refuse' });
    const response = await answer;
    await proxy.setMode({ kind: 'pass' });
    return response;
  }

  it('five concurrent deliveries of a fresh key get exactly one 202, also when Temporal answers the start late', async () => {
    // The start's answer comes late, but within this edge's start deadline however slow the
    // machine is: what is under test is the duplicates' answer, not the deadline (a late answer
    // past the deadline is the lost-answer case below).
    const patient = await startProxiedEdge(service, {
      config: { ...service.config, http: { ...service.config.http, startTimeoutMs: 60_000 } },
    });
    try {
      const sku = await createSku(service.prisma, 100);
      const approvalNo = uniqueApprovalNo('LATE');
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      const body = approval(approvalNo, sku);
      await patient.temporal.workflowService.getSystemInfo({});
      // The starter's answer arrives after the worker (which reaches Temporal directly) wrote the order.
      await patient.proxy.setMode({ kind: 'delay-replies', ms: 2_500 });
      const first = postApproval({ app: patient.edge }, body);
      await eventually('the order to be written', async () =>
        (await orderCount(service.prisma, key)) === 1 ? true : undefined,
      );
      const others = await Promise.all(Array.from({ length: 4 }, () => postApproval({ app: patient.edge }, body)));
      const responses = [await first, ...others];

      assert.deepEqual(
        responses.map((response) => response.statusCode).sort(),
        [200, 200, 200, 200, 202],
        responses.map((response) => response.body).join('\n'),
      );
      assert.equal(responses.filter((response) => !response.json<WebhookAnswer>().duplicate).length, 1);
      assert.equal(await orderCount(service.prisma, key), 1);
      assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 100, reserved: 2 });
    } finally {
      await patient.close();
    }
  });

  it('a start whose answer was lost keeps its claim: the run it started records its status for operators', async () => {
    const sku = await createSku(service.prisma, 1);
    const approvalNo = uniqueApprovalNo('LOSTSTART');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    // More than the stock: the write fails for good and the key waits in compensation.
    const body = approval(approvalNo, sku, {
      order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku, quantity: 5, unitPrice: '1.00' }] },
    });

    const response = await deliverWithLostAnswer(body, key);
    assert.equal(response.statusCode, 503, response.body);
    assert.ok(await findRecord(service.prisma, key), 'the claim is kept: the start may have happened');

    await statusReaches(service, key, 'COMPENSATING');
    const awaiting = await listOrdersAwaitingDecision(service.prisma, 500);
    assert.ok(
      awaiting.some((entry) => entry.idempotencyKey === key),
      'operators see the key waiting for a decision',
    );
  });

  it('after a lost start answer and an abandon, a redelivery once the histories are gone writes nothing', async () => {
    const sku = await createSku(service.prisma, 1);
    const approvalNo = uniqueApprovalNo('ABANDONED');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku, {
      order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku, quantity: 5, unitPrice: '1.00' }] },
    });
    assert.equal((await deliverWithLostAnswer(body, key)).statusCode, 503);
    await eventually('compensation to wait for a decision', async () => {
      try {
        return await decideCompensation(service.temporal, {
          idempotencyKey: key,
          decision: 'abandon',
          decidedBy: 'test:operator',
        });
      } catch {
        return undefined;
      }
    });
    await statusReaches(service, key, 'COMPENSATED');

    // Temporal's retention removes the closed runs; the stock that was short arrives.
    await deleteHistory(service, `order-${key}`);
    await deleteHistory(service, `compensation-${key}`);
    await service.prisma.inventory.update({ where: { sku }, data: { onHand: 100 } });

    // The first delivery answered with success hears 202 (the first one heard 503), and the
    // status says the operator's decision stands.
    const redelivery = await postApproval({ app: edge }, body);
    assert.equal(redelivery.statusCode, 202, redelivery.body);
    assert.equal(redelivery.json<WebhookAnswer>().status, 'COMPENSATED');
    const again = await postApproval({ app: edge }, body);
    assert.deepEqual([again.statusCode, again.json<WebhookAnswer>().status], [200, 'COMPENSATED']);
    await sleep(1_500); // time enough for a wrongly started run to write
    assert.equal(await workflowExists(service.temporal, `order-${key}`), false, 'no run was started');
    assert.equal(await orderCount(service.prisma, key), 0, 'the abandoned order is not written');
  });

  it('a conflicting delivery whose process dies mid-way leaves no claim: the right redelivery is answered 200', async () => {
    const sku = await createSku(service.prisma, 10);
    const approvalNo = uniqueApprovalNo('PURGED');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku);
    assert.equal((await postApproval({ app: edge }, body)).statusCode, 202);
    await statusReaches(service, key, 'SUBMITTED');
    // The retention purge removed the record; the order row answers for the key from now on.
    await service.prisma.idempotencyRecord.delete({ where: { idempotentKey: key } });

    const conflicting = approval(approvalNo, sku, {
      order: { customerId: 'CUST-OTHER', currency: 'CNY', lines: [{ sku, quantity: 2, unitPrice: '10.50' }] },
    });
    await assert.rejects(
      submitApproval({
        deps: submissionDepsFrom(service.config, dyingBeforeAnyDelete(service.prisma), service.temporal),
        approval: conflicting,
        door: 'webhook',
      }),
      (error: Error) => error.name === 'IdempotencyConflictError' || error.message === 'the process died here',
    );

    const redelivery = await postApproval({ app: edge }, body);
    assert.equal(redelivery.statusCode, 200, redelivery.body);
    assert.equal(redelivery.json<WebhookAnswer>().duplicate, true);
    assert.equal(await orderCount(service.prisma, key), 1);
  });

  it('reconciliation never releases the stock of an order that commits while it runs', async () => {
    const sku = await createSku(service.prisma, 10);
    const approvalNo = uniqueApprovalNo('RACE');
    const input = workflowInputFor(approval(approvalNo, sku), service.config.writePolicy);
    // Reconciliation reads "no order", then waits on a lock; meanwhile the slow write commits.
    const blocker = new pg.Client({ connectionString: service.config.databaseUrl });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE compensation_record IN ACCESS EXCLUSIVE MODE');
      // The compensation workflow's first step is the reconciliation.
      await startCompensationWorkflow(service.temporal, service.config.temporal.taskQueue, {
        order: input,
        orderRunId: `run-${approvalNo}`,
        reasonType: 'ActivityTimeout',
        reason: 'the attempt timed out',
        attempts: 3,
      });
      await eventually(
        'reconciliation to wait on the lock',
        async () => {
          const { rows } = await blocker.query<{ waiting: number }>(
            // This file's own database only: other files run beside it on the same server.
            `SELECT count(*)::int AS waiting FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()`,
          );
          return rows[0]?.waiting ? true : undefined;
        },
        60_000,
      );
      await service.prisma.$transaction((tx) => insertOrderWithReservation(tx, { ...input, writtenAttempt: 1 }));
      await blocker.query('COMMIT');
      await eventually('reconciliation to finish', async () => {
        const record = await service.prisma.compensationRecord.findFirst({
          where: { idempotentKey: input.idempotencyKey },
        });
        return record ?? undefined;
      });
    } finally {
      await blocker.end();
    }

    assert.deepEqual(await stockOf(service.prisma, sku), { onHand: 10, reserved: 2 }, 'the order keeps its stock');
    const released = await service.prisma.stockReservation.count({
      where: { idempotentKey: input.idempotencyKey, NOT: { releasedAt: null } },
    });
    assert.equal(released, 0);
  });
});

/** A client on which the process "dies" at the first DELETE of a claim, as a crash would leave it. */
function dyingBeforeAnyDelete(prisma: PrismaClient): PrismaClient {
  return new Proxy(prisma, {
    get(target, property, receiver) {
      if (property === '$executeRaw') {
        return (strings: TemplateStringsArray, ...values: unknown[]) => {
          if (strings.join('?').includes('DELETE FROM idempotency_record')) {
            return Promise.reject(new Error('the process died here'));
          }
          return target.$executeRaw(strings, ...values);
        };
      }
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}

async function deleteHistory(service: TestService, workflowId: string): Promise<void> {
  await service.temporal.workflowService.deleteWorkflowExecution({
    namespace: service.config.temporal.namespace,
    workflowExecution: { workflowId },
  });
  await eventually(`${workflowId} to be deleted`, async () =>
    (await workflowExists(service.temporal, workflowId)) ? undefined : true,
  );
}
