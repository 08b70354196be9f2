// The chaos run's checks, from the database and Temporal themselves: no approval doubled or lost,
// stock exact, each consumer applied each event once, retries within the policy, every fault fired.
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { attemptsByActivityType, historySteps } from '../harness/history.js';
import { percentile } from '../harness/stats.js';
import { CHAOS_TIMINGS } from '../harness/timings.js';
import type { ChaosBroker } from './broker.js';
import { effectsOf, OPEN_WORKFLOWS, type OperatorDecisions } from './drain.js';
import type { CardClicks } from './feishu.js';
import type { Approval, WebhookAnswers } from './load.js';
import { SKUS, TASK_QUEUE } from './stack.js';

/** One row of the table: name, value, what was expected, whether it holds. */
export type Check = [string, string | number, string, boolean];

export type Stock = Map<string, { onHand: number; reserved: number }>;

export interface Findings {
  checks: Check[];
  /** `approvalNo:operation ×count` of every approval written more than once. */
  duplicates: { approvalNo: string; operation: string; orders: number }[];
  lost: Approval[];
  /** Keys not DELIVERED at the end, with their status. */
  /** With the last error the key recorded, the run's first clue to why. */
  unfinished: { key: string; status: string; lastError: string | null }[];
  /** Workflows still open at the end. */
  openWorkflowIds: string[];
  /** Where each open workflow stood: its activities pending, with their attempt and last failure. */
  openWorkflowsAt: string[];
  /** Fault kinds that never fired. */
  silentFaults: string[];
}

/** The stock of every SKU the chaos run orders from, in one read. */
export async function stockOfSkus(orders: PrismaClient): Promise<Stock> {
  const rows = await orders.inventory.findMany({ where: { sku: { in: SKUS } } });
  return new Map(rows.map((row) => [row.sku, { onHand: row.onHand, reserved: row.reserved }]));
}

