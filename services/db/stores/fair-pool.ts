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

function poolTimeout(timeoutMs: number, limit: number, waiting: number): Error {
  const error = new Error(
    `pool timeout: failed to retrieve a connection from pool after ${timeoutMs}ms (${limit} in use, ${waiting} waiting)`,
  ) as Error & { errno: number; code: string; sqlState: string };
  error.errno = POOL_TIMEOUT_ERRNO;
  error.code = 'ER_GET_CONNECTION_TIMEOUT';
  error.sqlState = 'HY000';
  return error;
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
          waiting.splice(waiting.indexOf(entry), 1);
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
  getConnection(): Promise<{ release: () => unknown; end: () => unknown; destroy: () => unknown }>;
  query(...args: never[]): Promise<unknown>;
  execute(...args: never[]): Promise<unknown>;
  batch(...args: never[]): Promise<unknown>;
}

/**
 * `pool` with its callers in one line of `limit` turns: a connection taken holds its turn until it
 * is released, ended or destroyed; a statement run on the pool holds one until it answers. Every
 * other member is the pool's own.
 */
export function inTurn<P extends QueuedPool>(
  pool: P,
  limit: number,
  acquireTimeoutMs: number,
  turns = createTurns(limit),
): P {
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
  const ownMethods = new WeakMap<object, Record<'release' | 'end' | 'destroy', () => unknown>>();
  const getConnection = async () => {
    const giveBack = await turns.take(acquireTimeoutMs);
    let connection: Awaited<ReturnType<P['getConnection']>>;
    try {
      connection = (await pool.getConnection()) as Awaited<ReturnType<P['getConnection']>>;
    } catch (error) {
      giveBack();
      throw error;
    }
    // The pool lends the same connection objects again: their own methods are kept once, and each
    // loan's give-back put in front of them.
    let own = ownMethods.get(connection);
    if (!own) {
      own = { release: connection.release, end: connection.end, destroy: connection.destroy };
      ownMethods.set(connection, own);
    }
    for (const name of ['release', 'end', 'destroy'] as const) {
      const method = own[name];
      connection[name] = () => {
        giveBack();
        return method.call(connection);
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
    get(target, name, receiver) {
      if (typeof name === 'string' && Object.hasOwn(wrapped, name)) return wrapped[name as keyof QueuedPool];
      const value: unknown = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
