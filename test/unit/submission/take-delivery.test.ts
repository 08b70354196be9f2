import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IdempotencyConflictError } from '../../../domain/errors.js';
import type { Claim, IdempotencyRecord } from '../../../services/db/idempotency-records.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import { Shed } from '../../../submission/load-shedding.js';
import type { Delivery, Phase, Submission } from '../../../submission/start-path-types.js';
import { oneStartPerKey } from '../../../submission/submit-approval.js';
import { type StartPhases, startPath, takeDelivery } from '../../../submission/take-delivery.js';
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
