// A PostgreSQL server that ends a connection (a restart, an administrator) says so on the client as
// an 'error' event, and an event nobody listens to ends the process. The pool listens only while a
// client is idle, and whoever checks one out listens only from its next line of code — too late
// when a server shutting down sends a new connection's "ready" and its FATAL in one TCP read: both
// are read before that line runs. The listener here is on each client for its whole life. It says
// nothing: the next statement on the client fails as "not queryable", which the classification
// table reads as a lost connection (retried), and the pool drops the client on its release.
import type pg from 'pg';

/** Gives every client of `pool`, from the moment it connects, a listener for its lost connection. */
export function listenForLostConnections(pool: pg.Pool): void {
  pool.on('connect', (client) => client.on('error', () => undefined));
}
