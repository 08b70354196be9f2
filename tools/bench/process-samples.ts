// Memory and CPU of the processes the bench started, read from /proc: resident memory (VmRSS),
// its peak (VmHWM) and CPU time (utime + stime), sampled at an interval while a mode runs.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { largest } from '../harness/stats.js';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface ProcessReading {
  rssMiB: number;
  peakRssMiB: number;
  cpuMs: number;
}

function readProcess(pid: number | undefined): ProcessReading | undefined {
  if (!pid) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces: fields start after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024, cpuMs: (ticks * 1000) / TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

/** Peak resident memory of a process (VmHWM), in MiB. */
export function peakRssMiB(pid: number | undefined): number {
  return readProcess(pid)?.peakRssMiB ?? Number.NaN;
}

export interface ProcessSample {
  /** Seconds since the sampler started. */
  t: number;
  process: string;
  rssMiB: number;
  /** CPU since the previous sample, in percent of one core. */
  cpuPercent: number;
}

export interface ProcessPeak {
  peakRssMiB: number;
  peakCpuPercent: number;
  meanCpuPercent: number;
}

/** Samples every `intervalMs` until `stop()`, which answers the samples and each process's peaks. */
export function sampleProcesses(processes: Record<string, () => number | undefined>, intervalMs: number) {
  const started = performance.now();
  const samples: ProcessSample[] = [];
  const previous = new Map<string, { at: number; cpuMs: number }>();
  const first = new Map<string, { at: number; cpuMs: number }>();
  const peaks = new Map<string, number>();
  const take = () => {
    const at = performance.now();
    for (const [name, pid] of Object.entries(processes)) {
      const reading = readProcess(pid());
      if (!reading) continue;
      peaks.set(name, Math.max(peaks.get(name) ?? 0, reading.peakRssMiB));
      const before = previous.get(name);
      previous.set(name, { at, cpuMs: reading.cpuMs });
      if (!first.has(name)) first.set(name, { at, cpuMs: reading.cpuMs });
      if (!before) continue;
      samples.push({
        t: (at - started) / 1000,
        process: name,
        rssMiB: reading.rssMiB,
        cpuPercent: (100 * (reading.cpuMs - before.cpuMs)) / (at - before.at),
      });
    }
  };
  take();
  const timer = setInterval(take, intervalMs);
  return {
    /** Milliseconds of `performance.now()` at which the sampler's time 0 lies. */
    startedAt: started,
    samples,
    stop(): Record<string, ProcessPeak> {
      clearInterval(timer);
      take();
      return Object.fromEntries(
        Object.keys(processes).map((name) => {
          const own = samples.filter((sample) => sample.process === name);
          const from = first.get(name);
          const to = previous.get(name);
          return [
            name,
            {
              peakRssMiB: peaks.get(name) ?? Number.NaN,
              peakCpuPercent: largest(own.map((sample) => sample.cpuPercent)),
              meanCpuPercent:
                from && to && to.at > from.at ? (100 * (to.cpuMs - from.cpuMs)) / (to.at - from.at) : Number.NaN,
            },
          ];
        }),
      );
    },
  };
}
