// `orders-cli` as an operator runs it: a separate process through its bin, against the test's
// stack (the service's database, Temporal and timeout ladder).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestService } from './service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `packageRoot`: the bin of the package installed there (a release) instead of this checkout's. */
export function cli(
  service: TestService,
  args: string[],
  extraEnv: Record<string, string> = {},
  packageRoot = ROOT,
): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(packageRoot, 'bin/orders-cli.mjs'), ...args],
      {
        cwd: packageRoot,
        env: {
          ...process.env,
          DATABASE_URL: service.config.databaseUrl,
          TEMPORAL_ADDRESS: service.config.temporal.address,
          TEMPORAL_TASK_QUEUE: service.config.temporal.taskQueue,
          COMPENSATION_DECISION_TIMEOUT_MS: String(service.config.writePolicy.decisionTimeoutMs),
          ACTIVITY_SCHEDULE_TO_CLOSE_MS: String(service.config.writePolicy.scheduleToCloseMs),
          ACTIVITY_START_TO_CLOSE_MS: String(service.config.writePolicy.startToCloseMs),
          DB_STATEMENT_TIMEOUT_MS: String(service.config.writePolicy.statementTimeoutMs),
          ...extraEnv,
        },
        // A hung command fails the test instead of hanging the run.
        timeout: 120_000,
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}
