// `npm test`: lint, typecheck, then every test file under node's own runner, against a real
// Temporal dev server and a real PostgreSQL that this script starts once for the whole run
// (node --test has no global setup). DATABASE_URL / TEMPORAL_ADDRESS point it at others instead.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startStack } from '../dev/stack.js';
import { redactUrl } from '../../domain-node/redact-url.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { 'skip-checks': { type: 'boolean', default: false } },
});

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: 'inherit' });
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

function testFiles(): string[] {
  if (positionals.length > 0) return positionals;
  return ['test/unit', 'test/replay', 'test/integration', 'test/chaos'].flatMap((dir) =>
    readdirSync(path.join(ROOT, dir))
      .filter((name) => name.endsWith('.test.ts'))
      .sort()
      .map((name) => path.join(dir, name)),
  );
}

async function main(): Promise<number> {
  if (!values['skip-checks']) {
    for (const [name, command, args] of [
      ['lint', 'npx', ['eslint', '.']],
      ['format', 'npx', ['prettier', '--check', '.']],
      ['typecheck', 'npx', ['tsc', '--noEmit']],
    ] as const) {
      console.log(`\n== ${name}`);
      const code = await run(command, [...args]);
      if (code !== 0) {
        console.error(`${name} failed`);
        return code;
      }
    }
  }

  console.log('\n== starting Temporal dev server and PostgreSQL for the test run');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'orders-test-'));
  // As root, PostgreSQL runs as its own user, which must reach the data folder.
  chmodSync(dataDir, 0o755);
  const started = Date.now();
  const stack = await startStack({
    dataDir,
    ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}),
    ...(process.env.TEMPORAL_ADDRESS ? { temporalAddress: process.env.TEMPORAL_ADDRESS } : {}),
    namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
    headless: true,
    persistTemporal: false,
  });
  console.log(
    // A DATABASE_URL of the caller's own is shown without its password (CI logs are widely read).
    `   ready in ${Date.now() - started} ms: PostgreSQL ${process.env.DATABASE_URL ? redactUrl(stack.databaseUrl) : stack.databaseUrl}, Temporal ${stack.temporalAddress}`,
  );

  try {
    console.log('\n== tests');
    return await run(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...testFiles()], {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      TEMPORAL_ADDRESS: stack.temporalAddress,
      LOG_LEVEL: 'warn',
    });
  } finally {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
