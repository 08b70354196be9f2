import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { IdempotencyConflictError, KeySourceConflictError } from '../../../domain/errors.js';
import type { Claim, IdempotencyRecord } from '../../../services/db/idempotency-records.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import { Shed } from '../../../submission/load-shedding.js';
import type { Delivery, Phase, StartGuard, Submission, SubmissionDeps } from '../../../submission/start-path-types.js';
import { oneStartPerKey } from '../../../submission/submit-approval.js';
import { productPhases, type StartPhases, startPath, takeDelivery } from '../../../submission/take-delivery.js';
import { memoryClaimStore } from '../../../tools/harness/memory-claim-store.js';
import type { WriteOutcome } from '../../../workflows/definitions.js';

const KEY = 'AP-2026-0001:MAIN';

/** A delivery of KEY; the stub phases below never look inside it. */
function delivery(overrides: Partial<Delivery> = {}): Delivery {
  return {
    deps: {} as Delivery['deps'],
    input: { idempotencyKey: KEY } as Delivery['input'],
    claim: { fingerprint: 'f1', request: null, source: 'webhook' },
    options: {
      waitUntil: undefined,
      onClaimed: () => {},
      deadline: undefined,
      workerInProcess: false,
      startGuard: oneStartPerKey,
    },
    place: { goingOn: [], startConfirmed: () => {}, lastStartConfirmedAt: undefined },
    ...overrides,
  };
}

function answer(duplicate: boolean): Submission {
  return { idempotencyKey: KEY, workflowId: `order-${KEY}`, duplicate, status: 'RECEIVED' };
}

const goOn = <T>(value: T): Phase<T> => ({ kind: 'go-on', value });
const answers = (submission: Submission): Promise<Phase<never>> => Promise.resolve({ kind: 'answer', submission });
const claimed = { record: { idempotencyKey: KEY }, orderFingerprint: undefined } as Claim;
const record = { idempotencyKey: KEY } as IdempotencyRecord;
const outcome = { idempotencyKey: KEY, status: 'SUBMITTED', orderNo: 'SO-1', attempts: 1 } satisfies WriteOutcome;

/**
 * Phases that each go on, unless `overrides` replaces them: `ran` lists the phases that ran, in
 * order, and `handed` what settle, guard and answer were handed by the phase before.
 */
function recordingPhases(overrides: Partial<StartPhases> = {}) {
  const ran: string[] = [];
  const handed: { settle?: Claim; guard?: IdempotencyRecord; answer?: WriteOutcome | undefined } = {};
  const phases: StartPhases = {
    shed: () => goOn(undefined),
    claim: () => Promise.resolve(goOn(claimed)),
    settle: (_, claim) => {
      handed.settle = claim;
      return Promise.resolve(goOn(record));
    },
    guard: (_, guarded) => {
      handed.guard = guarded;
      return Promise.resolve(goOn(undefined));
    },
    start: () => Promise.resolve(goOn(outcome)),
    answer: (_, started) => {
      handed.answer = started;
      return Promise.resolve(answer(false));
    },
    ...overrides,
  };
  const noting = Object.fromEntries(
    Object.entries(phases).map(([name, phase]: [string, (...args: unknown[]) => unknown]) => [
      name,
      (...args: unknown[]) => {
        ran.push(name);
        return phase(...args);
      },
    ]),
  ) as unknown as StartPhases;
  return { phases: noting, ran, handed };
}

