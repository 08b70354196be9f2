// The end of a chaos run, faults off: the run acts as the operator for every order awaiting a
// decision until no workflow is open, then waits for the broker consumer to catch up.
import type { Client } from '@temporalio/client';
import type pg from 'pg';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { compensationWorkflowIdFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { decideUpdate } from '../../workflows/definitions.js';
import { sleep } from '../harness/time.js';
import type { ChaosBroker } from './broker.js';
import { log } from './log.js';
import { TASK_QUEUE } from './stack.js';

export interface OperatorDecisions {
  resubmitted: number;
  redelivered: number;
  /** Why the operator had to redeliver: the delivery error each redelivered order recorded last. */
  redeliveredAfter: Map<string, number>;
}

/** Workflows of the run's task queue still running. */
export async function openWorkflows(client: Client): Promise<number> {
  return (await client.workflow.count(`TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running'`)).count;
}

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
}): Promise<OperatorDecisions> {
  const { orders, client } = options;
  const decided: OperatorDecisions = { resubmitted: 0, redelivered: 0, redeliveredAfter: new Map() };
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
      try {
        await client.workflow
          .getHandle(workflowId)
          .executeUpdate(decideUpdate, { args: [{ decision, decidedBy: 'chaos-operator' }] });
        decided[decision === 'resubmit' ? 'resubmitted' : 'redelivered'] += 1;
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
