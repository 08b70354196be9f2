// The claim store held in memory (tools/harness/memory-claim-store.ts), which the start path's phase
// tests run against, answers as the database's (submission/claim-store.ts on PostgreSQL) does:
// generated sequences of claims through every kind of door, first-delivery decisions, refusals and
// status changes, run on both, answer the same at every step. Its broken variant — a store that
// lets a later claim replace the record — is told apart by the same comparison.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { KeySource } from '../../domain/idempotency-key.js';
import type { OrderStatus } from '../../domain/order-status.js';
import { createPrismaClient, type PrismaClient } from '../../services/db/prisma-client.js';
import { type ClaimStore, claimStoreOn } from '../../submission/claim-store.js';
import { memoryClaimStore } from '../../tools/harness/memory-claim-store.js';
import { stackEnv } from '../../tools/harness/service.js';

type Step =
  | { kind: 'claim'; key: number; door: KeySource; fingerprint: string | null }
  | { kind: 'decide first'; key: number }
  | { kind: 'refuse'; key: number; door: KeySource }
  | { kind: 'status'; key: number; status: OrderStatus };

const DOORS: KeySource[] = ['webhook', 'mcp', 'feishu', 'wecom'];
const STATUSES: OrderStatus[] = ['SUBMITTED', 'COMPENSATING', 'FAILED'];

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('claim' as const),
    key: fc.nat(2),
    door: fc.constantFrom(...DOORS),
    // Fingerprints are SHA-256 in hex: the column holds 64 characters.
    fingerprint: fc.constantFrom('a'.repeat(64), 'b'.repeat(64), null),
  }),
  fc.record({ kind: fc.constant('decide first' as const), key: fc.nat(2) }),
  fc.record({ kind: fc.constant('refuse' as const), key: fc.nat(2), door: fc.constantFrom(...DOORS) }),
  fc.record({ kind: fc.constant('status' as const), key: fc.nat(2), status: fc.constantFrom(...STATUSES) }),
);

describe('the claim store in memory answers as the database does', () => {
  let prisma: PrismaClient;

  before(() => {
    prisma = createPrismaClient({ databaseUrl: stackEnv().databaseUrl, poolSize: 2, statementTimeoutMs: 5_000 });
  });
  after(() => prisma?.$disconnect());

  /** Runs `steps` on `store` with keys of their own, answering what each step answered, as it reads. */
  async function answers(
    store: ClaimStore,
    steps: Step[],
    setStatus: (key: string, status: OrderStatus) => Promise<void>,
  ): Promise<unknown[]> {
    const run = randomBytes(4).toString('hex');
    const keyOf = (index: number) => `CLAIM-${run}-${index}:MAIN`;
    const seen: unknown[] = [];
    for (const one of steps) {
      const key = keyOf(one.key);
      if (one.kind === 'claim') {
        const claim = await store.claim({
          idempotencyKey: key,
          approvalNo: `CLAIM-${run}-${one.key}`,
          operation: 'MAIN',
          fingerprint: one.fingerprint,
          request: null,
          source: one.door,
          workflowId: `order-${key}`,
        });
        const record = claim.record;
        seen.push({
          record: record && {
            source: record.source,
            fingerprint: record.fingerprint,
            status: record.status,
            answered: record.firstDeliveryAt !== null,
            started: record.workflowStartedAt !== null,
          },
          order: claim.orderFingerprint ?? null,
        });
      } else if (one.kind === 'decide first') {
        seen.push(await store.decideFirstDelivery(key));
      } else if (one.kind === 'refuse') {
        const holder = await store.find(key);
        if (holder) {
          await store.recordSourceConflict({
            idempotencyKey: key,
            door: one.door,
            claimedBy: holder.source,
            fingerprint: null,
          });
        }
        seen.push(holder?.source ?? 'no holder');
      } else {
        if (await store.find(key)) await setStatus(key, one.status);
        seen.push((await store.find(key))?.status ?? 'no record');
      }
    }
    return seen;
  }

  async function onDatabase(steps: Step[]) {
    return answers(claimStoreOn(prisma), steps, async (key, status) => {
      await prisma.idempotencyRecord.update({ where: { idempotentKey: key }, data: { status } });
    });
  }

  async function inMemory(steps: Step[], store = memoryClaimStore()) {
    return answers(store, steps, (key, status) => Promise.resolve(store.update(key, { status })));
  }

  it('every step answers the same on both (generated)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        assert.deepEqual(await inMemory(steps), await onDatabase(steps));
      }),
      { numRuns: 40 },
    );
  });

  it('the same comparison tells apart a store whose later claim replaces the record', async () => {
    const replacing = () => {
      const store = memoryClaimStore();
      const claim = store.claim.bind(store);
      store.claim = (record) => {
        store.records.delete(record.idempotencyKey);
        return claim(record);
      };
      return store;
    };
    const run = await fc.check(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        assert.deepEqual(await inMemory(steps, replacing()), await onDatabase(steps));
      }),
      { numRuns: 40 },
    );
    assert.ok(run.failed, 'a claim that replaces the first one is found');
  });
});