describe('the start path', () => {
  it('runs a delivery through shed, claim, settle, guard, start and answer, each taking what the one before handed on', async () => {
    const { phases, ran, handed } = recordingPhases();
    assert.deepEqual(await startPath(phases)(delivery()), answer(false));
    assert.deepEqual(ran, ['shed', 'claim', 'settle', 'guard', 'start', 'answer']);
    assert.equal(handed.settle, claimed);
    assert.equal(handed.guard, record);
    assert.equal(handed.answer, outcome);
  });

  it('a delivery shed for want of time claims nothing', async () => {
    const { phases, ran } = recordingPhases({
      shed: () => {
        throw new Shed('too little time left');
      },
    });
    await assert.rejects(startPath(phases)(delivery()), Shed);
    assert.deepEqual(ran, ['shed']);
  });

  it('a delivery whose order is written is answered from its key, never guarded or started', async () => {
    const { phases, ran } = recordingPhases({ settle: () => answers(answer(true)) });
    assert.deepEqual(await startPath(phases)(delivery()), answer(true));
    assert.deepEqual(ran, ['shed', 'claim', 'settle']);
  });

  it('a conflicting delivery is refused before anything is started', async () => {
    const conflict = new IdempotencyConflictError(KEY, 'f1', 'f2');
    const { phases, ran } = recordingPhases({
      settle: () => Promise.reject(conflict),
    });
    await assert.rejects(startPath(phases)(delivery()), conflict);
    assert.deepEqual(ran, ['shed', 'claim', 'settle']);
  });

  it('a redelivery the guard answers from its key is never started again', async () => {
    const { phases, ran } = recordingPhases({ guard: () => answers(answer(true)) });
    assert.deepEqual(await startPath(phases)(delivery()), answer(true));
    assert.deepEqual(ran, ['shed', 'claim', 'settle', 'guard']);
  });

  it('a delivery with less than a quarter of its deadline left is shed before the database is asked anything', async () => {
    const asked: PropertyKey[] = [];
    const prisma = new Proxy({}, { get: (_, property) => (asked.push(property), undefined) }) as PrismaClient;
    const now = Date.now();
    const taking = delivery({
      deps: { prisma } as Delivery['deps'],
      options: {
        ...delivery().options,
        deadline: { arrivedAt: now - 8_000, answerBy: now + 2_000, goesOnAfterAnswer: false },
      },
    });
    await assert.rejects(takeDelivery(taking), Shed);
    assert.deepEqual(asked, []);
  });
});

/**
 * The product's phases against a claim store in memory (tools/harness/memory-claim-store.ts): the
 * claim, the settling of conflicts, the guard and the answer as the service runs them, with only
 * the start stood in for (it records the workflow it would start, and attaches to a started one).
 */
