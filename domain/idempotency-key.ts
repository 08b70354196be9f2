// The idempotency key is born here and only here (docs/architecture.md, decision 1). Every entry
// point — the signed webhook, the MCP tool, each OA vendor's connector — calls this
// module; nothing downstream ever builds a key of its own, and a retry never builds a new one. The
// seed's classic pitfall was a key regenerated per attempt (a fresh UUID on every retry): deriving
// it from business identifiers makes a regenerated key identical anyway, and passing it as workflow
// input means it is never rebuilt.
//
// This file is imported by workflow code: keep it free of Node built-ins.

import { type Door, ORDER_NAMING_DOORS } from './door.js';

export const OPERATIONS = ['MAIN', 'SUPPLEMENT'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** Approval numbers are plain ASCII, case-sensitive and never trimmed: anything else is refused. */
export const APPROVAL_NO_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Keys fit `order_main.idempotent_key VARCHAR(128)` with room to spare (at most 84 characters). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 128;

/** A well-formed key, as `idempotencyKeyFor` builds it. */
export const IDEMPOTENCY_KEY_PATTERN = /^APPROVAL:([A-Za-z0-9][A-Za-z0-9._-]{0,63}):(MAIN|SUPPLEMENT)$/;

/** `APPROVAL:<approvalNo>:<operation>` — one approval may create a MAIN and a SUPPLEMENT write. */
export function idempotencyKeyFor(approvalNo: string, operation: Operation): string {
  if (!APPROVAL_NO_PATTERN.test(approvalNo)) {
    throw new RangeError(`approvalNo ${JSON.stringify(approvalNo)} is not a plain ASCII approval number`);
  }
  return `APPROVAL:${approvalNo}:${operation}`;
}

/** Reads a key back into its parts; undefined for anything that is not a well-formed key. */
export function parseIdempotencyKey(key: string): { approvalNo: string; operation: Operation } | undefined {
  const match = IDEMPOTENCY_KEY_PATTERN.exec(key);
  if (!match) return undefined;
  return { approvalNo: match[1] as string, operation: match[2] as Operation };
}

/**
 * A door a key can be claimed through: the signed webhook, the MCP tool or an OA vendor's connector
 * (domain/door.ts). A claim records its door, and the key belongs to it (docs/architecture.md,
 * decision 38).
 */
export type KeySource = Door;

/**
 * Whether a delivery through `door` of a key `claimedBy` claimed is refused as another source's:
 * always, for a key an OA connector claimed or a connector's delivery of a key another door claimed
 * (the connector's order is read from its OA's form, and a guessed instance id must not take it);
 * between the webhook and the MCP tool only when the orders differ — the same order through the
 * other door is a redelivery (`sameOrder`: the fingerprints are equal).
 */
export function isKeySourceConflict(claimedBy: KeySource, door: KeySource, sameOrder: boolean): boolean {
  if (claimedBy === door) return false;
  return !(sameOrder && ORDER_NAMING_DOORS.includes(claimedBy) && ORDER_NAMING_DOORS.includes(door));
}

/** The order workflow's id: a redelivered webhook lands on the same workflow. */
export function orderWorkflowIdFor(key: string): string {
  return `order-${key}`;
}

/** The compensation workflow's id, derived from the same key, so it too can exist only once. */
export function compensationWorkflowIdFor(key: string): string {
  return `compensation-${key}`;
}

/**
 * The key a workflow id was derived from (`order-<key>`, `compensation-<key>`, `delivery-<key>`),
 * read back, never rebuilt; undefined for a workflow that belongs to no key (the safety nets).
 */
export function idempotencyKeyOfWorkflowId(workflowId: string): string | undefined {
  const dash = workflowId.indexOf('-');
  const key = workflowId.slice(dash + 1);
  return dash > 0 && IDEMPOTENCY_KEY_PATTERN.test(key) ? key : undefined;
}
