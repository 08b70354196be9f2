// The MySQL/MariaDB pool's callers served in the order they asked. The `mariadb` pool hands a
// connection that comes back to whichever call asks for one next, ahead of the calls already
// queued: under load, a caller that asks again at once (the next statement of a busy worker) keeps
// taking it, and a caller queued since the pool filled up waits out its acquire timeout ("pool
// timeout: failed to retrieve a connection from pool", then Prisma's "Unable to start a
// transaction in the given time") while the others are served in milliseconds. In front of the
// pool, a line of turns: at most the pool's size of callers hold a connection or run a statement,
// the others wait in the order they came, each at most the acquire timeout, and a connection given
// back goes to the first of them. PostgreSQL's pool (pg-pool) already hands a freed client to its
// first waiter.

/** A turn taken: given back once, whatever calls it again. */
type GiveBack = () => void;

export interface Turns {
  /** Waits for a turn, at most `timeoutMs`; rejects with the pool's own timeout error past it. */
  take(timeoutMs: number): Promise<GiveBack>;
  /** Callers holding a turn, and callers waiting for one. */
  counts(): { held: number; waiting: number };
}

/** The mariadb pool's error for a connection not free in time (ER_GET_CONNECTION_TIMEOUT). */
const POOL_TIMEOUT_ERRNO = 45028;

/**
 * The error the pool itself throws when no connection is free in time, field for field: the
 * adapter takes an error with `sqlMessage` for the driver's and passes its errno on, so that the
 * classification table reads it as the pool's wait (DatabaseBusy, retried) on every path.
 */
function poolTimeout(timeoutMs: number, limit: number, waiting: number): Error {
  const message = `pool timeout: failed to retrieve a connection from pool after ${timeoutMs}ms (${limit} in use, ${waiting} waiting)`;
  return Object.assign(new Error(message), {
    name: 'SqlError',
    sqlMessage: message,
    errno: POOL_TIMEOUT_ERRNO,
    code: 'ER_GET_CONNECTION_TIMEOUT',
    sqlState: 'HY000',
    fatal: false,
  });
}

/** A line of `limit` turns, first come first served. */
export function createTurns(limit: number): Turns {
  let held = 0;
  const waiting: { grant: () => void }[] = [];
  const giveBackOnce = (): GiveBack => {
    let given = false;
    return () => {
      if (given) return;
      given = true;
      held -= 1;
      waiting.shift()?.grant();
    };
  };
  return {
    take(timeoutMs) {
      if (held < limit && waiting.length === 0) {
        held += 1;
        return Promise.resolve(giveBackOnce());
      }
      return new Promise((resolve, reject) => {
        const entry = {
          grant: () => {
            clearTimeout(timer);
            held += 1;
            resolve(giveBackOnce());
          },
        };
        const timer = setTimeout(() => {
          const at = waiting.indexOf(entry);
          if (at >= 0) waiting.splice(at, 1);
          reject(poolTimeout(timeoutMs, limit, waiting.length));
        }, timeoutMs);
        waiting.push(entry);
      });
    },
    counts: () => ({ held, waiting: waiting.length }),
  };
}

/** What of a `mariadb` pool the line stands in front of: its connections and its one-statement calls. */
export interface QueuedPool {
  getConnection(): Promise<{
    release: () => unknown;
    end: () => unknown;
    close?: () => unknown;
    destroy: () => unknown;
  }>;
  query(...args: never[]): Promise<unknown>;
  execute(...args: never[]): Promise<unknown>;
  batch(...args: never[]): Promise<unknown>;
}

/**
 * `pool` with its callers in the line of `turns` (as many turns as the pool has connections): a
 * connection taken holds its turn until it is released, ended, closed or destroyed; a statement run
 * on the pool holds one until it answers. Every other member is the pool's own.
 */
export function inTurn<P extends QueuedPool>(pool: P, turns: Turns, acquireTimeoutMs: number): P {
  const oneStatement =
    (run: (...args: never[]) => Promise<unknown>) =>
    async (...args: never[]) => {
      const giveBack = await turns.take(acquireTimeoutMs);
      try {
        return await run(...args);
      } finally {
        giveBack();
      }
    };
  const getConnection = async () => {
    const giveBack = await turns.take(acquireTimeoutMs);
    let connection: Awaited<ReturnType<P['getConnection']>>;
    try {
      connection = (await pool.getConnection()) as Awaited<ReturnType<P['getConnection']>>;
    } catch (error) {
      giveBack();
      throw error;
    }
    // Each loan is an object of its own (mariadb's promise API): whichever of its ways back is
    // taken first gives the turn back.
    for (const name of ['release', 'end', 'close', 'destroy'] as const) {
      const own = connection[name];
      if (typeof own !== 'function') continue;
      connection[name] = () => {
        giveBack();
        return own.call(connection);
      };
    }
    return connection;
  };
  const wrapped: Partial<Record<keyof QueuedPool, unknown>> = {
    getConnection,
    query: oneStatement(pool.query.bind(pool)),
    execute: oneStatement(pool.execute.bind(pool)),
    batch: oneStatement(pool.batch.bind(pool)),
  };
  return new Proxy(pool, {
    get(target, name) {
      if (typeof name === 'string' && Object.hasOwn(wrapped, name)) return wrapped[name as keyof QueuedPool];
      // Read on the pool itself: its getters reach private fields the proxy does not have.
      const value: unknown = Reflect.get(target, name);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
