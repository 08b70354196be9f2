// Reads and writes of compensation_record: why a run of the order workflow could not write its
// order, what reconciliation found, and the decision taken — one row per failed run, so running
// compensation again for the same failure records it once.
import type { CompensationDecision } from '../../domain/order-status.js';
import type { CompensationRecord as RecordRow } from './generated/prisma/client.js';
import type { Tx } from './prisma-client.js';
import type { NewCompensation } from './stores/statements.js';
import { statementsFor } from './stores/store.js';
import { OPERATOR_RECOMPENSATION } from '../../domain/error-classification.js';

export type { NewCompensation };

export interface CompensationRecord extends NewCompensation {
  id: bigint;
  decision: CompensationDecision | null;
  /** An operator, a tool, or `reconciliation` when compensation continued a landed order itself. */
  decidedBy: string | null;
  decidedAt: Date | null;
  createdAt: Date;
}

/** Who records a decision when compensation continues a landed order on its own (the workflow's `decidedBy`). */
const RECONCILIATION = 'reconciliation';

// The reason type of a compensation an operator ran again (`recompensate`); the classification
// module names it, as it names every type a key's record may carry.
export { OPERATOR_RECOMPENSATION };

/** The record of one failed run, if compensation recorded it. */
export async function findCompensation(
  db: Tx,
  idempotencyKey: string,
  orderRunId: string,
): Promise<CompensationRecord | undefined> {
  const row = await db.compensationRecord.findUnique({
    where: { idempotentKey_orderRunId: { idempotentKey: idempotencyKey, orderRunId } },
  });
  return row ? toRecord(row) : undefined;
}

/** The run id of the key's latest recorded failure, if any. */
export async function latestCompensatedRunId(db: Tx, idempotencyKey: string): Promise<string | undefined> {
  const row = await db.compensationRecord.findFirst({
    where: { idempotentKey: idempotencyKey },
    orderBy: { id: 'desc' },
    select: { orderRunId: true },
  });
  return row?.orderRunId;
}

/** Records a failed run; a run already recorded is left as it is (ON CONFLICT DO NOTHING). */
export async function recordCompensation(db: Tx, record: NewCompensation): Promise<void> {
  await statementsFor(db).recordCompensation(db, record);
}

/**
 * Records the decision for a failed run, unless one is recorded already (the first decision
 * stands). Answers whether this call recorded it.
 */
export async function recordCompensationDecision(
  db: Tx,
  request: { idempotencyKey: string; orderRunId: string; decision: CompensationDecision; decidedBy: string },
): Promise<boolean> {
  const { count } = await db.compensationRecord.updateMany({
    where: { idempotentKey: request.idempotencyKey, orderRunId: request.orderRunId, decision: null },
    data: { decision: request.decision, decidedBy: request.decidedBy, decidedAt: new Date() },
  });
  return count > 0;
}

/**
 * How often reconciliation already continued the key's landed order on its own, for runs other
 * than `orderRunId`, since the latest operator action: a decision taken by a person, or a
 * compensation an operator ran again (`recompensate`) — either starts the count afresh.
 */
export async function continuationsSinceOperatorAction(
  db: Tx,
  idempotencyKey: string,
  orderRunId: string,
): Promise<number> {
  const operatorAction = await db.compensationRecord.findFirst({
    where: {
      idempotentKey: idempotencyKey,
      OR: [{ reasonType: OPERATOR_RECOMPENSATION }, { decidedBy: { not: RECONCILIATION } }],
    },
    orderBy: { id: 'desc' },
    select: { id: true },
  });
  return db.compensationRecord.count({
    where: {
      idempotentKey: idempotencyKey,
      decidedBy: RECONCILIATION,
      NOT: { orderRunId },
      ...(operatorAction ? { id: { gt: operatorAction.id } } : {}),
    },
  });
}

function toRecord(row: RecordRow): CompensationRecord {
  return {
    id: row.id,
    idempotencyKey: row.idempotentKey,
    orderRunId: row.orderRunId,
    reasonType: row.reasonType,
    reason: row.reason,
    attempts: row.attempts,
    orderLanded: row.orderLanded,
    releasedLines: row.releasedLines,
    decision: row.decision as CompensationDecision | null,
    decidedBy: row.decidedBy,
    decidedAt: row.decidedAt,
    createdAt: row.createdAt,
  };
}
