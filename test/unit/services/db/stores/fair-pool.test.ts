// The line of turns in front of the MySQL/MariaDB pool, against a pool that behaves as the
// `mariadb` one does: a connection given back goes to whichever caller asks next, ahead of those
// queued. A caller that asks again at once starves one that waits; in line, each is served in turn.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { classifyError } from '../../../../../domain/error-classification.js';
import { PrismaClient as MysqlPrismaClient } from '../../../../../services/db/generated/prisma-mysql/client.js';
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
    assert.equal(await patientCallerBeside(inTurn(bargingPool(2, 200), createTurns(2), 200), 4), 'served');
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

  it('a loan gives its turn back once, whichever of its ways back (release, end, close, destroy) is taken, and however often', async () => {
    for (const way of ['release', 'end', 'close', 'destroy'] as const) {
      let released = 0;
      const pool = {
        getConnection: () =>
          Promise.resolve({
            release: () => void (released += 1),
            end: () => void (released += 1),
            close: () => void (released += 1),
            destroy: () => void (released += 1),
          }),
        query: () => Promise.resolve([]),
        execute: () => Promise.resolve([]),
        batch: () => Promise.resolve([]),
      };
      const turns = createTurns(1);
      const connection = await inTurn(pool, turns, 100).getConnection();
      connection[way]?.();
      connection.release();
      assert.deepEqual(turns.counts(), { held: 0, waiting: 0 }, way);
      assert.equal(released, 2, `${way}: the pool's own ways back still run`);
    }
  });

  it("a turn not had in time reaches the classification table as the pool's own wait (DatabaseBusy, retried), on a statement and on a transaction", async () => {
    const pool = {
      getConnection: () =>
        Promise.resolve({ release: () => undefined, end: () => undefined, destroy: () => undefined }),
      // The adapter asks the server's version once; nothing else reaches the pool here.
      query: () => Promise.resolve([['10.11.6-MariaDB']]),
      execute: () => Promise.resolve([]),
      batch: () => Promise.resolve([]),
      end: () => Promise.resolve(),
    };
    const turns = createTurns(1);
    const inLine = inTurn(pool, turns, 50);
    const client = new MysqlPrismaClient({
      adapter: new PrismaMariaDb(inLine as unknown as ConstructorParameters<typeof PrismaMariaDb>[0]),
    });
    await client.$connect();
    const held = await inLine.getConnection();
    try {
      for (const attempt of [
        () => client.inventory.findFirst(),
        () => client.$queryRawUnsafe('SELECT 1'),
        () => client.$transaction((tx) => tx.inventory.findFirst(), { maxWait: 1_000 }),
      ]) {
        const error = await attempt().then(
          () => undefined,
          (failure: unknown) => failure,
        );
        assert.ok(error, 'the statement waited past its turn and failed');
        const classified = classifyError(error);
        assert.equal(classified.errorClass, 'DatabaseBusy', inspect(error));
        assert.equal(classified.retryable, true);
      }
    } finally {
      held.release();
      await client.$disconnect();
    }
  });
});
