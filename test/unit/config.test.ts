import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../config/env.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return [...error.problems];
  }
  assert.fail('expected the configuration to be refused');
}

describe('configuration', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.temporal.namespace, 'default');
    assert.equal(config.temporal.taskQueue, 'order-submission');
    assert.equal(config.http.port, 3000);
    assert.deepEqual(
      {
        attempts: config.writePolicy.maxAttempts,
        initial: config.writePolicy.initialIntervalMs,
        max: config.writePolicy.maxIntervalMs,
        statement: config.writePolicy.statementTimeoutMs,
        startToClose: config.writePolicy.startToCloseMs,
        scheduleToClose: config.writePolicy.scheduleToCloseMs,
      },
      { attempts: 3, initial: 500, max: 30_000, statement: 2_000, startToClose: 5_000, scheduleToClose: 60_000 },
    );
    assert.equal(config.retentionDays, 30);
  });

  it('stops on a malformed value, naming the variable', () => {
    assert.match(problemsOf({ PORT: 'eighty' }).join('\n'), /^PORT:/m);
    assert.match(problemsOf({ RETRY_MAX_ATTEMPTS: '0' }).join('\n'), /^RETRY_MAX_ATTEMPTS:/m);
    assert.match(problemsOf({ DATABASE_URL: 'mysql://x' }).join('\n'), /^DATABASE_URL:/m);
    assert.match(problemsOf({ TEMPORAL_ADDRESS: 'localhost' }).join('\n'), /^TEMPORAL_ADDRESS:/m);
  });

  it('refuses a timeout ladder that is upside down', () => {
    assert.match(
      problemsOf({ DB_STATEMENT_TIMEOUT_MS: '6000', ACTIVITY_START_TO_CLOSE_MS: '5000' }).join('\n'),
      /DB_STATEMENT_TIMEOUT_MS: must be below ACTIVITY_START_TO_CLOSE_MS/,
    );
    assert.match(
      problemsOf({ ACTIVITY_START_TO_CLOSE_MS: '70000' }).join('\n'),
      /ACTIVITY_START_TO_CLOSE_MS: must be below ACTIVITY_SCHEDULE_TO_CLOSE_MS/,
    );
  });

  it('requires WEBHOOK_SECRET in production', () => {
    assert.match(problemsOf({ NODE_ENV: 'production' }).join('\n'), /^WEBHOOK_SECRET:/m);
    assert.equal(loadConfig({ NODE_ENV: 'production', WEBHOOK_SECRET: 'a-long-enough-secret' }).nodeEnv, 'production');
  });
});
