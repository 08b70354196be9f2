// How `orders-cli` runs a command: parses its options, opens what it needs, prints the result.
// Human output by default, `--json` for scripts; `--help` on every command; exit 0 ok, 1 failure
// (a refusal, a finding, an unreachable dependency), 2 usage error. The command list and the loader
// of the settings are passed in by the entry point (app/cli-main.ts), which runs them on the
// process's arguments, streams and environment; `runCommand` runs one command on others (a caller
// in the same process).
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ConfigError } from '../../services/config/environment.js';
import { warnOfDeprecatedSettings } from '../../services/temporal/settings.js';
import { failureOutcome } from '../../submission/failure-outcome.js';
import { type Command, UsageError } from './commands/shared.js';
import { type CliConfig, createContext } from './context.js';
import { failureOutput } from './failure-output.js';

const GLOBAL_OPTIONS = { json: { type: 'boolean' as const }, help: { type: 'boolean' as const, short: 'h' } };

function overview(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((command) => command.name.length));
  return [
    'usage: orders-cli <command> [options] [--json]',
    '',
    'Operate exactly-once-orders: look up keys, decide compensations, scan for duplicates,',
    'purge expired idempotency records, replay workflow histories.',
    '',
    'commands:',
    ...commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
    'options for every command:',
    '  --json      print the result as JSON (progress stays on stderr)',
    "  -h, --help  show the command's help",
    '',
    'exit codes: 0 ok, 1 failure or finding, 2 usage error',
  ].join('\n');
}

function help(command: Command): string {
  return [
    `usage: orders-cli ${command.name} ${command.usage}`,
    '',
    command.summary,
    '',
    'also: --json, -h/--help',
  ].join('\n');
}

/** Where a command's lines go and the settings it is configured with. */
export interface CliIo {
  /** The result: one line or block at a time, without its newline. */
  out: (text: string) => void;
  /** Usage, failures and progress. */
  err: (text: string) => void;
  /**
   * Loads the settings (app/operator-config.ts), once a command is about to run: usage and help
   * need none, and a bad setting is the command's failure (exit 1), said as the setting's error.
   */
  config: () => CliConfig;
}

/** Runs the command `argv` names, out of `commands`, and returns its exit code. */
export async function runCommand(commands: readonly Command[], argv: string[], io: CliIo): Promise<number> {
  const { out, err } = io;
  const [name, ...rest] = argv;
  if (!name) {
    err(overview(commands));
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    out(overview(commands));
    return 0;
  }
  const command = commands.find((candidate) => candidate.name === name);
  if (!command) {
    err(`unknown command: ${name}\n\n${overview(commands)}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: { ...command.options, ...GLOBAL_OPTIONS },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    err(`${(error as Error).message}\n\n${help(command)}`);
    return 2;
  }
  if (parsed.values.help) {
    out(help(command));
    return 0;
  }
  const json = parsed.values.json === true;
  let context;
  try {
    const config = io.config();
    warnOfDeprecatedSettings(config.temporal, err);
    context = createContext(config, err);
  } catch (error) {
    err(error instanceof ConfigError ? error.message : String(error));
    return 1;
  }
  try {
    const result = await command.run(context, parsed.values, parsed.positionals);
    out(json ? JSON.stringify(result.data, null, 2) : result.human);
    return result.ok ? 0 : 1;
  } catch (error) {
    if (error instanceof UsageError) {
      err(`${error.message}\n\n${help(command)}`);
      return 2;
    }
    const { exitCode, text } = failureOutput(command.name, failureOutcome(error), json);
    err(text);
    return exitCode;
  } finally {
    await context.close();
  }
}

/**
 * Runs the command the process's arguments name, out of `commands`, with the settings `config`
 * loads, and exits with its code.
 */
export async function runCli(commands: readonly Command[], config: () => CliConfig): Promise<void> {
  // The SDK's own log (replay workers) must not mix into the result on stdout: its errors only, on
  // stderr; a replay that fails is reported in the command's result. The Temporal runtime keeps the
  // event loop alive and takes SIGINT/SIGTERM for itself: the CLI exits explicitly when done.
  Runtime.install({
    logger: new DefaultLogger('ERROR', (entry) => process.stderr.write(`${entry.level} ${entry.message}\n`)),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
    shutdownSignals: [],
  });
  const code = await runCommand(commands, process.argv.slice(2), {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    config,
  });
  process.stdout.write('', () => process.exit(code));
}
