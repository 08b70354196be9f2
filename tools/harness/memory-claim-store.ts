// A claim store held in memory, for unit tests of the start path's phases: the same answers the
// database's statements give (services/db/stores/), without a database. A claim inserts a record
// only for a key with neither a record nor an order; the first delivery is decided once per key; a
// refused delivery through another door is one more refusal of its (key, door) row. A test sets the
// scene with `writeOrder`, `purgeRecord` and `update`, and reads what the phases left behind.
import type { KeySource } from '../../domain/idempotency-key.js';
import type { OrderStatus } from '../../domain/order-status.js';
import type { IdempotencyRecord, NewRecord } from '../../services/db/idempotency-records.js';
import type { RefusedDelivery } from '../../services/db/key-source-conflicts.js';
import type { ClaimStore } from '../../submission/claim-store.js';
import { isSettled } from '../../submission/wait-for-outcome.js';

/** An order written under a key, with what the retention purge kept of its record. */
interface StoredOrder {
  orderNo: string;
  fingerprint: string;
  statusAtPurge?: OrderStatus | undefined;
  sourceAtPurge?: KeySource | undefined;
}

export interface MemoryClaimStore extends ClaimStore {
  records: Map<string, IdempotencyRecord>;
  /** Every refused delivery, by `<key> <door>`: how many times it was refused. */
  refusals: Map<string, number>;
  /** An order written under the key: the record, if there is one, says SUBMITTED. */
  writeOrder(idempotencyKey: string, order: { orderNo: string; fingerprint: string }): void;
  /** The retention purge: the record goes, its status and door stay on the order row. */
  purgeRecord(idempotencyKey: string): void;
  /** Changes a record as a workflow or an operator would. */
  update(idempotencyKey: string, change: Partial<IdempotencyRecord>): void;
}

export function memoryClaimStore(): MemoryClaimStore {
  const records = new Map<string, IdempotencyRecord>();
  const orders = new Map<string, StoredOrder>();
  const refusals = new Map<string, number>();
  const recordOf = (key: string) => {
    const record = records.get(key);
    if (!record) throw new Error(`no record of ${key}`);
    return record;
  };

  return {
    records,
    refusals,
    claim(record: NewRecord) {
      const order = orders.get(record.idempotencyKey);
      if (!order && !records.has(record.idempotencyKey)) {
        const now = new Date();
        records.set(record.idempotencyKey, {
          ...record,
          status: 'RECEIVED',
          attempts: 0,
          lastError: null,
          workflowStartedAt: null,
          firstDeliveryAt: null,
          createdAt: now,
          updatedAt: now,
        });
      }
      const stored = records.get(record.idempotencyKey);
      return Promise.resolve({
        record: stored && { ...stored },
        orderFingerprint: order?.fingerprint,
        orderStatusAtPurge: order?.statusAtPurge,
        orderSourceAtPurge: order?.sourceAtPurge,
      });
    },
    find(key) {
      const record = records.get(key);
      return Promise.resolve(record && { ...record });
    },
    decideFirstDelivery(key) {
      const record = records.get(key);
      if (!record) {
        const order = orders.get(key);
        return Promise.resolve({ first: false, status: order ? (order.statusAtPurge ?? 'SUBMITTED') : undefined });
      }
      const first = record.firstDeliveryAt === null;
      if (first) {
        record.firstDeliveryAt = new Date();
        record.workflowStartedAt ??= record.firstDeliveryAt;
      }
      return Promise.resolve({ first, status: record.status });
    },
    recordSourceConflict(conflict: RefusedDelivery) {
      const row = `${conflict.idempotencyKey} ${conflict.door}`;
      refusals.set(row, (refusals.get(row) ?? 0) + 1);
      return Promise.resolve();
    },
    orderNoOf(key) {
      return Promise.resolve(orders.get(key)?.orderNo);
    },
    waitForOutcome(key) {
      // Nothing runs a workflow here: the outcome is whatever the test has set.
      const record = records.get(key);
      return Promise.resolve(!record || isSettled(record.status));
    },
    writeOrder(key, order) {
      orders.set(key, order);
      const record = records.get(key);
      if (record) record.status = 'SUBMITTED';
    },
    purgeRecord(key) {
      const record = recordOf(key);
      const order = orders.get(key);
      if (order) Object.assign(order, { statusAtPurge: record.status, sourceAtPurge: record.source });
      records.delete(key);
    },
    update(key, change) {
      Object.assign(recordOf(key), change, { updatedAt: new Date() });
    },
  };
}
