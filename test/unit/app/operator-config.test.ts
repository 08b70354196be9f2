// Where orders-cli and orders-mcp find the database and Temporal when the environment names
// neither: the running `npm run dev` stack's `<DATA_DIR>/dev-stack.json` — but never with
// NODE_ENV=production, where a file left in (or put into) the folder an operator runs from must not
// point a decision at another database. There a command that needs an address says what to set.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createContext } from '../../../edges/cli/context.js';
import { writeDevStackFile } from '../../../services/config/dev-stack-file.js';
import { ConfigError } from '../../../services/config/environment.js';
import { loadOperatorConfig } from '../../../app/operator-config.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
// Addresses nobody listens on: a command that took them would fail on the connection, not the setting.
const DEV_STACK = {
  databaseUrl: 'postgresql://postgres:postgres@127.0.0.1:1/orders',
  temporalAddress: '127.0.0.1:1',
  taskQueue: 'orders-dev',
};
const WHAT_TO_SET =
  /with NODE_ENV=production the dev stack's .*dev-stack\.json is not read: set DATABASE_URL and TEMPORAL_ADDRESS \(or TEMPORAL_PROFILE\)/;

describe('the operator config and the dev stack file', () => {
  const withStack = mkdtempSync(path.join(tmpdir(), 'orders-operator-config-'));
  writeDevStackFile(withStack, DEV_STACK);
  const unreadable = mkdtempSync(path.join(tmpdir(), 'orders-operator-config-'));
  writeFileSync(path.join(unreadable, 'dev-stack.json'), '{ not json');
  after(() => {
    rmSync(withStack, { recursive: true, force: true });
    rmSync(unreadable, { recursive: true, force: true });
  });

  it('outside production takes the dev stack’s addresses when the environment names none', () => {
    for (const NODE_ENV of ['development', 'test']) {
      const config = loadOperatorConfig({ NODE_ENV, DATA_DIR: withStack });
      assert.equal(config.databaseUrl, DEV_STACK.databaseUrl, NODE_ENV);
      assert.equal(config.temporal.address, DEV_STACK.temporalAddress, NODE_ENV);
      assert.equal(config.temporal.taskQueue, DEV_STACK.taskQueue, NODE_ENV);
    }
    // The file is read: one that is not JSON fails there.
    assert.throws(() => loadOperatorConfig({ NODE_ENV: 'development', DATA_DIR: unreadable }), SyntaxError);
  });

  it('with NODE_ENV=production reads no dev-stack.json, and a command that needs an address says what to set', async () => {
    for (const dataDir of [withStack, unreadable]) {
      const config = loadOperatorConfig({ NODE_ENV: 'production', DATA_DIR: dataDir });
      assert.equal(config.databaseUrl, undefined);
      assert.equal(config.temporal.address, undefined);
      const context = createContext(config, () => {});
      await assert.rejects(
        context.prisma(),
        (error: Error) => error instanceof ConfigError && /DATABASE_URL: required \(/.test(error.message),
      );
      await assert.rejects(context.prisma(), WHAT_TO_SET);
      assert.throws(() => context.temporal(), /TEMPORAL_ADDRESS: required \(with NODE_ENV=production/);
      assert.throws(() => context.lazyTemporal(), WHAT_TO_SET);
      await context.close();
    }
    // What the environment names is taken as ever.
    const named = loadOperatorConfig({
      NODE_ENV: 'production',
      DATA_DIR: withStack,
      DATABASE_URL: 'postgresql://orders:a-password-of-its-own-0123@db.internal:5432/orders',
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
    });
    assert.equal(named.databaseUrl, 'postgresql://orders:a-password-of-its-own-0123@db.internal:5432/orders');
    assert.equal(named.temporal.address, 'temporal.internal:7233');
  });

  it('orders-cli with NODE_ENV=production and only a dev stack file exits 1, naming what to set', async () => {
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        // The source, as the bin runs it outside a release: a dist/ an earlier build left is not under test.
        ['--import', 'tsx', path.join(ROOT, 'app/cli-main.ts'), 'status', 'APPROVAL:AP-PROD-1:MAIN'],
        { cwd: ROOT, env: { PATH: process.env.PATH, NODE_ENV: 'production', DATA_DIR: withStack }, timeout: 60_000 },
        (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
      );
    });
    assert.equal(code, 1, stderr);
    assert.match(stderr, /DATABASE_URL: required/);
    assert.match(stderr, WHAT_TO_SET);
    assert.ok(!stderr.includes('127.0.0.1:1'), `no address of the file is used: ${stderr}`);
  });
});
