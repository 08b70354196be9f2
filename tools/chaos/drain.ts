// The end of a chaos run, faults off: the run acts as the operator for every order awaiting a
// decision until no workflow is open — a compensation decided from its Feishu card and by the
// operator's own update at the same moment, of which one stands — then sees every Feishu order's
// receipt posted, and waits for the broker consumer to catch up.
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { compensationWorkflowIdFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { waitingEpisode } from '../../domain-node/decision-card-keys.js';
import { listOrdersAwaitingDecision } from '../../submission/operator-decisions/awaiting.js';
import { decideUpdate } from '../../workflows/definitions.js';
import { decidedInTwoWaits, decisionRecorded } from '../harness/decision-records.js';
import type { ChaosFeishu } from './feishu.js';
import { sleep } from '../harness/time.js';
import type { ChaosBroker } from './broker.js';
import { log } from './log.js';
import { TASK_QUEUE } from './stack.js';

/** Who the run's own decisions are recorded as. */
const OPERATOR = 'chaos-operator';

export interface OperatorDecisions {
  resubmitted: number;
  redelivered: number;
  /** Waits decided from a card and by the operator's update at the same moment: both taken is a broken promise. */
  clickedBeside: number;
  decidedTwice: string[];
  /** Why the operator had to redeliver: the delivery error each redelivered order recorded last. */
  redeliveredAfter: Map<string, number>;
}

/**
 * Workflows of the run's task queue still running, but for the scans the worker's schedules start
 * every minute: what they start is counted once it runs.
 */
export async function openWorkflows(client: Client): Promise<number> {
  return (await client.workflow.count(OPEN_WORKFLOWS)).count;
}

export const OPEN_WORKFLOWS =
  `TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running'` +
  ` AND WorkflowType != 'decisionCardScanWorkflow' AND WorkflowType != 'approvalReceiptScanWorkflow'`;

/**
 * Resubmits every compensation and redelivers every failed delivery of the run's approvals until
 * no workflow is open and every order is delivered (with `broken`, until no workflow is open), or
 * the deadline passes.
 */
export async function drainAsOperator(options: {
  orders: PrismaClient;
  client: Client;
  /** What every approval number of the run starts with. */
  approvalNumbers: string;
  deadline: number;
  broken: boolean;
  feishu: ChaosFeishu;
}): Promise<OperatorDecisions> {
  const { orders, client } = options;
  const decided: OperatorDecisions = {
    resubmitted: 0,
    redelivered: 0,
    clickedBeside: 0,
    decidedTwice: [],
    redeliveredAfter: new Map(),
  };
  log('draining');
  while (Date.now() < options.deadline) {
    const rows = (
      await orders.idempotencyRecord.findMany({
        where: { approvalNo: { startsWith: options.approvalNumbers } },
        select: { idempotentKey: true, status: true, lastError: true },
      })
    ).map((row) => ({ idempotent_key: row.idempotentKey, status: row.status, last_error: row.lastError }));
    for (const row of rows) {
      const decision =
        row.status === 'COMPENSATING'
          ? ('resubmit' as const)
          : row.status === 'DELIVERY_FAILED'
            ? ('redeliver' as const)
            : undefined;
      if (!decision) continue;
      const workflowId =
        decision === 'resubmit'
          ? compensationWorkflowIdFor(row.idempotent_key)
          : orderWorkflowIdFor(row.idempotent_key);
      const decide = () =>
        client.workflow
          .getHandle(workflowId)
          .executeUpdate(decideUpdate, { args: [{ decision, decidedBy: OPERATOR }] });
      if (decision === 'resubmit') {
        const decidedHere = await resubmitBesideACard(options.feishu, orders, row.idempotent_key, decide);
        if (decidedHere === undefined) continue;
        decided.clickedBeside += 1;
        if (decidedHere === 'both') decided.decidedTwice.push(row.idempotent_key);
        if (decidedHere !== 'neither') decided.resubmitted += 1;
        continue;
      }
      try {
        await decide();
        decided.redelivered += 1;
        if (decision === 'redeliver') {
          const cause = (row.last_error ?? 'unknown').slice(0, 100);
          decided.redeliveredAfter.set(cause, (decided.redeliveredAfter.get(cause) ?? 0) + 1);
        }
      } catch {
        // Not waiting for a decision yet (reconciliation still running): try again next round.
      }
    }
    const running = await openWorkflows(client);
    const waiting = rows.filter((row) => row.status !== 'DELIVERED').length;
    if (running === 0 && (waiting === 0 || options.broken)) break;
    await sleep(1_000);
  }
  return decided;
}

/**
 * Resubmits the key's compensation from its Feishu card and by the operator's update at the same
 * moment: which of them took it (`both` breaks the promise of one decision per waiting episode), or
 * undefined when the key does not wait for a decision yet.
 */
async function resubmitBesideACard(
  feishu: ChaosFeishu,
  orders: PrismaClient,
  key: string,
  decide: () => Promise<unknown>,
): Promise<'card' | 'operator' | 'both' | 'neither' | undefined> {
  const [waiting] = await listOrdersAwaitingDecision(orders, 1, { idempotencyKey: key });
  if (!waiting) return undefined;
  const button = {
    idempotencyKey: key,
    episode: waitingEpisode(waiting.status, waiting.waitingSince),
    decision: 'resubmit',
  };
  const [toast, operatorTook] = await Promise.all([
    feishu.click(button),
    decide().then(
      () => true,
      () => false,
    ),
  ]);
  const since = new Date(waiting.waitingSince);
  // A click answered while its decision was under way took it if its record names the card, soon.
  const cardTook =
    toast.startsWith('Done:') ||
    (toast.startsWith('Deciding') && (await decisionRecorded(orders, key, since, feishu.cardDecider)));
  if (!cardTook) return operatorTook ? 'operator' : 'neither';
  if (!operatorTook) return 'card';
  // The update names no wait: arriving after the card's decision and a new failure, it decided the
  // key's next wait, which is no second decision of this one.
  return (await decidedInTwoWaits(orders, key, since, (by) => by === OPERATOR)) ? 'card' : 'both';
}

/**
 * Runs the receipts' scan until every Feishu approval with an order carries its receipt and no
 * receipt's workflow is open, up to 2 minutes (`broken`: once): the keys still without one, and how
 * many receipts the approval carrying the most has.
 */
export async function receiptsPosted(options: {
  client: Client;
  orders: PrismaClient;
  feishu: ChaosFeishu;
  approvalNumbers: string;
  broken: boolean;
}): Promise<{ missing: string[]; maxPerApproval: number; orders: number }> {
  const { client, orders, feishu } = options;
  const ordered = await orders.orderMain.findMany({
    where: { approvalNo: { startsWith: `${options.approvalNumbers}F` } },
    select: { approvalNo: true, idempotentKey: true },
  });
  const count = () => {
    const perApproval = ordered.map((order) => feishu.receiptsOn(order.approvalNo, order.idempotentKey));
    return {
      missing: ordered.filter((_, index) => perApproval[index] === 0).map((order) => order.idempotentKey),
      maxPerApproval: Math.max(0, ...perApproval),
      orders: ordered.length,
    };
  };
  const deadline = Date.now() + 120_000;
  for (let round = 0; Date.now() < deadline; round += 1) {
    await client.workflow
      .execute('approvalReceiptScanWorkflow', {
        taskQueue: TASK_QUEUE,
        workflowId: `chaos-receipt-scan-${Date.now()}-${round}`,
        workflowExecutionTimeout: '60 seconds',
      })
      .catch(() => undefined);
    const now = count();
    // Some of the broken variant's order runs never end (their writes are filed under other keys),
    // and its receipts are not awaited: one scan, and the receipts counted as they stand.
    if (options.broken) return now;
    if (now.missing.length === 0 && (await openWorkflows(client)) === 0) return now;
    await sleep(1_000);
  }
  return count();
}

/** The effects a consumer's ledger holds for this run: how many keys, and the most for one key. */
export async function effectsOf(db: pg.Pool, schema: string): Promise<{ keys: number; maxPerKey: number }> {
  const { rows } = await db.query<{ effects: string }>(
    `SELECT count(*) AS effects FROM ${schema}.shipment_request GROUP BY idempotency_key`,
  );
  return { keys: rows.length, maxPerKey: Math.max(0, ...rows.map((row) => Number(row.effects))) };
}

/**
 * Waits (up to 2 minutes) for the broker consumer's queue to empty and its ledger to hold every
 * delivered order; false when it did not.
 */
export async function brokerConsumerCaughtUp(options: {
  /** The consumers' ledgers. */
  admin: pg.Pool;
  orders: PrismaClient;
  broker: ChaosBroker;
  approvalNumbers: string;
  broken: boolean;
}): Promise<boolean> {
  const { admin, broker } = options;
  const deliveredCount = () =>
    options.orders.idempotencyRecord.count({
      where: { approvalNo: { startsWith: options.approvalNumbers }, status: 'DELIVERED' },
    });
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    // The broken variant's statuses are not checked (its writes are filed under other keys), so the
    // delivered count means nothing there: an empty queue is all it waits for.
    const caughtUp =
      (await broker.queued()) === 0 &&
      (options.broken || (await effectsOf(admin, broker.consumerSchema)).keys >= Number(await deliveredCount()));
    if (caughtUp) return true;
    await sleep(1_000);
  }
  return false;
}
