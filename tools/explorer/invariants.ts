// The promises checked against PostgreSQL and Temporal themselves: after every command the cheap
// ones, and once the run's workflows are idle (quiescence) the ones that need the dust to settle.
import { Prisma } from '../../services/db/generated/prisma/client.js';
import { SCARCE_SKU, SCARCE_STOCK, SKUS, STOCK } from './stack.js';
import { InvariantViolation, type Model, SLOTS, slotLabel, type World } from './world.js';
import { sleep } from '../harness/time.js';

/** A read transaction that sees one snapshot of the database for all its statements. */
const ONE_SNAPSHOT = { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead };

/** Statuses that need nobody: the key's story is over. */
const SETTLED = ['DELIVERED', 'COMPENSATED'];

async function ordersPerKey(world: World): Promise<Map<string, number>> {
  const rows = await world.stack.orders.orderMain.groupBy({
    by: ['idempotentKey'],
    where: { approvalNo: { startsWith: world.prefix } },
    _count: { _all: true },
  });
  return new Map(rows.map((row) => [row.idempotentKey, row._count._all]));
}

async function recordStatuses(world: World): Promise<Map<string, string>> {
  const rows = await world.stack.orders.idempotencyRecord.findMany({
    where: { approvalNo: { startsWith: world.prefix } },
    select: { idempotentKey: true, status: true },
  });
  return new Map(rows.map((row) => [row.idempotentKey, row.status]));
}

/** After every command. */
export async function checkAlways(model: Model, world: World): Promise<void> {
  const orders = await ordersPerKey(world);
  const statuses = await recordStatuses(world);
  for (const [key, count] of orders) {
    if (count > 1) throw new InvariantViolation('at most one order per key', `${key} has ${count} orders`);
  }
  for (const [key, count] of world.receiptsPerKey()) {
    if (count > 1) throw new InvariantViolation('one receipt per order', `${key}'s approval carries ${count} receipts`);
  }
  for (const [slot, state] of model.keys) {
    if (state.abandoned && orders.has(world.keyOf(slot))) {
      throw new InvariantViolation(
        'an abandoned key stays abandoned: never an order, never opened again',
        `${slotLabel(slot)} was abandoned, and an order was written for it`,
      );
    }
    // The record's status cannot show it (the status writer refuses to move an abandoned key), so
    // Temporal answers: a run of `order-<key>` other than the one there at the abandon was started after it.
    if (state.abandoned) {
      const run = await world.latestRunId(world.orderWorkflow(slot));
      if (run !== undefined && run !== state.runAtAbandon) {
        throw new InvariantViolation(
          'an abandoned key stays abandoned: never an order, never opened again',
          `${slotLabel(slot)} was abandoned, and a new run of its order workflow was started`,
        );
      }
    }
    const key = world.keyOf(slot);
    const status = statuses.get(key);
    if (
      state.endedUnwritten &&
      !state.abandoned &&
      (orders.has(key) || (status !== 'FAILED' && status !== 'COMPENSATED'))
    ) {
      throw new InvariantViolation(
        'a key whose story ended unwritten is opened again only by an operator',
        `${slotLabel(slot)} was FAILED or COMPENSATED with no order; without an operator it is now ${status ?? 'gone'}${orders.has(key) ? ', with an order' : ''}`,
      );
    }
    if ((status === 'FAILED' || status === 'COMPENSATED') && !orders.has(key)) state.endedUnwritten = true;
    if (state.answered2xx && state.answers202 === 0 && !state.purged && !state.connectorClaimed) {
      throw new InvariantViolation(
        'a key answered 2xx got exactly one 202',
        `${slotLabel(slot)} was answered 200 duplicate, and no delivery ever got 202`,
      );
    }
  }
  // Stock, each read in one snapshot (an order and its reservation commit together). A transaction
  // is one snapshot only at REPEATABLE READ: at PostgreSQL's default, READ COMMITTED, each statement
  // takes its own, and an order committing between the two reads looks like a reservation without
  // its order. The run's own keys: what a key holds is exactly its order's lines (nothing without
  // an order).
  const keys = world.allKeys();
  const [reservations, lines] = await world.stack.orders.$transaction(
    [
      world.stack.orders.stockReservation.findMany({
        where: { releasedAt: null, idempotentKey: { in: keys } },
        select: { idempotentKey: true, sku: true, quantity: true },
      }),
      world.stack.orders.orderLine.findMany({
        where: { order: { idempotentKey: { in: keys } } },
        select: { sku: true, quantity: true, order: { select: { idempotentKey: true } } },
      }),
    ],
    ONE_SNAPSHOT,
  );
  const amounts = new Map<string, { key: string; sku: string; held: number; ordered: number }>();
  const amountOf = (key: string, sku: string) => {
    const id = `${key}\u0000${sku}`;
    const amount = amounts.get(id) ?? { key, sku, held: 0, ordered: 0 };
    amounts.set(id, amount);
    return amount;
  };
  for (const row of reservations) amountOf(row.idempotentKey, row.sku).held += row.quantity;
  for (const row of lines) amountOf(row.order.idempotentKey, row.sku).ordered += row.quantity;
  const held = [...amounts.values()].filter((amount) => amount.held !== amount.ordered);
  for (const row of held) {
    throw new InvariantViolation(
      'stock: reserved = the sum of existing orders, on_hand unchanged',
      `${row.key} holds ${row.held} of ${row.sku} reserved, and its order has ${row.ordered}`,
    );
  }
  // And the totals: inventory.reserved is what the reservations hold, on_hand never moves.
  const skus = [...SKUS, SCARCE_SKU];
  const [stock, holding] = await world.stack.orders.$transaction(
    [
      world.stack.orders.inventory.findMany({ where: { sku: { in: skus } } }),
      world.stack.orders.stockReservation.groupBy({
        by: ['sku'],
        where: { sku: { in: skus }, releasedAt: null },
        _sum: { quantity: true },
        orderBy: { sku: 'asc' },
      }),
    ],
    ONE_SNAPSHOT,
  );
  const heldOf = new Map(holding.map((row) => [row.sku, row._sum?.quantity ?? 0]));
  const rows = stock.map((row) => ({
    sku: row.sku,
    on_hand: row.onHand,
    reserved: row.reserved,
    held: heldOf.get(row.sku) ?? 0,
  }));
  for (const row of rows) {
    const onHand = row.sku === SCARCE_SKU ? SCARCE_STOCK : STOCK;
    if (row.on_hand !== onHand || row.reserved !== Number(row.held)) {
      throw new InvariantViolation(
        'stock: reserved = the sum of existing orders, on_hand unchanged',
        `${row.sku}: on_hand ${row.on_hand} (was ${onHand}), reserved ${row.reserved}, reservations hold ${row.held}`,
      );
    }
  }
}

