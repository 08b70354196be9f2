// The transition table on its own: closed over the statuses, every status reachable from the one a
// key is claimed with, and the ways out of the statuses where a key's story stops or waits for a
// person exactly the ones listed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  allowedPredecessors,
  canTransition,
  INITIAL_STATUS,
  ORDER_STATUSES,
  type OrderStatus,
  STATUS_TRANSITIONS,
} from '../../../domain/order-status.js';

/** Where each status may go, as the rows say (a row needing a fact counts: a caller can state it). */
function successors(from: OrderStatus): OrderStatus[] {
  return STATUS_TRANSITIONS.filter((row) => row.from === from).map((row) => row.to);
}

describe('the status transition table', () => {
  it('is closed over ORDER_STATUSES, one row per pair, each with a reason', () => {
    const statuses = new Set<string>(ORDER_STATUSES);
    const pairs = new Set<string>();
    for (const row of STATUS_TRANSITIONS) {
      assert.ok(statuses.has(row.from), `${row.from} is a status`);
      assert.ok(statuses.has(row.to), `${row.to} is a status`);
      assert.ok(!pairs.has(`${row.from}->${row.to}`), `${row.from}->${row.to} is listed once`);
      pairs.add(`${row.from}->${row.to}`);
      assert.ok(row.reason.trim().length > 0, `${row.from}->${row.to} says why`);
    }
  });

  it('reaches every status from the one a key is claimed with', () => {
    assert.equal(INITIAL_STATUS, 'RECEIVED');
    const reached = new Set<OrderStatus>([INITIAL_STATUS]);
    const queue: OrderStatus[] = [INITIAL_STATUS];
    for (let status = queue.shift(); status !== undefined; status = queue.shift()) {
      for (const next of successors(status)) {
        if (!reached.has(next)) queue.push(next);
        reached.add(next);
      }
    }
    assert.deepEqual([...reached].sort(), [...ORDER_STATUSES].sort());
  });

  it('lets settled keys go nowhere, and keys waiting for a person only where an operator sends them', () => {
    const exits = (from: OrderStatus) => successors(from).sort();
    // The story is over: acknowledged downstream, or abandoned by an operator.
    assert.deepEqual(exits('DELIVERED'), []);
    assert.deepEqual(exits('COMPENSATED'), []);
    // Compensation ended without a decision: only compensation run again, or a resubmit.
    assert.deepEqual(exits('FAILED'), ['COMPENSATING', 'RECEIVED', 'SUBMITTED']);
    // A refused delivery: only a redelivery (or mark-handled), which may fail again.
    assert.deepEqual(exits('DELIVERY_FAILED'), ['DELIVERED', 'DELIVERY_FAILED']);
    // Nothing goes back to RECEIVED but an operator's resubmit of a failed write.
    assert.deepEqual(allowedPredecessors('RECEIVED'), ['COMPENSATING', 'FAILED']);
  });

  it('allows a written order to be marked FAILED only when the caller states that it landed', () => {
    assert.equal(canTransition('SUBMITTED', 'FAILED'), false);
    assert.equal(canTransition('SUBMITTED', 'FAILED', { orderLanded: true }), true);
    assert.deepEqual(allowedPredecessors('FAILED'), ['RECEIVED', 'COMPENSATING']);
    assert.deepEqual(allowedPredecessors('FAILED', { orderLanded: true }), ['RECEIVED', 'SUBMITTED', 'COMPENSATING']);
  });

  it('answers canTransition and allowedPredecessors from the same rows', () => {
    for (const from of ORDER_STATUSES) {
      for (const to of ORDER_STATUSES) {
        const listed = STATUS_TRANSITIONS.some((row) => row.from === from && row.to === to && !row.onlyIf);
        assert.equal(canTransition(from, to), listed, `${from}->${to}`);
        assert.equal(allowedPredecessors(to).includes(from), listed, `${from} before ${to}`);
      }
    }
  });
});