export async function runChecks(run: {
  size: number;
  broken: boolean;
  started: number;
  approvals: Approval[];
  /** What every approval number of the run starts with. */
  approvalNumbers: string;
  answers: WebhookAnswers;
  /** Pushes of Feishu approvals over the long connection, by whether the API acknowledged them. */
  feishuPushes: { acknowledged: number; unacknowledged: number };
  cardClicks: CardClicks;
  /** The Feishu orders' receipts once the run ended: the orders, those without one, the most on one approval. */
  receipts: { orders: number; missing: string[]; maxPerApproval: number };
  /** The consumers' ledgers. */
  admin: pg.Pool;
  /** The order store. */
  orders: PrismaClient;
  client: Client;
  broker: ChaosBroker;
  initialStock: Stock;
  decided: OperatorDecisions;
  lateStarts: number;
  running: number;
  faults: Record<string, number>;
}): Promise<Findings> {
  const { size, approvals, answers, admin, client, broker, decided, lateStarts, running, faults } = run;
  const { feishuPushes, cardClicks, receipts } = run;
  const ofRun = { approvalNo: { startsWith: run.approvalNumbers } };
  const grouped = await run.orders.orderMain.groupBy({
    by: ['approvalNo', 'operation'],
    where: ofRun,
    _count: { _all: true },
    _min: { createdAt: true },
  });
  const orders = grouped.map((row) => ({
    approval_no: row.approvalNo,
    operation: row.operation,
    orders: row._count._all,
    created_at: row._min.createdAt as Date,
  }));
  const ordersByKey = new Map(orders.map((row) => [idempotencyKeyFor(row.approval_no, row.operation as 'MAIN'), row]));
  const ordersWritten = orders.reduce((sum, row) => sum + row.orders, 0);
  const maxPerKey = Math.max(0, ...orders.map((row) => row.orders));
  const duplicates = orders.reduce((sum, row) => sum + row.orders - 1, 0);
  const records = await run.orders.idempotencyRecord.findMany({
    where: ofRun,
    select: { idempotentKey: true, status: true, lastError: true },
  });
  const statusByKey = new Map(records.map((row) => [row.idempotentKey, row.status]));
  const lost = approvals.filter(
    (approval) =>
      !ordersByKey.has(approval.key) && !['COMPENSATING', 'COMPENSATED'].includes(statusByKey.get(approval.key) ?? ''),
  );
  const inCompensation = approvals.filter(
    (approval) => !ordersByKey.has(approval.key) && !lost.includes(approval),
  ).length;

  const finalStock = await stockOfSkus(run.orders);
  const ordered = await run.orders.orderLine.groupBy({
    by: ['sku'],
    where: { order: ofRun },
    _sum: { quantity: true },
  });
  const orderedBySku = new Map(ordered.map((row) => [row.sku, row._sum.quantity ?? 0]));
  let stockExact = true;
  let initialAvailable = 0;
  let finalAvailable = 0;
  let totalOrdered = 0;
  for (const sku of SKUS) {
    const before = run.initialStock.get(sku) ?? { onHand: 0, reserved: 0 };
    const after = finalStock.get(sku) ?? { onHand: 0, reserved: 0 };
    const quantity = orderedBySku.get(sku) ?? 0;
    initialAvailable += before.onHand - before.reserved;
    finalAvailable += after.onHand - after.reserved;
    totalOrdered += quantity;
    if (after.onHand !== before.onHand || after.reserved - before.reserved !== quantity) stockExact = false;
  }

  const httpEffects = await effectsOf(admin, 'chaos_consumer');
  const brokerEffects = await effectsOf(admin, broker.consumerSchema);
  const brokerDeliveries = broker.deliveries();
  const delivered = records.filter((row) => row.status === 'DELIVERED').length;

  const { attempts, writeReruns } = await attemptsInHistories(client);
  const policyAttempts = Number(CHAOS_TIMINGS.RETRY_MAX_ATTEMPTS);
  const maxWriteAttempt = Math.max(0, ...Object.keys(attempts.writeOrder ?? {}).map(Number));
  const maxDeliveryAttempt = Math.max(0, ...Object.keys(attempts.deliverOrderEvent ?? {}).map(Number));

  const latencies = approvals
    .map((approval) => {
      const order = ordersByKey.get(approval.key);
      return order && approval.acceptedAt ? Math.max(0, order.created_at.getTime() - approval.acceptedAt) : undefined;
    })
    .filter((value): value is number => value !== undefined)
    .sort((a, b) => a - b);

  const checks: Check[] = [
    ['approvals submitted', size, '', true],
    [
      'webhook deliveries (202 / 200 / 503 / refused / transport errors)',
      `${answers.accepted} / ${answers.duplicate} / ${answers.unavailable} / ${answers.refused} / ${answers.transportErrors}`,
      'refused 0',
      answers.refused === 0,
    ],
    [
      'Feishu approval pushes over the long connection (acknowledged / not within 2 minutes)',
      `${feishuPushes.acknowledged} / ${feishuPushes.unacknowledged}`,
      '… / 0',
      feishuPushes.unacknowledged === 0,
    ],
    [
      'approvals accepted',
      approvals.filter((approval) => approval.acceptedAt).length,
      `${size}`,
      approvals.every((approval) => approval.acceptedAt),
    ],
    ['orders written', ordersWritten, `≤ ${size}`, ordersWritten <= size],
    ['orders per approval+operation (max)', maxPerKey, '≤ 1', maxPerKey <= 1],
    ['duplicate orders', duplicates, '0', duplicates === 0],
    ['approvals neither ordered nor in compensation (lost)', lost.length, '0', lost.length === 0],
    ['approvals left in compensation', inCompensation, '', true],
    [
      'compensations resubmitted / deliveries redelivered by the operator',
      `${decided.resubmitted} / ${decided.redelivered}`,
      '',
      true,
    ],
    [
      'compensations decided from a Feishu card and by the operator at once (card took / told / other)',
      `${decided.clickedBeside} (${cardClicks.taken} / ${cardClicks.toldDecided} / ${cardClicks.other})`,
      '',
      true,
    ],
    [
      'waits decided twice (card and operator both taken)',
      decided.decidedTwice.length,
      '0',
      decided.decidedTwice.length === 0,
    ],
    [
      'Feishu orders: receipts posted (max on one approval)',
      `${receipts.orders - receipts.missing.length} of ${receipts.orders} (${receipts.maxPerApproval})`,
      `${receipts.orders} (≤ 1)`,
      receipts.maxPerApproval <= 1 && (run.broken || receipts.missing.length === 0),
    ],
    [
      'stock: initial available − ordered = final available',
      `${initialAvailable} − ${totalOrdered} = ${finalAvailable}`,
      'exact',
      stockExact && initialAvailable - totalOrdered === finalAvailable,
    ],
    ...[
      ['events applied by the consumer (per key, max)', httpEffects] as const,
      ['events applied by the broker consumer (per key, max)', brokerEffects] as const,
    ].map(
      ([name, effects]): Check => [
        name,
        `${effects.keys} (${effects.maxPerKey})`,
        `${delivered} (≤ 1)`,
        effects.maxPerKey <= 1 && (run.broken || effects.keys === delivered),
      ],
    ),
    [
      'broker consumer: applied / redeliveries absorbed / second publishes absorbed',
      `${brokerDeliveries.applied} / ${brokerDeliveries.redeliveriesAbsorbed} / ${brokerDeliveries.republishesAbsorbed}`,
      '',
      true,
    ],
    ['broker message ids delivered more than once', brokerDeliveries.messageIdsDeliveredAgain, '', true],
    ['redeliveries after the end that started a workflow', lateStarts, '0', lateStarts === 0],
    ['workflows still open after drain', running, '0', running === 0],
    [
      'orders not DELIVERED after drain',
      records.filter((row) => row.status !== 'DELIVERED').length,
      '0',
      run.broken || records.every((row) => row.status === 'DELIVERED'),
    ],
    [
      'writeOrder local runs by the attempt they ended on (attempt: runs)',
      formatHistogram(attempts.writeOrder),
      `max ${policyAttempts}`,
      // No write in the histories at all would mean this check read nothing.
      maxWriteAttempt >= 1 && maxWriteAttempt <= policyAttempts,
    ],
    [
      'writes run again after a lost workflow task (found the order at attempt 1)',
      `${writeReruns.afterLostTask} (${writeReruns.foundWritten})`,
      '',
      true,
    ],
    [
      'deliverOrderEvent attempts (attempt: activities)',
      formatHistogram(attempts.deliverOrderEvent),
      `max ${policyAttempts}`,
      maxDeliveryAttempt <= policyAttempts,
    ],
    [
      'webhook accepted → order committed, p50 / p99',
      `${percentile(latencies, 50)} ms / ${percentile(latencies, 99)} ms`,
      '',
      true,
    ],
    ...Object.entries(faults).map(([kind, count]): Check => [`fault: ${kind}`, count, '> 0', count > 0]),
    ['wall time', `${Math.round((Date.now() - run.started) / 1000)} s`, '', true],
  ];

  const openWorkflowIds: string[] = [];
  const openWorkflowsAt: string[] = [];
  if (running > 0) {
    for await (const execution of client.workflow.list({ query: OPEN_WORKFLOWS })) {
      openWorkflowIds.push(execution.workflowId);
      openWorkflowsAt.push(await whereItStands(client, execution.workflowId));
    }
  }
  return {
    checks,
    duplicates: orders
      .filter((row) => row.orders > 1)
      .map((row) => ({ approvalNo: row.approval_no, operation: row.operation, orders: row.orders })),
    lost,
    unfinished: records
      .filter((row) => row.status !== 'DELIVERED')
      .map((row) => ({ key: row.idempotentKey, status: row.status, lastError: row.lastError })),
    openWorkflowIds,
    openWorkflowsAt,
    silentFaults: Object.entries(faults)
      .filter(([, count]) => count === 0)
      .map(([kind]) => kind),
  };
}