/** Statuses in which a running workflow waits for a person, not for work. */
const WAITING_FOR_A_PERSON = ['DELIVERY_FAILED', 'COMPENSATING'];

/**
 * Waits, bounded, until no key of the run has work in flight: every workflow of the run has ended,
 * or waits for an operator's decision.
 */
export async function waitForQuiescence(world: World, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const statuses = await recordStatuses(world);
    let busy = false;
    for (const slot of SLOTS.keys()) {
      const status = statuses.get(world.keyOf(slot));
      if (WAITING_FOR_A_PERSON.includes(status ?? '')) continue;
      const running =
        (await world.workflowStatus(world.orderWorkflow(slot))) === 'RUNNING' ||
        (await world.workflowStatus(world.compensationWorkflow(slot))) === 'RUNNING';
      if (running) busy = true;
    }
    if (!busy) return;
    await sleep(500);
  }
}

/** At quiescence: every key is settled or looked after, abandoned keys stay abandoned. */
export async function checkAtRest(model: Model, world: World): Promise<void> {
  await checkAlways(model, world);
  const statuses = await recordStatuses(world);
  let awaiting: Set<string> | undefined;
  for (const slot of SLOTS.keys()) {
    const key = world.keyOf(slot);
    const status = statuses.get(key);
    const state = model.keys.get(slot);
    if (state?.abandoned && status !== undefined && status !== 'COMPENSATED') {
      throw new InvariantViolation(
        'an abandoned key stays abandoned: never an order, never opened again',
        `${slotLabel(slot)} was abandoned, and is ${status} again`,
      );
    }
    if (status === undefined || SETTLED.includes(status)) continue;
    const running =
      (await world.workflowStatus(world.orderWorkflow(slot))) === 'RUNNING' ||
      (await world.workflowStatus(world.compensationWorkflow(slot))) === 'RUNNING';
    if (running) continue;
    if (!awaiting) {
      const listed = await world.cli(['awaiting', '--limit', '1000', '--unconfirmed-after', '0']);
      world.count('(check) orders-cli awaiting');
      const rows = Array.isArray(listed.data) ? (listed.data as { idempotencyKey: string }[]) : [];
      awaiting = new Set(rows.map((row) => row.idempotencyKey));
    }
    if (!awaiting.has(key)) {
      throw new InvariantViolation(
        'every unsettled key has a running workflow or is listed by `orders-cli awaiting`',
        `${slotLabel(slot)} is ${status}, no workflow runs for it, and \`orders-cli awaiting\` does not list it`,
      );
    }
  }
}
