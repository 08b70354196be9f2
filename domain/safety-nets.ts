// What the scheduled safety nets take and return: crosses the workflow boundary, so plain data.

export type DuplicateKind = 'SAME_DOCUMENT' | 'NEAR_IDENTICAL';

export interface DuplicateFinding {
  kind: DuplicateKind;
  approvalNo: string | null;
  operation: string | null;
  customerId: string;
  orderNos: string[];
  idempotencyKeys: string[];
  detail: string;
  /** False when an earlier scan already recorded this finding. */
  newAlert: boolean;
}

export interface ScanOptions {
  /** Look at orders created in this many minutes before now (older ones were scanned before). */
  lookbackMinutes: number;
  /** Near-identical: two orders at most this many minutes apart. */
  nearWindowMinutes: number;
}

export interface ScanResult {
  scannedSince: string;
  findings: DuplicateFinding[];
  newAlerts: number;
}

export interface PurgeResult {
  cutoff: string;
  dryRun: boolean;
  /** Purged, or — with dryRun — that would be purged. */
  purged: number;
  /** Older than the window but kept, by status. */
  kept: Record<string, number>;
}
