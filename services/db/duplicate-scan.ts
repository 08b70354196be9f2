// The duplicate scan: finds what slipped past the key, from the order table itself, as clusters —
// - SAME_DOCUMENT: the orders that share a business document (approval number + operation) under
//   different keys (the symptom of a key made in the wrong place; MAIN and SUPPLEMENT of one
//   approval are two documents);
// - NEAR_IDENTICAL: a run of orders with the same fingerprint (customer, currency, lines), each
//   created at most the window after the one before, of more than one approval.
// Each cluster has one duplicate_alert. A cluster found again changes nothing; one that gained
// orders grows its alert; one that joined two known clusters grows the older alert and marks the
// other superseded. k identical orders are one alert, not k(k−1)/2, and the scan's result is
// counts and new alert ids only.
import { createHash } from 'node:crypto';
import { type DuplicateKind, MAX_NEW_ALERT_IDS, type ScanOptions, type ScanResult } from '../../domain/safety-nets.js';
import { type PrismaClient, type Tx, withLongStatements } from './prisma-client.js';
import type { ClusterRow } from './stores/statements.js';
import { statementsFor } from './stores/store.js';

/** One cluster as the scan sees it now (possibly only its part inside the lookback). */
export interface AlertChange {
  change: 'new' | 'grown';
  alertId: string;
  kind: DuplicateKind;
  orderCount: number;
  detail: string;
}

/** The alert's log line, at warn, the same for every kind: what on-call searches for. */
export function alertLogLine(change: AlertChange): string {
  return `DUPLICATE ALERT ${change.kind} (${change.change}): ${change.detail}`;
}

/** How many order numbers or keys an alert's detail names before it says "and N more". */
const NAMED_IN_DETAIL = 5;

/** One scan may read a day of orders: it runs with a long statement timeout, not the write path's. */
export async function scanForDuplicates(
  prisma: PrismaClient,
  options: ScanOptions,
  onChange: (change: AlertChange) => void = () => {},
): Promise<ScanResult> {
  // Inside the scan activity's five-minute start-to-close (with the transaction's wait and margin),
  // so a timed-out attempt never still holds the scan lock when its retry starts.
  return withLongStatements(prisma, 4 * 60_000, (tx) => scan(tx, options, onChange));
}

async function scan(db: Tx, options: ScanOptions, onChange: (change: AlertChange) => void): Promise<ScanResult> {
  // Scans take turns (the schedule and an operator's CLI run): two at once could both record a
  // cluster that neither had seen.
  const statements = statementsFor(db).duplicateScan;
  await statements.lock(db);
  try {
    return await scanLocked(db, options, onChange);
  } finally {
    await statements.unlock(db);
  }
}

async function scanLocked(db: Tx, options: ScanOptions, onChange: (change: AlertChange) => void): Promise<ScanResult> {
  const statements = statementsFor(db).duplicateScan;
  const since = new Date(Date.now() - options.lookbackMinutes * 60_000);
  const sameDocument = await statements.sameDocumentClusters(db, since);
  // Runs of one fingerprint: an order more than the window after the one before starts a new run.
  // Orders up to one window before `since` are read so that a run reaching into the lookback is
  // seen with the order it continues.
  const nearIdentical = await statements.nearIdenticalClusters(db, since, options.nearWindowMinutes);

  const result: ScanResult = {
    scannedSince: since.toISOString(),
    sameDocumentClusters: sameDocument.length,
    nearIdenticalClusters: nearIdentical.length,
    newAlerts: 0,
    grownAlerts: 0,
    newAlertIds: [],
  };
  const clusters = [
    ...sameDocument.map((row) => ({ kind: 'SAME_DOCUMENT' as const, row })),
    ...nearIdentical.map((row) => ({ kind: 'NEAR_IDENTICAL' as const, row })),
  ];
  for (const { kind, row } of clusters) {
    const change = await record(db, kind, row, options.nearWindowMinutes);
    if (!change) continue;
    if (change.change === 'new') {
      result.newAlerts += 1;
      if (result.newAlertIds.length < MAX_NEW_ALERT_IDS) result.newAlertIds.push(change.alertId);
    } else {
      result.grownAlerts += 1;
    }
    onChange(change);
  }
  return result;
}

