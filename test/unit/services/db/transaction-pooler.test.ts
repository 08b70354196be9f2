// What `pgbouncer=true` in DATABASE_URL changes before any connection: the flag read and taken off
// the URL the driver gets, the role's timeouts judged against DB_STATEMENT_TIMEOUT_MS, and the
// migrations kept off the pooler (they hold a session lock).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../../../app/env.js';
import { ConfigError } from '../../../../services/config/environment.js';
import {
  behindTransactionPooler,
  roleTimeoutProblems,
  withoutPoolerFlag,
} from '../../../../services/db/transaction-pooler.js';

const POOLED = 'postgresql://app:secret@pgbouncer:6432/orders?pgbouncer=true&sslmode=require';
const DIRECT = 'postgresql://owner:secret@postgres:5432/orders';

function problemsOf(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.message;
  }
  return '';
}

describe('a transaction-mode pooler in DATABASE_URL', () => {
  it('is the pgbouncer=true flag only, taken off the URL the driver gets', () => {
    assert.equal(behindTransactionPooler(POOLED), true);
    for (const url of [DIRECT, `${DIRECT}?pgbouncer=false`, undefined, 'not a url']) {
      assert.equal(behindTransactionPooler(url), false, String(url));
    }
    assert.equal(withoutPoolerFlag(POOLED), 'postgresql://app:secret@pgbouncer:6432/orders?sslmode=require');
  });

  it('asks the role for both timeouts, set and no longer than DB_STATEMENT_TIMEOUT_MS', () => {
    assert.deepEqual(roleTimeoutProblems({ role: 'app', statement_timeout: 2000, lock_timeout: 1000 }, 2000), []);
    const problems = roleTimeoutProblems({ role: 'app', statement_timeout: 0, lock_timeout: 5000 }, 2000);
    assert.equal(problems.length, 2);
    assert.match(
      problems[0] ?? '',
      /app's statement_timeout is unset: ALTER ROLE app SET statement_timeout = '2000ms'/,
    );
    assert.match(problems[1] ?? '', /app's lock_timeout is 5000 ms: ALTER ROLE app SET lock_timeout = '2000ms'/);
  });

  it('keeps the migrations off the pooler', () => {
    assert.match(
      problemsOf({ DATABASE_URL: POOLED }),
      /MIGRATE_ON_START: the migrations cannot run through the transaction pooler/,
    );
    assert.match(
      problemsOf({ DATABASE_URL: POOLED, MIGRATE_ON_START: 'false', DATABASE_MIGRATION_URL: POOLED }),
      /DATABASE_MIGRATION_URL: a direct connection/,
    );
    assert.equal(problemsOf({ DATABASE_URL: POOLED, DATABASE_MIGRATION_URL: DIRECT }), '');
    assert.equal(problemsOf({ DATABASE_URL: POOLED, MIGRATE_ON_START: 'false' }), '');
    assert.doesNotMatch(problemsOf({ DATABASE_URL: POOLED }), /secret/, 'no password in the message');
  });
});
