// A delivery is answered inside its deadline, counted from its arrival: a busy instance sheds what
// it cannot take in time with 503 + Retry-After (`/problems/overloaded`) — the excess over
// INTAKE_MAX_IN_FLIGHT at once and with nothing claimed, a claim or a start that runs out of the
// caller's time when the time comes — and keeps whatever it claimed, so the sender's resend
// becomes the one order. Temporal and PostgreSQL are slowed through proxies in front of the real
// servers, for this file's API alone; its worker reaches them directly.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { buildApp } from '../../edges/http/app.js';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { intakeLoad, type IntakeLoad } from '../../submission/intake-load.js';
import { connectClient, temporalTargetFrom } from '../../services/temporal/connection.js';
import { startTcpProxy, type TcpProxy } from '../../tools/harness/tcp-proxy.js';
import {
  approval,
  createSku,
  eventually,
  orderCount,
  postApproval,
  startTestService,
  statusReaches,
  testConfig,
  type TestService,
  uniqueApprovalNo,
  workflowExists,
} from '../../tools/harness/service.js';

interface Answer {
  status: number;
  type: string | undefined;
  retryAfter: string | undefined;
  tookMs: number;
}

describe('a delivery answered inside its deadline, counted from its arrival', () => {
  let service: TestService;
  let temporalProxy: TcpProxy;
  let databaseProxy: TcpProxy;
  const stops: (() => Promise<void>)[] = [];

  before(async () => {
    service = await startTestService();
    temporalProxy = await startTcpProxy(service.config.temporal.address as string);
    const database = new URL(service.config.databaseUrl as string);
    databaseProxy = await startTcpProxy(`${database.hostname}:${database.port || '5432'}`);
  });
  after(async () => {
    for (const stop of stops.reverse()) await stop();
    await Promise.all([temporalProxy.close(), databaseProxy.close()]);
    await service.stop();
  });

  /** An API like the product's, on the worker's task queue, reaching Temporal and PostgreSQL through the proxies. */
  async function proxiedApi(settings: Record<string, string>, intake?: IntakeLoad) {
    const config = testConfig({ TEMPORAL_TASK_QUEUE: service.config.temporal.taskQueue, ...settings });
    const databaseUrl = new URL(service.config.databaseUrl as string);
    databaseUrl.host = `127.0.0.1:${databaseProxy.port}`;
    const prisma: PrismaClient = createPrismaClient({
      databaseUrl: databaseUrl.toString(),
      poolSize: config.dbPoolSize,
      statementTimeoutMs: config.writePolicy.statementTimeoutMs,
    });
    const temporal = await connectClient({ ...temporalTargetFrom(config.temporal), address: temporalProxy.address });
    const app = buildApp({ config, prisma, temporal, ...(intake ? { intake } : {}) });
    await app.ready();
    stops.push(async () => {
      await app.close();
      await Promise.all([prisma.$disconnect(), temporal.connection.close()]);
    });
    // Connections made before any fault: the faults are of answers, not of connecting.
    const warm = approval(uniqueApprovalNo('SHED-WARM'), await createSku(service.prisma, 10));
    assert.equal((await postApproval({ app }, warm)).statusCode, 202);
    return { app };
  }

  async function send(api: { app: TestService['app'] }, body: unknown): Promise<Answer> {
    const sent = Date.now();
    const response = await postApproval(api, body);
    const tookMs = Date.now() - sent;
    const type = response.statusCode >= 400 ? response.json<{ type: string }>().type : undefined;
    const retryAfter = response.headers['retry-after'];
    return {
      status: response.statusCode,
      type,
      retryAfter: retryAfter === undefined ? undefined : String(retryAfter),
      tookMs,
    };
  }

  const keyOf = (approvalNo: string) => idempotencyKeyFor(approvalNo, 'MAIN');

  async function oneOrderEach(approvalNos: string[]) {
    for (const approvalNo of approvalNos) {
      await statusReaches(service, keyOf(approvalNo), 'SUBMITTED');
      assert.equal(await orderCount(service.prisma, keyOf(approvalNo)), 1, `one order for ${approvalNo}`);
    }
  }

  it('sheds the delivery beyond INTAKE_MAX_IN_FLIGHT at once, claiming nothing, and takes it when it is sent again', async () => {
    const intake = intakeLoad({ maxInFlight: 2 });
    // Room enough that the two taken are started however slow the machine is.
    const api = await proxiedApi({ WEBHOOK_START_TIMEOUT_MS: '15000', INTAKE_MAX_IN_FLIGHT: '2' }, intake);
    const sku = await createSku(service.prisma, 100);
    const [first, second, third] = ['SHED-CAP-A', 'SHED-CAP-B', 'SHED-CAP-C'].map((prefix) =>
      approval(uniqueApprovalNo(prefix), sku),
    ) as [ReturnType<typeof approval>, ReturnType<typeof approval>, ReturnType<typeof approval>];

    await temporalProxy.setMode({ kind: 'delay-replies', ms: 1_500 });
    try {
      const taken = [send(api, first), send(api, second)];
      await eventually(
        'both deliveries in flight',
        () => Promise.resolve(intake.inFlight === 2 ? true : undefined),
        30_000,
      );
      const shed = await send(api, third);
      assert.equal(shed.status, 503);
      assert.equal(shed.type, '/problems/overloaded');
      assert.match(shed.retryAfter ?? '', /^\d+$/, 'Retry-After in whole seconds');
      const seconds = Number(shed.retryAfter);
      assert.ok(seconds >= 1 && seconds <= 30, `Retry-After ${seconds} within 1..30`);
      assert.equal(
        await service.prisma.idempotencyRecord.count({ where: { idempotentKey: keyOf(third.approvalNo) } }),
        0,
        'nothing claimed for the shed delivery',
      );
      assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(keyOf(third.approvalNo))), false);
      assert.deepEqual(
        (await Promise.all(taken)).map((answer) => answer.status),
        [202, 202],
        'the two taken are started',
      );
    } finally {
      await temporalProxy.setMode({ kind: 'pass' });
    }
    assert.equal((await send(api, third)).status, 202, 'sent again, the shed delivery is the first of its key');
    await oneOrderEach([first.approvalNo, second.approvalNo, third.approvalNo]);
  });

  it('answers a delivery whose claim cannot be made in time by its deadline, keeps the claim, and starts it on the resend', async () => {
    const api = await proxiedApi({ WEBHOOK_START_TIMEOUT_MS: '2000' });
    const body = approval(uniqueApprovalNo('SHED-CLAIM'), await createSku(service.prisma, 10));
    const DATABASE_DELAY_MS = 6_000;
    await databaseProxy.setMode({ kind: 'delay-replies', ms: DATABASE_DELAY_MS });
    let shed: Answer;
    try {
      shed = await send(api, body);
    } finally {
      await databaseProxy.setMode({ kind: 'pass' });
    }
    assert.equal(shed.status, 503);
    assert.equal(shed.type, '/problems/overloaded');
    assert.ok(shed.retryAfter, 'Retry-After');
    // The claim's answer could not come back before the delay: an answer before it came from the deadline.
    assert.ok(shed.tookMs < DATABASE_DELAY_MS, `answered after ${shed.tookMs} ms, not when the claim came back`);
    const key = keyOf(body.approvalNo);
    // The claim reached the database and lands after the answer: it is kept, and started by nobody yet.
    const claimed = await eventually(
      'the late claim to land',
      async () => (await service.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } })) ?? undefined,
    );
    assert.equal(claimed.workflowStartedAt, null);
    assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false);
    assert.equal((await send(api, body)).status, 202, 'the resend starts the key, and is its first answer');
    await oneOrderEach([body.approvalNo]);
  });

  it('tells a Temporal that does not confirm from an instance that ran out of time before the start', async () => {
    // A quarter of the 6.4 s budget is 1.6 s: the first delivery claims in far less, the second
    // spends longer than that waiting for the database before its start.
    const api = await proxiedApi({ WEBHOOK_START_TIMEOUT_MS: '8000' });
    const sku = await createSku(service.prisma, 10);
    const hung = approval(uniqueApprovalNo('SHED-HUNG'), sku);
    const busy = approval(uniqueApprovalNo('SHED-BUSY'), sku);
    await temporalProxy.setMode({ kind: 'blackhole' });
    try {
      const unconfirmed = await send(api, hung);
      assert.equal(unconfirmed.status, 503);
      assert.equal(
        unconfirmed.type,
        '/problems/temporal-unavailable',
        'the start had its time: Temporal did not confirm',
      );

      await databaseProxy.setMode({ kind: 'delay-replies', ms: 3_000 });
      const late = await send(api, busy);
      assert.equal(late.status, 503);
      assert.equal(late.type, '/problems/overloaded', 'the time went before the start: the instance was busy');
    } finally {
      await databaseProxy.setMode({ kind: 'pass' });
      await temporalProxy.setMode({ kind: 'pass' });
    }
    for (const body of [hung, busy]) {
      const resent = await eventually(`${body.approvalNo} taken once Temporal answers`, async () => {
        const answer = await send(api, body);
        return answer.status === 202 ? answer : undefined;
      });
      assert.equal(resent.status, 202);
    }
    await oneOrderEach([hung.approvalNo, busy.approvalNo]);
  });

  it('GENERATED: any burst of approvals and their copies against a cap of 3 is taken once each, the excess shed and sent again', async () => {
    const api = await proxiedApi({ WEBHOOK_START_TIMEOUT_MS: '15000', INTAKE_MAX_IN_FLIGHT: '3' });
    const sku = await createSku(service.prisma, 100_000);
    let shedSeen = 0;
    // Temporal's answers held back, so the deliveries of a burst overlap and the cap bites.
    await temporalProxy.setMode({ kind: 'delay-replies', ms: 300 });
    try {
      await fc.assert(
        fc.asyncProperty(
          // Per approval: how many copies its sender sends at once (a retrying OA, a gateway's resend).
          fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 2, maxLength: 6 }),
          async (copies) => {
            const bodies = copies.map(() => approval(uniqueApprovalNo('SHED-GEN'), sku));
            const deliveries = bodies.flatMap((body, index) => Array.from({ length: copies[index] ?? 1 }, () => body));
            const answers = await Promise.all(deliveries.map((body) => send(api, body)));
            for (const answer of answers) {
              assert.ok(
                [200, 202].includes(answer.status) ||
                  (answer.status === 503 &&
                    answer.type === '/problems/overloaded' &&
                    /^\d+$/.test(answer.retryAfter ?? '')),
                `an answer the sender can act on: ${JSON.stringify(answer)}`,
              );
            }
            shedSeen += answers.filter((answer) => answer.status === 503).length;
            // Each sender sends again what was shed, until it is taken, as an OA does after Retry-After.
            const accepted = new Map<string, number>();
            answers.forEach((answer, index) => {
              const approvalNo = (deliveries[index] as { approvalNo: string }).approvalNo;
              if (answer.status === 202) accepted.set(approvalNo, (accepted.get(approvalNo) ?? 0) + 1);
            });
            for (const body of bodies) {
              if (answers.some((answer, index) => deliveries[index] === body && answer.status !== 503)) continue;
              const resent = await eventually(`${body.approvalNo} taken when sent again`, async () => {
                const answer = await send(api, body);
                return answer.status === 503 ? undefined : answer;
              });
              if (resent.status === 202) accepted.set(body.approvalNo, (accepted.get(body.approvalNo) ?? 0) + 1);
            }
            for (const body of bodies) {
              assert.equal(accepted.get(body.approvalNo), 1, `one 202 for ${body.approvalNo}, whatever was shed`);
            }
            await oneOrderEach(bodies.map((body) => body.approvalNo));
          },
        ),
        { numRuns: 8, seed: 2029, endOnFailure: true },
      );
    } finally {
      await temporalProxy.setMode({ kind: 'pass' });
    }
    assert.ok(shedSeen > 0, 'some bursts went beyond the cap, so the shedding was met');
  });
});
