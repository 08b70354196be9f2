// `npm run bench -- --soak <minutes>`: a steady load well below what the service can take, for
// long enough that a leak shows. Approvals arrive open-loop at a fixed rate (each its own sender,
// however slow the answers), sent again only as an OA would; every window the processes' memory and
// CPU are sampled and the acknowledgement latency's p99 and the throughput taken. After the warm-up,
// a least-squares line through each process's memory says whether it grows.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sleep } from '../harness/time.js';
import { approvalBody } from './approvals.js';
import { webhookDoor } from './doors.js';
import { drainAndTally, exactlyOnceHeld, printDeliveryFigures } from './delivery-report.js';
import { type Attempt, deliveryLog, oaSender } from './oa-sender.js';
import { ordersOverTime } from './order-ledger.js';
import { sampleProcesses } from './process-samples.js';
import { mergeResults } from './results-file.js';
import { SHAPE_TITLE, type ShapeName, type ShapeOptions, startShape } from './shape.js';
import { largest, leastSquaresSlope, percentile } from '../harness/stats.js';
import { type Panel, renderTimeline } from './timeline-chart.js';

/** A process's memory grows by less than this after the warm-up, or it is not called flat. */
export const FLAT_MIB_PER_MINUTE = 1;

export interface SoakOptions extends ShapeOptions {
  minutes: number;
  shape: ShapeName;
  ratePerSecond: number;
  /** Where the rate came from: the flag, or half the steady rate of a results file. */
  rateFrom: string;
  windowSeconds: number;
  maxAttempts: number;
  drainQuietMs: number;
  out: string;
}

interface Window {
  /** Seconds from the first arrival to the window's start. */
  t: number;
  arrivals: number;
  accepted: number;
  ordersPerSecond: number;
  attempts: number;
  p99Ms: number;
  rssMiB: Record<string, number>;
  cpuPercent: Record<string, number>;
}

/** The warm-up: the first 2 minutes, or the first 20 % of a shorter run. */
export function warmUpSeconds(minutes: number): number {
  return Math.min(120, minutes * 60 * 0.2);
}

