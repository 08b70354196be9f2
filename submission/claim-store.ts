// What the start path reads and writes about a key, in one interface: claim it, find its record,
// decide the one first delivery, record a delivery refused as another door's, read the key's order
// number, and wait for the write's outcome. The product's is the database (`claimStoreOn`); the
// phases take it from their dependencies, so a unit test can run them against one held in memory.
import type { OrderStatus } from '../domain/order-status.js';
import {
  type Claim,
  claimRecord,
  decideFirstDelivery,
  findRecord,
  type IdempotencyRecord,
  type NewRecord,
} from '../services/db/idempotency-records.js';
import { type RefusedDelivery, recordKeySourceConflict } from '../services/db/key-source-conflicts.js';
import { findOrderByKey } from '../services/db/order-repository.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import { type WaitOptions, waitForOutcome } from './wait-for-outcome.js';

export interface ClaimStore {
  /** Claims the key unless claimed (its record then stands as it was), with the key's order if written. */
  claim(record: NewRecord): Promise<Claim>;
  find(idempotencyKey: string): Promise<IdempotencyRecord | undefined>;
  /** Exactly one call per key answers `first: true`: the delivery answered 202. */
  decideFirstDelivery(idempotencyKey: string): Promise<{ first: boolean; status: OrderStatus | undefined }>;
  /** One more refusal of a delivery through another door than the key's, for an operator to see. */
  recordSourceConflict(conflict: RefusedDelivery): Promise<void>;
  /** The number of the order written under the key, if one is. */
  orderNoOf(idempotencyKey: string): Promise<string | undefined>;
  /** Waits until the key's write has an outcome or the deadline passes; true when it has one. */
  waitForOutcome(idempotencyKey: string, options: WaitOptions): Promise<boolean>;
}

/** The start path's claim store in the service's database. */
export function claimStoreOn(prisma: PrismaClient): ClaimStore {
  return {
    claim: (record) => claimRecord(prisma, record),
    find: (key) => findRecord(prisma, key),
    decideFirstDelivery: (key) => decideFirstDelivery(prisma, key),
    recordSourceConflict: (conflict) => recordKeySourceConflict(prisma, conflict),
    orderNoOf: async (key) => (await findOrderByKey(prisma, key))?.orderNo,
    waitForOutcome: (key, options) => waitForOutcome(prisma, key, options),
  };
}