describe("the start path's phases, against a claim store in memory", () => {
  const FINGERPRINTS = ['order-a', 'order-b'] as const;
  /** The webhook and the MCP tool name their order; Feishu's connector reads it from the form later. */
  const DOORS = ['webhook', 'mcp', 'feishu'] as const;
  type Door = (typeof DOORS)[number];

  interface Sent {
    door: Door;
    /** The order the delivery names; a connector's names none. */
    fingerprint: string | null;
  }

  function harness(options: { startGuard?: StartGuard } = {}) {
    const claims = memoryClaimStore();
    const started: string[] = [];
    const counted: string[] = [];
    const deps = {
      claims,
      metrics: { keySourceConflict: (door: string) => counted.push(door) },
    } as unknown as SubmissionDeps;
    const path = startPath({
      ...productPhases,
      start: (onPath) => {
        // Every start called, by workflow id: Temporal attaches a second one to an open run.
        started.push(onPath.workflowId);
        return Promise.resolve({ kind: 'go-on', value: undefined });
      },
    });
    const send = ({ door, fingerprint }: Sent) =>
      path(
        delivery({
          deps,
          input: { idempotencyKey: KEY, approvalNo: 'AP-2026-0001', operation: 'MAIN' } as Delivery['input'],
          claim: { fingerprint, request: null, source: door },
          options: {
            waitUntil: undefined,
            onClaimed: () => {},
            deadline: undefined,
            workerInProcess: false,
            startGuard: options.startGuard ?? oneStartPerKey,
          },
        }),
      );
    return { claims, started, counted, send };
  }

  /** What a delivery of `sent` hears once `claimer` holds the key: accepted, or which refusal. */
  function expected(claimer: Sent, sent: Sent): 'accepted' | 'another door' | 'another order' {
    if (sent.door !== claimer.door) {
      const bothNameOrders = sent.door !== 'feishu' && claimer.door !== 'feishu';
      return bothNameOrders && sent.fingerprint === claimer.fingerprint ? 'accepted' : 'another door';
    }
    return sent.fingerprint !== null && sent.fingerprint !== claimer.fingerprint ? 'another order' : 'accepted';
  }

  const heard = (result: PromiseSettledResult<Submission>) => {
    if (result.status === 'fulfilled') return 'accepted';
    if (result.reason instanceof KeySourceConflictError) return 'another door';
    if (result.reason instanceof IdempotencyConflictError) return 'another order';
    throw result.reason;
  };

  const deliveryOf = fc
    .constantFrom(...DOORS)
    .chain((door) =>
      door === 'feishu'
        ? fc.constant<Sent>({ door, fingerprint: null })
        : fc.constantFrom(...FINGERPRINTS).map<Sent>((fingerprint) => ({ door, fingerprint })),
    );

  /**
   * Deliveries of one key, one after another or all at once: the first one claims it; each other is
   * accepted or refused as its door and order say; one workflow is started, one accepted delivery
   * hears 202, and every refusal through another door is recorded and counted once.
   */
  async function oneOrderPerKey(sent: Sent[], atOnce: boolean, startGuard?: StartGuard) {
    const { claims, started, counted, send } = harness(startGuard ? { startGuard } : {});
    const results: PromiseSettledResult<Submission>[] = [];
    if (atOnce) results.push(...(await Promise.allSettled(sent.map(send))));
    else for (const one of sent) results.push(...(await Promise.allSettled([send(one)])));
    const claimer = sent[0] as Sent;
    assert.deepEqual(
      results.map(heard),
      sent.map((one) => expected(claimer, one)),
    );
    const accepted = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    assert.equal(accepted.filter((submission) => !submission.duplicate).length, 1, 'one delivery hears 202');
    // All at once, a start may race the first one and attach to its run: one workflow all the same.
    assert.deepEqual([...new Set(started)], [`order-${KEY}`]);
    // One after another, a delivery after the first one answered is never started again.
    if (!atOnce) assert.equal(started.length, 1, 'one start');
    const otherDoors = sent.filter((one) => expected(claimer, one) === 'another door');
    assert.equal(counted.length, otherDoors.length, 'each refusal through another door is counted');
    assert.equal(
      [...claims.refusals.values()].reduce((sum, count) => sum + count, 0),
      otherDoors.length,
      'and recorded',
    );
    assert.equal(claims.records.get(KEY)?.source, claimer.door, 'the key stays its first door’s');
  }

  it('a key is its first door’s and its first order’s, one after another and all at once (generated)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(deliveryOf, { minLength: 1, maxLength: 8 }), fc.boolean(), (sent, atOnce) =>
        oneOrderPerKey(sent, atOnce),
      ),
      { numRuns: 200 },
    );
  });

  it('the same check fails a guard that lets every redelivery start again', async () => {
    const startsEveryTime: StartGuard = { mayStart: () => true, reusePolicy: 'ALLOW_DUPLICATE' };
    const run = await fc.check(
      fc.asyncProperty(fc.array(deliveryOf, { minLength: 1, maxLength: 8 }), (sent) =>
        oneOrderPerKey(sent, false, startsEveryTime),
      ),
      { numRuns: 200 },
    );
    assert.ok(run.failed, 'a redelivery that starts again is found');
  });

  it('a redelivery never overrides an operator: a key past RECEIVED or started is answered from its record (generated)', async () => {
    const statuses = [
      'RECEIVED',
      'SUBMITTED',
      'DELIVERED',
      'DELIVERY_FAILED',
      'COMPENSATING',
      'COMPENSATED',
      'FAILED',
    ] as const;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...statuses), fc.boolean(), async (status, markedStarted) => {
        fc.pre(status !== 'RECEIVED' || markedStarted);
        const { claims, started, send } = harness();
        await claims.claim({
          idempotencyKey: KEY,
          approvalNo: 'AP-2026-0001',
          operation: 'MAIN',
          fingerprint: 'order-a',
          request: null,
          source: 'webhook',
          workflowId: `order-${KEY}`,
        });
        claims.update(KEY, { status, workflowStartedAt: markedStarted ? new Date() : null });
        const answer = await send({ door: 'webhook', fingerprint: 'order-a' });
        assert.deepEqual(started, [], 'nothing is started');
        assert.equal(answer.status, status, "the answer is the record's status");
      }),
    );
  });

  it('after the retention purge the order row keeps the key its door’s: another door is refused, its own answered', async () => {
    const { claims, started, counted, send } = harness();
    await send({ door: 'feishu', fingerprint: null });
    claims.writeOrder(KEY, { orderNo: 'SO-1', fingerprint: 'order-a' });
    claims.purgeRecord(KEY);
    await assert.rejects(send({ door: 'webhook', fingerprint: 'order-a' }), KeySourceConflictError);
    assert.deepEqual(counted, ['webhook']);
    const again = await send({ door: 'feishu', fingerprint: null });
    assert.deepEqual(
      { duplicate: again.duplicate, status: again.status, records: claims.records.size },
      { duplicate: true, status: 'SUBMITTED', records: 0 },
      'answered from the order row, and no record claimed anew',
    );
    assert.equal(started.length, 1);
  });
});