/** Records a cluster: a new alert, a grown one, or nothing when its alert already names every order. */
async function record(
  db: Tx,
  kind: DuplicateKind,
  cluster: ClusterRow,
  windowMinutes: number,
): Promise<AlertChange | undefined> {
  // The alerts this cluster continues: same kind and key, naming one of its orders. More than one
  // when an order bridged two runs (or alerts of the pairwise era); the oldest carries on.
  const statements = statementsFor(db).duplicateScan;
  const known = await statements.knownAlerts(db, kind, cluster.cluster_key, cluster.order_nos);

  const keyOf = new Map<string, string>();
  for (const alert of known)
    alert.order_nos.forEach((orderNo, i) => keyOf.set(orderNo, alert.idempotent_keys[i] ?? ''));
  cluster.order_nos.forEach((orderNo, i) => keyOf.set(orderNo, cluster.keys[i] ?? ''));
  const orderNos = [...keyOf.keys()].sort();
  const keys = orderNos.map((orderNo) => keyOf.get(orderNo) ?? '');
  const lastOrderAt = new Date(
    Math.max(cluster.last_order_at.getTime(), ...known.map((alert) => alert.last_order_at.getTime())),
  );
  const detail = describe(kind, cluster, orderNos, keys, windowMinutes);

  const [keeper, ...merged] = known;
  if (!keeper) {
    const alertKey = `${kind}:${createHash('sha256').update(orderNos.join(',')).digest('hex')}`;
    const inserted = await statements.insertAlert(db, {
      alertKey,
      kind,
      cluster,
      orderNos,
      keys,
      detail,
      lastOrderAt,
    });
    return inserted !== undefined
      ? { change: 'new', alertId: inserted.toString(), kind, orderCount: orderNos.length, detail }
      : undefined;
  }
  if (orderNos.length === keeper.order_nos.length && merged.length === 0) return undefined;

  await statements.growAlert(db, keeper.id, { orderNos, keys, detail, lastOrderAt });
  if (merged.length > 0) {
    await statements.supersede(
      db,
      keeper.id,
      merged.map((alert) => alert.id),
    );
  }
  return { change: 'grown', alertId: keeper.id.toString(), kind, orderCount: orderNos.length, detail };
}

/** What an operator reads: the cluster in one line, naming its first few orders or keys. */
function describe(
  kind: DuplicateKind,
  cluster: ClusterRow,
  orderNos: string[],
  keys: string[],
  windowMinutes: number,
): string {
  if (kind === 'SAME_DOCUMENT') {
    return `approval ${cluster.approval_no} ${cluster.operation} has ${orderNos.length} orders under different keys: ${named(keys)}`;
  }
  return `${orderNos.length} orders of different approvals have the same customer (${cluster.customer_id}), currency and lines, each at most ${windowMinutes} minute(s) after the one before: ${named(orderNos)}`;
}

function named(items: string[]): string {
  const shown = items.slice(0, NAMED_IN_DETAIL).join(', ');
  return items.length > NAMED_IN_DETAIL ? `${shown} and ${items.length - NAMED_IN_DETAIL} more` : shown;
}

export interface AlertListing {
  /** Alerts not superseded, most recently recorded or grown first. */
  alerts: Awaited<ReturnType<typeof listAlerts>>;
  /** How many alerts match in all (the listing shows at most `limit`). */
  total: number;
}

/**
 * Alerts not superseded by a larger one, most recently recorded or grown first; with `since`, only
 * clusters with an order created since then (what a scan of that lookback saw).
 */
export async function listDuplicateAlerts(
  db: Tx,
  options: { limit?: number; since?: Date } = {},
): Promise<AlertListing> {
  const where = {
    supersededBy: null,
    ...(options.since ? { lastOrderAt: { gte: options.since } } : {}),
  };
  const [alerts, total] = await Promise.all([
    listAlerts(db, where, options.limit ?? 100),
    db.duplicateAlert.count({ where }),
  ]);
  return { alerts, total };
}

function listAlerts(db: Tx, where: { supersededBy: null; lastOrderAt?: { gte: Date } }, limit: number) {
  return db.duplicateAlert.findMany({ where, orderBy: [{ updatedAt: 'desc' }, { id: 'desc' }], take: limit });
}
