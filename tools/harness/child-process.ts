// The service's own entry points as child processes the harness can kill and restart.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nodeArgsFor } from './test-build.js';
import { sleep } from './time.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// Whatever ends the harness — a crash included — ends the processes it started.
const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export interface ManagedProcess {
  /** Starts (or starts again) and resolves once `readyLine` appeared in the output. */
  start: () => Promise<void>;
  kill: (signal?: NodeJS.Signals) => Promise<void>;
  output: () => string;
  /** The running process's id; undefined when it is not running. */
  pid: () => number | undefined;
  /** How the last run ended: its exit code, or the signal that ended it; undefined while running. */
  exit: () => { code: number | null; signal: NodeJS.Signals | null } | undefined;
}

export interface ManagedProcessOptions {
  name: string;
  entry: string;
  env: NodeJS.ProcessEnv;
  /** Ready once this appears in the output … */
  readyLine?: string;
  /** … or once this answers true (for processes that log little). */
  ready?: () => Promise<boolean>;
  readyTimeoutMs?: number;
  /**
   * How node runs `entry`: by default the test run's transpiled copy of it, or the TypeScript
   * through tsx (tools/harness/test-build.ts); `[]` for built JavaScript.
   */
  nodeArgs?: string[];
  /** Node's own flags (a heap limit) before the default way of running `entry`. */
  nodeFlags?: string[];
  /** The directory it runs in: the project's root unless given (an installed release elsewhere). */
  cwd?: string;
  /** Each line of output as it comes (a supervisor that shows it), besides keeping it. */
  onOutput?: (line: string) => void;
  /** Called whenever a run ends, however it ends. */
  onExit?: (exit: { code: number | null; signal: NodeJS.Signals | null }) => void;
}

export function managedProcess(options: ManagedProcessOptions): ManagedProcess {
  let child: ChildProcess | undefined;
  /** Resolves once the current run has exited and its output has been read to the end. */
  let closed: Promise<void> = Promise.resolve();
  let log = '';
  /** Keeps a stream's output, and hands `onOutput` its complete lines. */
  const collector = () => {
    let partialLine = '';
    return (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      log += text;
      if (log.length > 2_000_000) log = log.slice(-1_000_000);
      if (!options.onOutput) return;
      const lines = (partialLine + text).split('\n');
      partialLine = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) options.onOutput(line);
    };
  };
  return {
    output: () => log,
    pid: () => (child && child.exitCode === null && child.signalCode === null ? child.pid : undefined),
    exit: () =>
      child && (child.exitCode !== null || child.signalCode !== null)
        ? { code: child.exitCode, signal: child.signalCode }
        : undefined,
    start: async () => {
      const startedAt = log.length;
      const args = options.nodeArgs
        ? [...options.nodeArgs, options.entry]
        : [...(options.nodeFlags ?? []), ...nodeArgsFor(options.entry)];
      const current = spawn(process.execPath, args, {
        cwd: options.cwd ?? ROOT,
        env: options.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = current;
      closed = new Promise((resolve) => current.once('close', () => resolve()));
      live.add(current);
      current.once('exit', (code, signal) => {
        live.delete(current);
        options.onExit?.({ code, signal });
      });
      current.stdout?.on('data', collector());
      current.stderr?.on('data', collector());
      const deadline = Date.now() + (options.readyTimeoutMs ?? 90_000);
      const isReady = async () =>
        options.ready ? options.ready().catch(() => false) : log.slice(startedAt).includes(options.readyLine ?? '');
      while (!(await isReady())) {
        if (current.exitCode !== null)
          throw new Error(`${options.name} exited during start-up:\n${log.slice(startedAt)}`);
        if (Date.now() > deadline) throw new Error(`${options.name} did not become ready:\n${log.slice(startedAt)}`);
        await sleep(100);
      }
    },
    // Resolves once the process's last lines are in output(): 'exit' may come before its pipes drain.
    kill: async (signal = 'SIGKILL') => {
      const current = child;
      if (current && current.exitCode === null && current.signalCode === null) current.kill(signal);
      await closed;
    },
  };
}