export async function runSoak(options: SoakOptions): Promise<boolean> {
  console.log(
    `\nsoak, ${SHAPE_TITLE[options.shape]}: ${options.minutes} min at ${options.ratePerSecond.toFixed(1)} approvals/s ` +
      `(${options.rateFrom}), windows of ${options.windowSeconds} s; starting a fresh stack …`,
  );
  const shape = await startShape(options.shape, options);
  try {
    const prefix = `B${options.run}-S-`;
    const sender = oaSender({
      url: shape.url,
      door: webhookDoor(options.secret),
      timeoutMs: shape.settings.startTimeoutMs,
      maxAttempts: options.maxAttempts,
    });
    const log = deliveryLog();
    const arrivals: number[] = [];
    const deliver = async (n: number) => {
      const approvalNo = `${prefix}${n}`;
      const payload = JSON.stringify(approvalBody(approvalNo));
      for (let attempt = 1; ; attempt += 1) {
        const sent = await sender.send(approvalNo, payload, attempt);
        const step = sender.next(sent);
        log.record(sent, step);
        if (step.kind !== 'resend') return;
        await sleep(step.afterMs);
      }
    };
    const sampler = sampleProcesses(
      { ...shape.pids, 'load generator': () => process.pid },
      options.windowSeconds * 1000,
    );
    const firstWall = Date.now();
    const firstPerf = performance.now();
    const end = firstPerf + options.minutes * 60_000;
    const inFlight = new Set<Promise<void>>();
    for (let n = 0; ; n += 1) {
      const due = firstPerf + (n * 1000) / options.ratePerSecond;
      if (due >= end) break;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      arrivals.push(performance.now());
      const delivery = deliver(n).finally(() => inFlight.delete(delivery));
      inFlight.add(delivery);
    }
    const sentFor = (performance.now() - firstPerf) / 1000;
    console.log(
      `  ${arrivals.length} approvals arrived in ${sentFor.toFixed(0)} s; waiting for their answers and orders …`,
    );
    await Promise.all(inFlight);
    const { figures, peaks } = await drainAndTally(
      shape.prisma,
      prefix,
      arrivals.length,
      log,
      options.drainQuietMs,
      sampler,
    );

    const windows = windowsOf(options, firstPerf, arrivals, log.attempts, sampler, Object.keys(peaks));
    const ordersByWindow = await ordersOverTime(shape.prisma, prefix, firstWall, options.windowSeconds);
    for (const window of windows) {
      window.ordersPerSecond =
        (ordersByWindow.find((bucket) => bucket.t === window.t)?.count ?? 0) / options.windowSeconds;
    }
    const warmUp = warmUpSeconds(options.minutes);
    const offset = (sampler.startedAt - firstPerf) / 1000;
    const rssSlopeMiBPerMinute = Object.fromEntries(
      Object.keys(peaks).map((process) => [
        process,
        leastSquaresSlope(
          sampler.samples
            .filter((sample) => sample.process === process && sample.t + offset >= warmUp)
            .map((sample) => ({ x: (sample.t + offset) / 60, y: sample.rssMiB })),
        ),
      ]),
    );
    const measured = windows.filter((window) => window.t >= warmUp && window.t + options.windowSeconds <= sentFor);
    const p99SlopeMsPerMinute = leastSquaresSlope(measured.map((window) => ({ x: window.t / 60, y: window.p99Ms })));
    const flat = Object.entries(rssSlopeMiBPerMinute)
      .filter(([process]) => process !== 'load generator')
      .every(([, slope]) => slope < FLAT_MIB_PER_MINUTE);

    printWindows(windows, options.windowSeconds);
    printDeliveryFigures(figures);
    console.log(`  after the warm-up (${warmUp.toFixed(0)} s), least-squares slopes:`);
    for (const [process, slope] of Object.entries(rssSlopeMiBPerMinute)) {
      console.log(
        `    ${process}: RSS ${slope.toFixed(2)} MiB/min` +
          (process === 'load generator'
            ? ' (not judged: it keeps every attempt it made)'
            : slope < FLAT_MIB_PER_MINUTE
              ? ' — flat'
              : ' — NOT flat'),
      );
    }
    console.log(`    acknowledgement p99 per window: ${p99SlopeMsPerMinute.toFixed(1)} ms/min`);
    console.log(
      `  memory ${flat ? 'flat' : 'NOT flat'} (every service process under ${FLAT_MIB_PER_MINUTE} MiB/min); ` +
        `duplicates ${figures.duplicates.keysWithSeveralOrders + figures.duplicates.approvalsUnderSeveralKeys}, lost ${figures.lost}`,
    );

    const result = {
      run: options.run,
      at: new Date().toISOString(),
      shape: options.shape,
      settings: {
        minutes: options.minutes,
        ratePerSecond: options.ratePerSecond,
        rateFrom: options.rateFrom,
        achievedArrivalsPerSecond: arrivals.length / sentFor,
        windowSeconds: options.windowSeconds,
        warmUpSeconds: warmUp,
        senderTimeoutMs: shape.settings.startTimeoutMs,
        workflowTaskSlots: shape.settings.workflowTaskSlots,
        dbPoolSize: shape.settings.dbPoolSize,
        maxAttemptsPerApproval: options.maxAttempts,
      },
      ...figures,
      rssSlopeMiBPerMinute,
      flat,
      p99SlopeMsPerMinute,
      windows,
    };
    const file = mergeResults(options.out, { soak: result });
    writeFileSync(path.join(options.out, 'soak.svg'), soakChart(windows, warmUp, options.windowSeconds));
    console.log(`\nwrote ${file} (soak) and ${path.join(options.out, 'soak.svg')}`);
    const held = exactlyOnceHeld(figures);
    if (!held) console.error('EXACTLY-ONCE BROKEN in the soak: duplicates or lost approvals above');
    return held;
  } finally {
    await shape.stop();
  }
}

