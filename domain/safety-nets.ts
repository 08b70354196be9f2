// What the scheduled safety nets take and return: crosses the workflow boundary, so plain data.

/**
 * What an alert is about: orders the scan found doubled, or an approval revoked in its OA after its
 * order was written (recorded by the connector's route, not by the scan).
 */
export type DuplicateKind = 'SAME_DOCUMENT' | 'NEAR_IDENTICAL' | 'REVOKED_AFTER_ORDER';

export interface ScanOptions {
  /** Look at orders created in this many minutes before now (older ones were scanned before). */
  lookbackMinutes: number;
  /** Near-identical: each order of a run at most this many minutes after the one before. */
  nearWindowMinutes: number;
}

/**
 * What one scan reports: counts and the ids of the alerts it recorded for the first time — never
 * the orders themselves, so the result stays small however large a cluster grows (it crosses
 * Temporal's payload limit otherwise). The alerts hold the orders.
 */
export interface ScanResult {
  scannedSince: string;
  /** Documents with orders under more than one key, seen by this scan. */
  sameDocumentClusters: number;
  /** Runs of near-identical orders of different approvals, seen by this scan. */
  nearIdenticalClusters: number;
  /** Alerts recorded for the first time. */
  newAlerts: number;
  /** Known alerts whose cluster gained orders. */
  grownAlerts: number;
  /** Ids of the new alerts, at most MAX_NEW_ALERT_IDS of them (newAlerts counts them all). */
  newAlertIds: string[];
}

/** A scan that records more new alerts than this names only the first ones; `alerts` lists them all. */
export const MAX_NEW_ALERT_IDS = 500;

export interface PurgeResult {
  cutoff: string;
  dryRun: boolean;
  /** Purged, or — with dryRun — that would be purged. */
  purged: number;
  /** Older than the window but kept, by status. */
  kept: Record<string, number>;
  /**
   * Of the kept, settled orders whose key no delivery was ever answered for (every one heard 503):
   * kept for the sender's 202 until it redelivers, or an operator releases them.
   */
  unanswered: number;
}
