// The line of turns in front of the MySQL/MariaDB pool, against a pool that behaves as the
// `mariadb` one does: a connection given back goes to whichever caller asks next, ahead of those
// queued. A caller that asks again at once starves one that waits; in line, each is served in turn.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTurns, inTurn, type QueuedPool } from '../../../../../services/db/stores/fair-pool.js';

/** A pool of `size` connections whose queue is served only when nobody asks first (the mariadb pool's way). */
function bargingPool(size: number, acquireTimeoutMs: number) {
  const idle = Array.from({ length: size }, (_, id) => ({ id }));
  const queue: { resolve: (connection: { id: number }) => void }[] = [];
  const lend = (connection: { id: number }) => ({
    release: () => {
      idle.push(connection);
      // The queue is looked at later; a caller asking before then takes the connection.
      setImmediate(() => {
        const next = queue.shift();
        const free = idle.shift();
        if (next && free) next.resolve(free);
        else if (free) idle.unshift(free);
      });
    },
    end: () => undefined,
    destroy: () => undefined,
  });
  const pool = {
    getConnection: () => {
      const free = idle.shift();
      if (free) return Promise.resolve(lend(free));
      return new Promise<ReturnType<typeof lend>>((resolve, reject) => {
        const entry = { resolve: (connection: { id: number }) => (clearTimeout(timer), resolve(lend(connection))) };
        const timer = setTimeout(() => {
          queue.splice(queue.indexOf(entry), 1);
          reject(Object.assign(new Error('pool timeout'), { errno: 45028 }));
        }, acquireTimeoutMs);
        queue.push(entry);
      });
    },
    query: () => Promise.resolve([]),
    execute: () => Promise.resolve([]),
    batch: () => Promise.resolve([]),
    totalConnections: () => size,
  };
  return pool;
}

/** `busy` callers that each take a connection, hold it a tick and ask again at once, and one patient caller. */
async function patientCallerBeside(pool: QueuedPool, busy: number): Promise<'served' | 'timed out'> {
  let stop = false;
  const busyCallers = Array.from({ length: busy }, async () => {
    while (!stop) {
      const connection = await pool.getConnection().catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 1));
      await connection?.release();
    }
  });
  // Once the busy ones hold every connection.
  await new Promise((resolve) => setTimeout(resolve, 5));
  const patient = await pool.getConnection().then(
    (connection) => (connection.release(), 'served' as const),
    () => 'timed out' as const,
  );
  stop = true;
  await Promise.all(busyCallers);
  return patient;
}

describe('the MySQL pool, its callers in line', () => {
  it('alone, the pool lets callers that ask again at once starve one that waits (broken on purpose: no line)', async () => {
    assert.equal(await patientCallerBeside(bargingPool(2, 200), 4), 'timed out');
  });

  it('in line, the caller that waits is served in its turn beside the same busy callers', async () => {
    assert.equal(await patientCallerBeside(inTurn(bargingPool(2, 200), 2, 200), 4), 'served');
  });

  it('serves waiting callers in the order they came, and gives a turn back once however often it is released', async () => {
    const turns = createTurns(1);
    const first = await turns.take(1_000);
    const order: string[] = [];
    const second = turns.take(1_000).then((giveBack) => (order.push('second'), giveBack));
    const third = turns.take(1_000).then((giveBack) => (order.push('third'), giveBack));
    assert.deepEqual(turns.counts(), { held: 1, waiting: 2 });
    first();
    first();
    (await second)();
    (await third)();
    assert.deepEqual(order, ['second', 'third']);
    assert.deepEqual(turns.counts(), { held: 0, waiting: 0 });
  });

  it('a caller not served within the acquire timeout fails as the pool does (errno 45028), and leaves the line', async () => {
    const turns = createTurns(1);
    const held = await turns.take(1_000);
    await assert.rejects(turns.take(20), (error: Error & { errno?: number }) => {
      assert.equal(error.errno, 45028);
      assert.match(error.message, /pool timeout/);
      return true;
    });
    assert.deepEqual(turns.counts(), { held: 1, waiting: 0 });
    held();
  });

  it("a connection lent again has one give-back in front of the pool's own release, not one per loan", async () => {
    let released = 0;
    const connection = {
      release: () => void (released += 1),
      end: () => undefined,
      destroy: () => undefined,
    };
    const pool = {
      getConnection: () => Promise.resolve(connection),
      query: () => Promise.resolve([]),
      execute: () => Promise.resolve([]),
      batch: () => Promise.resolve([]),
    };
    const inLine = inTurn(pool, 1, 100);
    for (let loan = 0; loan < 3; loan += 1) (await inLine.getConnection()).release();
    assert.equal(released, 3);
    // Each loan took and gave back its turn: a fourth is served at once.
    await inLine.getConnection();
  });
});