function windowsOf(
  options: SoakOptions,
  firstPerf: number,
  arrivals: number[],
  attempts: Attempt[],
  sampler: ReturnType<typeof sampleProcesses>,
  processes: string[],
): Window[] {
  const size = options.windowSeconds;
  const indexOf = (at: number) => Math.floor((at - firstPerf) / 1000 / size);
  const last = Math.max(
    largest(
      attempts.map((attempt) => attempt.endedAt),
      firstPerf,
    ),
    largest(arrivals, firstPerf),
  );
  const windows: Window[] = Array.from({ length: indexOf(last) + 1 }, (_, index) => ({
    t: index * size,
    arrivals: 0,
    accepted: 0,
    ordersPerSecond: 0,
    attempts: 0,
    p99Ms: Number.NaN,
    rssMiB: Object.fromEntries(processes.map((process) => [process, Number.NaN])),
    cpuPercent: Object.fromEntries(processes.map((process) => [process, Number.NaN])),
  }));
  for (const at of arrivals) (windows[indexOf(at)] as Window).arrivals += 1;
  const latencies = windows.map((): number[] => []);
  for (const attempt of attempts) {
    const index = indexOf(attempt.endedAt);
    const window = windows[index] as Window;
    window.attempts += 1;
    if (attempt.status !== undefined && [200, 201, 202].includes(attempt.status)) window.accepted += 1;
    latencies[index]?.push(attempt.endedAt - attempt.sentAt);
  }
  latencies.forEach((sample, index) => {
    (windows[index] as Window).p99Ms = percentile(
      sample.sort((a, b) => a - b),
      99,
    );
  });
  // The sample taken at a window's end describes it (its CPU is since the sample before); the
  // timer fires a little late, so a sample belongs to the window whose end is nearest.
  const offset = (sampler.startedAt - firstPerf) / 1000;
  for (const sample of sampler.samples) {
    const window = windows[Math.round((sample.t + offset) / size) - 1];
    if (!window || !Number.isNaN(window.rssMiB[sample.process] ?? 0)) continue;
    window.rssMiB[sample.process] = sample.rssMiB;
    window.cpuPercent[sample.process] = sample.cpuPercent;
  }
  return windows;
}

function printWindows(windows: Window[], size: number): void {
  // A long soak has hundreds of windows: the table shows one row a minute (results.json has them all).
  const step = windows.length > 40 ? Math.max(1, Math.round(60 / size)) : 1;
  const processes = Object.keys(windows[0]?.rssMiB ?? {});
  console.log(
    `\n  ${step > 1 ? `every ${step}th window` : 'windows'} (${size} s): t, arrivals/s, orders/s, p99 ms, RSS MiB / CPU % per process`,
  );
  windows.forEach((window, index) => {
    if (index % step !== 0) return;
    const perProcess = processes
      .map((process) => `${process} ${window.rssMiB[process]?.toFixed(0)}/${window.cpuPercent[process]?.toFixed(0)}`)
      .join(', ');
    console.log(
      `  ${String(window.t).padStart(5)} s ${(window.arrivals / size).toFixed(1).padStart(6)} ${window.ordersPerSecond
        .toFixed(1)
        .padStart(6)} ${(Number.isFinite(window.p99Ms) ? window.p99Ms.toFixed(0) : '-').padStart(6)}  ${perProcess}`,
    );
  });
}

function soakChart(windows: Window[], warmUp: number, size: number): string {
  const processes = Object.keys(windows[0]?.rssMiB ?? {}).filter((process) => process !== 'load generator');
  const panels: Panel[] = [
    {
      title: 'Throughput per window: approvals arriving and orders committed, per second',
      lines: [
        { name: 'arrivals/s', points: windows.map((w) => ({ t: w.t, value: w.arrivals / size })) },
        { name: 'orders/s', points: windows.map((w) => ({ t: w.t, value: w.ordersPerSecond })) },
      ],
    },
    {
      title: 'Resident memory per process, MiB',
      lines: processes.map((process) => ({
        name: process,
        points: windows.map((w) => ({ t: w.t, value: w.rssMiB[process] ?? Number.NaN })),
      })),
    },
    {
      title: 'Acknowledgement latency p99 per window, ms',
      lines: [{ name: 'p99', points: windows.map((w) => ({ t: w.t, value: w.p99Ms })) }],
    },
  ];
  return renderTimeline(`Soak: seconds from the first arrival (warm-up: the first ${warmUp.toFixed(0)} s)`, panels);
}
