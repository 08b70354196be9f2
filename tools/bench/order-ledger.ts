// What the database says became of a run's approvals (every approval number of a run starts with
// its prefix): the orders written and when, keys with more than one order, approvals written under
// different keys, the compensations and why, and the keys' statuses.
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { sleep } from '../harness/time.js';

/** Statuses a key ends in without an order: the write failed for good (domain/order-status.ts). */
const WITHOUT_ORDER = ['COMPENSATING', 'COMPENSATED', 'FAILED'];

export interface Ledger {
  orders: number;
  /** Epoch milliseconds of the first and last order's commit (created_at); undefined without orders. */
  firstOrderAt?: number;
  lastOrderAt?: number;
  /** Keys with more than one order row: 0, or exactly-once failed. */
  keysWithSeveralOrders: number;
  /** Approvals (number and operation) with orders under more than one key: 0, or a key was made wrongly. */
  approvalsUnderSeveralKeys: number;
  compensations: { reasonType: string; reason: string; count: number }[];
  statuses: Record<string, number>;
}

export async function ledgerOf(prisma: PrismaClient, prefix: string): Promise<Ledger> {
  const like = `${prefix}%`;
  const [orders] = await prisma.$queryRaw<{ orders: bigint; first: Date | null; last: Date | null }[]>`
    SELECT count(*) AS orders, min(created_at) AS first, max(created_at) AS last
    FROM order_main WHERE approval_no LIKE ${like}`;
  const [doubled] = await prisma.$queryRaw<{ keys: bigint }[]>`
    SELECT count(*) AS keys FROM (
      SELECT idempotent_key FROM order_main WHERE approval_no LIKE ${like}
      GROUP BY idempotent_key HAVING count(*) > 1) AS doubled`;
  const [shared] = await prisma.$queryRaw<{ approvals: bigint }[]>`
    SELECT count(*) AS approvals FROM (
      SELECT approval_no, operation FROM order_main WHERE approval_no LIKE ${like}
      GROUP BY approval_no, operation HAVING count(DISTINCT idempotent_key) > 1) AS shared`;
  const compensations = await prisma.$queryRaw<{ reason_type: string; reason: string; count: bigint }[]>`
    SELECT c.reason_type, c.reason, count(*) AS count
    FROM compensation_record c JOIN idempotency_record r ON r.idempotent_key = c.idempotent_key
    WHERE r.approval_no LIKE ${like}
    GROUP BY c.reason_type, c.reason ORDER BY count(*) DESC`;
  const statuses = await prisma.$queryRaw<{ status: string; count: bigint }[]>`
    SELECT status, count(*) AS count FROM idempotency_record WHERE approval_no LIKE ${like} GROUP BY status`;
  return {
    orders: Number(orders?.orders ?? 0),
    ...(orders?.first ? { firstOrderAt: orders.first.getTime() } : {}),
    ...(orders?.last ? { lastOrderAt: orders.last.getTime() } : {}),
    keysWithSeveralOrders: Number(doubled?.keys ?? 0),
    approvalsUnderSeveralKeys: Number(shared?.approvals ?? 0),
    compensations: compensations.map((row) => ({
      reasonType: row.reason_type,
      reason: row.reason,
      count: Number(row.count),
    })),
    statuses: Object.fromEntries(statuses.map((row) => [row.status, Number(row.count)])),
  };
}

/** The approval numbers of the run that have an order. */
export async function orderedApprovals(prisma: PrismaClient, prefix: string): Promise<Set<string>> {
  const rows = await prisma.$queryRaw<{ approval_no: string }[]>`
    SELECT approval_no FROM order_main WHERE approval_no LIKE ${`${prefix}%`}`;
  return new Set(rows.map((row) => row.approval_no));
}

/** How many of the run's orders were committed after `sinceMs` (epoch ms). */
export async function ordersCommittedAfter(prisma: PrismaClient, prefix: string, sinceMs: number): Promise<number> {
  const [row] = await prisma.$queryRaw<{ orders: bigint }[]>`
    SELECT count(*) AS orders FROM order_main
    WHERE approval_no LIKE ${`${prefix}%`} AND extract(epoch FROM created_at) * 1000 > ${sinceMs}`;
  return Number(row?.orders ?? 0);
}

/** Orders committed per bucket of `bucketSeconds`, counted from `sinceMs` (epoch ms): [seconds, count]. */
export async function ordersOverTime(
  prisma: PrismaClient,
  prefix: string,
  sinceMs: number,
  bucketSeconds: number,
): Promise<{ t: number; count: number }[]> {
  const rows = await prisma.$queryRaw<{ bucket: number; count: bigint }[]>`
    SELECT floor((extract(epoch FROM created_at) * 1000 - ${sinceMs}) / 1000 / ${bucketSeconds})::int AS bucket,
           count(*) AS count
    FROM order_main WHERE approval_no LIKE ${`${prefix}%`} GROUP BY bucket ORDER BY bucket`;
  return rows.map((row) => ({ t: row.bucket * bucketSeconds, count: Number(row.count) }));
}

/**
 * Waits until every accepted key has its order or ended without one (compensation), or until the
 * count has not moved for `quietMs`: what is missing then is lost, not late.
 */
export async function waitForDrain(
  prisma: PrismaClient,
  prefix: string,
  acceptedKeys: number,
  quietMs: number,
): Promise<void> {
  let last = -1;
  let movedAt = Date.now();
  for (;;) {
    const [row] = await prisma.$queryRaw<{ orders: bigint; ended: bigint }[]>`
      SELECT (SELECT count(*) FROM order_main WHERE approval_no LIKE ${`${prefix}%`}) AS orders,
             (SELECT count(*) FROM idempotency_record
               WHERE approval_no LIKE ${`${prefix}%`} AND status = ANY(${WITHOUT_ORDER})) AS ended`;
    const settled = Number(row?.orders ?? 0) + Number(row?.ended ?? 0);
    if (settled >= acceptedKeys) return;
    if (settled !== last) {
      last = settled;
      movedAt = Date.now();
    } else if (Date.now() - movedAt > quietMs) return;
    await sleep(500);
  }
}

/** The approval numbers of the run whose key ended without an order (compensation). */
export async function endedWithoutOrder(prisma: PrismaClient, prefix: string): Promise<Set<string>> {
  const rows = await prisma.$queryRaw<{ approval_no: string }[]>`
    SELECT approval_no FROM idempotency_record
    WHERE approval_no LIKE ${`${prefix}%`} AND status = ANY(${WITHOUT_ORDER})`;
  return new Set(rows.map((row) => row.approval_no));
}
