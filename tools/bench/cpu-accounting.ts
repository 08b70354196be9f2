// CPU time by part of the system, read from /proc: Temporal's server, PostgreSQL (the postmaster and
// every backend), the MySQL/MariaDB server when the run uses one, the API and worker processes and
// the load generator. Snapshots before and after
// a measurement give the CPU milliseconds each part spent per completed order.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface ProcStat {
  pid: number;
  ppid: number;
  cpuMs: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces: fields start after its closing parenthesis.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // utime + stime, plus cutime + cstime: the CPU of children already reaped (PostgreSQL's
    // backends come and go with the pools' connections).
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    return { pid, ppid: Number(fields[1]), cpuMs: (ticks * 1000) / TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** The CPU of `root` and all its descendants (PostgreSQL forks a backend per connection). */
function treeCpuMs(root: number | undefined, all: ProcStat[]): number {
  if (!root) return 0;
  let total = 0;
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.pop() as number;
    const stat = all.find((candidate) => candidate.pid === pid);
    if (stat) total += stat.cpuMs;
    for (const child of all) if (child.ppid === pid) queue.push(child.pid);
  }
  return total;
}

export type CpuParts = Record<string, number>;

/** What no process of the bench spent: other work on the same machine, which the figures share it with. */
export const OUTSIDE = 'outside the bench';

/** CPU milliseconds the whole machine spent busy since boot (every core), from /proc/stat. */
function machineBusyMs(): number {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle and iowait is work.
  const busy = fields.slice(0, 8).reduce((sum, ticks, index) => (index === 3 || index === 4 ? sum : sum + ticks), 0);
  return (busy * 1000) / TICKS_PER_SECOND;
}

/** True when `url` names a server on this machine's loopback (whose process /proc can show). */
export function isOnThisMachine(url: string): boolean {
  try {
    return ['localhost', '127.0.0.1', '[::1]'].includes(new URL(url).hostname);
  } catch {
    return false;
  }
}

/** The machine's MySQL/MariaDB server (a service, one process with a thread per connection), if running. */
function mysqlServer(pids: number[]): number | undefined {
  return pids.find((pid) => {
    try {
      return ['mariadbd', 'mysqld'].includes(readFileSync(`/proc/${pid}/comm`, 'utf8').trim());
    } catch {
      return false;
    }
  });
}

/**
 * Finds the stack's processes once (by the data folder in their command line); then `snapshot()`.
 * With `mysql` (a MySQL/MariaDB on this machine's loopback), the machine's MySQL/MariaDB server is
 * a part of its own: its CPU then counts for the bench, not outside it (whatever else used that
 * server meanwhile counts with it, as PostgreSQL's background work counts in MySQL's measurements).
 */
export function cpuAccounting(
  dataDir: string,
  processes: Record<string, () => number | undefined>,
  { mysql = false }: { mysql?: boolean } = {},
) {
  const pids = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
  const temporal = pids.find((pid) => cmdline(pid).includes('start-dev') && cmdline(pid).includes(dataDir));
  // The postmaster: the PostgreSQL binary started on the stack's data folder (not a node process).
  const postgres = pids.find(
    (pid) => cmdline(pid).includes(`${dataDir}/postgres`) && !cmdline(pid).startsWith(process.execPath),
  );
  const mysqld = mysql ? mysqlServer(pids) : undefined;
  return {
    snapshot(): CpuParts {
      const all = readdirSync('/proc')
        .filter((name) => /^\d+$/.test(name))
        .map((name) => readStat(Number(name)))
        .filter((stat): stat is ProcStat => stat !== undefined);
      const usage = process.cpuUsage();
      const parts: CpuParts = {
        temporal: treeCpuMs(temporal, all),
        postgres: treeCpuMs(postgres, all),
        ...(mysqld ? { mysql: treeCpuMs(mysqld, all) } : {}),
        'load generator': (usage.user + usage.system) / 1000,
      };
      for (const [name, pid] of Object.entries(processes)) parts[name] = treeCpuMs(pid(), all);
      const ours = Object.values(parts).reduce((sum, ms) => sum + ms, 0);
      parts[OUTSIDE] = machineBusyMs() - ours;
      return parts;
    },
  };
}

/** CPU ms per completed item, by part, between two snapshots. */
export function cpuPerItem(before: CpuParts, after: CpuParts, completed: number): CpuParts {
  return Object.fromEntries(
    Object.keys(after).map((name) => [name, ((after[name] ?? 0) - (before[name] ?? 0)) / Math.max(completed, 1)]),
  );
}
