// PostgreSQL behind a transaction-mode pooler (PgBouncer with `pool_mode = transaction`), as
// `pgbouncer=true` in DATABASE_URL says — the name Prisma gives the same flag. Such a pooler lends a
// server connection for one transaction only: it refuses the timeouts a client sets when it
// connects ("unsupported startup parameter"), and a session setting or lock would reach whichever
// client runs next. So the timeouts come from the role (ALTER ROLE … SET), checked at start, and
// the migrations, which hold a session lock, take a direct connection.

const FLAG = 'pgbouncer';

/** Whether the URL goes through a transaction-mode pooler (`?pgbouncer=true`). */
export function behindTransactionPooler(url: string | undefined): boolean {
  if (!url) return false;
  try {
    return new URL(url).searchParams.get(FLAG) === 'true';
  } catch {
    return false;
  }
}

/** The URL without the flag, as the driver gets it. */
export function withoutPoolerFlag(url: string): string {
  const parsed = new URL(url);
  parsed.searchParams.delete(FLAG);
  return parsed.toString();
}

/** The session timeouts a role gives its connections, in milliseconds (0: none). */
export interface RoleTimeouts {
  role: string;
  statement_timeout: number;
  lock_timeout: number;
}

/**
 * What is wrong with the role's timeouts when no timeout can be set per connection: each must be
 * set, and no longer than DB_STATEMENT_TIMEOUT_MS, or a write may outlast its activity's attempt.
 */
export function roleTimeoutProblems(timeouts: RoleTimeouts, statementTimeoutMs: number): string[] {
  return (['statement_timeout', 'lock_timeout'] as const).flatMap((name) => {
    const ms = timeouts[name];
    if (ms > 0 && ms <= statementTimeoutMs) return [];
    return [
      `DATABASE_URL: behind a transaction pooler (pgbouncer=true) the role sets the timeouts, and ` +
        `${timeouts.role}'s ${name} is ${ms === 0 ? 'unset' : `${ms} ms`}: ` +
        `ALTER ROLE ${timeouts.role} SET ${name} = '${statementTimeoutMs}ms' (DB_STATEMENT_TIMEOUT_MS)`,
    ];
  });
}
