// What the stall checks and the hostile-body bench share: text built to make a reader backtrack,
// and the CPU time a piece of work takes — what the event loop waits for. The wall clock would
// also count the time a loaded machine lets the process sleep, which no reader causes.
import { readFileSync } from 'node:fs';

/** `unit` repeated after `prefix`, to at most `size` characters in all. */
export function filled(size: number, unit: string, prefix = ''): string {
  return prefix + unit.repeat(Math.floor((size - prefix.length) / unit.length));
}

/** The process's CPU milliseconds since `before` (a `process.cpuUsage()`). */
export function cpuMillisecondsSince(before: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

/** The CPU milliseconds `work` takes. */
export function cpuMillisecondsOf(work: () => void): number {
  const before = process.cpuUsage();
  work();
  return cpuMillisecondsSince(before);
}

/**
 * The CPU milliseconds of this process's main thread, the one its event loop runs on (Linux, from
 * /proc, in steps of 10 ms): the process's own total would also count its garbage collector's,
 * its thread pool's and its native libraries' threads, which hold no answer back.
 */
export function mainThreadCpuMs(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime, the 14th and 15th fields of the whole line, in clock ticks of 10 ms.
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
