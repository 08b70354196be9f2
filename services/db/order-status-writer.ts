// The one writer of a key's status (idempotency_record.status): a change applies only when the
// key's current status is one the transition table allows it from (domain/order-status.ts,
// docs/architecture.md, decision 16). A refused change is logged and answered, never thrown.
import { allowedPredecessors, type OrderStatus } from '../../domain/order-status.js';
import type { Tx } from './prisma-client.js';
import type { StatusChange, StatusDetails, TransitionRow } from './stores/statements.js';
import { statementsFor } from './stores/store.js';

export type { StatusChange, StatusDetails };

export type Transition =
  /** The key was in `from` and is now in the status asked for. */
  | { applied: true; from: OrderStatus; acceptedAt: Date }
  /**
   * The table does not allow the change from `from`: status, last error and updated_at are as
   * they were. `from` is undefined when the key has no record (the retention purge removed it).
   */
  | { applied: false; from: OrderStatus | undefined; acceptedAt: Date | undefined };

/** Where a refused change is reported: the activity's logger, or any with the same `info`. */
export interface TransitionLog {
  info(message: string, attributes?: Record<string, unknown>): void;
}

export type { TransitionRow };

/**
 * The rule every store's statement keeps (stores/): the key's row is locked before it is judged,
 * so the status the change was judged against is the one it replaces, also when another
 * transaction changed it meanwhile. Only an allowed change moves the status, the last error and
 * updated_at. Attempts only ever grow, and every call marks the workflow started: each comes from
 * a running workflow, so a later redelivery must not start the key again (docs/architecture.md,
 * decision 12).
 */
export function allowedFrom(change: StatusChange): string[] {
  return allowedPredecessors(change.status, { orderLanded: change.orderLanded === true });
}

/**
 * Reads the statement's answer: an applied change, or a refused one — logged with the key, the
 * status it was in and the one asked for.
 */
export function transitionFrom(
  row: TransitionRow | undefined,
  idempotencyKey: string,
  to: OrderStatus,
  log: TransitionLog,
): Transition {
  if (!row) {
    log.info('status not changed: the key has no record', { idempotencyKey, from: undefined, to });
    return { applied: false, from: undefined, acceptedAt: undefined };
  }
  const from = row.from_status as OrderStatus;
  if (row.applied) return { applied: true, from, acceptedAt: row.created_at };
  log.info('status change refused: the transition table does not allow it', { idempotencyKey, from, to });
  return { applied: false, from, acceptedAt: row.created_at };
}

/** Moves the key to `to` when the table allows it from the key's current status (see above). */
export async function transitionStatus(
  db: Tx,
  idempotencyKey: string,
  to: OrderStatus,
  details: StatusDetails,
  log: TransitionLog,
): Promise<Transition> {
  const change = { ...details, status: to };
  const row = await statementsFor(db).changeStatus(db, idempotencyKey, change, allowedFrom(change));
  return transitionFrom(row, idempotencyKey, to, log);
}

/** The status the key holds once the change was asked for: the new one, or the one it stayed in. */
export function statusAfter(transition: Transition, to: OrderStatus): OrderStatus | undefined {
  return transition.applied ? to : transition.from;
}