/**
 * Attempts as the histories record them: each attempt of an activity task, and the attempt each
 * local write ended on (its marker). A local write that ran on a workflow task that was lost (its
 * worker killed, Temporal restarted) left no marker: the next run starts again from attempt 1
 * and, when the lost run had committed, finds the order — counted here.
 */
async function attemptsInHistories(client: Client) {
  const attempts: Record<string, Record<number, number>> = {};
  const writeReruns = { afterLostTask: 0, foundWritten: 0 };
  for await (const execution of client.workflow.list({ query: `TaskQueue = '${TASK_QUEUE}'` })) {
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    const steps = historySteps(history);
    attemptsByActivityType(steps, attempts);
    const write = steps.find((step) => step.kind === 'local-activity' && step.activityType === 'writeOrder');
    if (!write || write.kind !== 'local-activity') continue;
    if (steps.slice(0, steps.indexOf(write)).some((step) => step.kind === 'workflow-task-lost')) {
      writeReruns.afterLostTask += 1;
      // Found at its first attempt: the order was committed by the run on the lost task.
      const found = (write.result as { alreadyWritten?: boolean } | undefined)?.alreadyWritten === true;
      if (found && write.attempt === 1) writeReruns.foundWritten += 1;
    }
  }
  return { attempts, writeReruns };
}

/** An open workflow's pending activities (type, attempt, last failure), or that none is pending. */
async function whereItStands(client: Client, workflowId: string): Promise<string> {
  try {
    const { raw } = await client.workflow.getHandle(workflowId).describe();
    const pending = (raw.pendingActivities ?? []).map(
      (activity) =>
        `${activity.activityType?.name ?? 'activity'} attempt ${activity.attempt ?? '?'}` +
        (activity.lastFailure?.message ? ` (last failure: ${activity.lastFailure.message.slice(0, 200)})` : ''),
    );
    return `${workflowId}: ${pending.length > 0 ? `pending ${pending.join('; ')}` : 'no activity pending'}`;
  } catch (error) {
    return `${workflowId}: not described (${String(error).slice(0, 200)})`;
  }
}

function formatHistogram(histogram: Record<number, number> | undefined): string {
  if (!histogram) return 'none';
  return Object.entries(histogram)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([attempt, count]) => `${attempt}: ${count}`)
    .join(', ');
}
