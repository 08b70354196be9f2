// What the stall checks and the hostile-body bench share: text built to make a reader backtrack,
// and the CPU time a piece of work takes — what the event loop waits for. The wall clock would
// also count the time a loaded machine lets the process sleep, which no reader causes.

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
