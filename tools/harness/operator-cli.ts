// `orders-cli` against the test's stack (the service's database, Temporal and timeout ladder): as an
// operator runs it, a separate process through its bin (`cli`), or the same command run in this
// process through the function the bin calls (`cliInProcess`), without a process's start-up.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadOperatorConfig } from '../../app/operator-config.js';
import { COMMANDS } from '../../edges/cli/commands/index.js';
import { runCommand } from '../../edges/cli/run-cli.js';
import type { TestService } from './service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A command in-process that has not ended by then fails its test instead of hanging the run. */
const COMMAND_DEADLINE_MS = 120_000;

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment a command reads: the service's database, Temporal and timeouts. */
function cliEnv(service: TestService, extraEnv: Record<string, string>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: service.config.databaseUrl,
    TEMPORAL_ADDRESS: service.config.temporal.address,
    TEMPORAL_TASK_QUEUE: service.config.temporal.taskQueue,
    COMPENSATION_DECISION_TIMEOUT_MS: String(service.config.writePolicy.decisionTimeoutMs),
    ACTIVITY_SCHEDULE_TO_CLOSE_MS: String(service.config.writePolicy.scheduleToCloseMs),
    ACTIVITY_START_TO_CLOSE_MS: String(service.config.writePolicy.startToCloseMs),
    DB_STATEMENT_TIMEOUT_MS: String(service.config.writePolicy.statementTimeoutMs),
    ...extraEnv,
  };
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
        env: cliEnv(service, extraEnv),
        // A hung command fails the test instead of hanging the run.
        timeout: COMMAND_DEADLINE_MS,
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/**
 * The command run in this process by `runCommand` (edges/cli/run-cli.ts), the function the bin
 * runs on its own arguments, streams and environment: the same parsing, output and exit codes, its
 * lines captured as the bin would print them. What only the process adds (the bin's start, its
 * runtime, its exit) is `cli`'s.
 */
export async function cliInProcess(
  service: TestService,
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const env = cliEnv(service, extraEnv);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`orders-cli ${args.join(' ')} did not end in ${COMMAND_DEADLINE_MS} ms`)),
      COMMAND_DEADLINE_MS,
    );
  });
  try {
    const code = await Promise.race([
      runCommand(COMMANDS, args, {
        out: (text) => (stdout += `${text}\n`),
        err: (text) => (stderr += `${text}\n`),
        config: () => loadOperatorConfig(env),
      }),
      deadline,
    ]);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}
