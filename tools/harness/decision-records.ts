// What a key's compensation records say about who decided its waits — one record per wait (per
// compensation run) — read the same way by the explorer and the chaos run when a card's click and
// another operator's decision go in at the same moment.
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { sleep } from './time.js';

/** Whether a wait of the key since `since` was decided by `decidedBy` (a card's operator), looked for up to 20 s. */
export async function decisionRecorded(
  orders: PrismaClient,
  key: string,
  since: Date,
  decidedBy: string,
): Promise<boolean> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const decided = await orders.compensationRecord.findFirst({
      where: { idempotentKey: key, decidedBy, decidedAt: { gte: since } },
    });
    if (decided) return true;
    if (Date.now() > deadline) return false;
    await sleep(250);
  }
}

/**
 * Whether the key's waits since `since` were decided in two records, one by a card and one by a
 * decider `other` accepts: each wait decided once. A decision that names no wait (the CLI's, an
 * update's), arriving after the card's and a new failure, decides the key's next wait.
 */
export async function decidedInTwoWaits(
  orders: PrismaClient,
  key: string,
  since: Date,
  other: (decidedBy: string) => boolean,
): Promise<boolean> {
  const decided = await orders.compensationRecord.findMany({
    where: { idempotentKey: key, decidedAt: { gte: since } },
    select: { orderRunId: true, decidedBy: true },
  });
  const byCard = decided.find((record) => record.decidedBy?.startsWith('card:'));
  const byOther = decided.find((record) => record.decidedBy !== null && other(record.decidedBy));
  return byCard !== undefined && byOther !== undefined && byCard.orderRunId !== byOther.orderRunId;
}
