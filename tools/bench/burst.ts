// `npm run bench -- --burst <n> --burst-concurrency <c>`: the month-end burst. For each shape, on
// fresh state, n distinct signed approvals go through the real webhook (or, with `--burst-door`, a
// vendor's callback route, tools/bench/doors.ts) from c senders at once,
// each approval sent once and sent again only as an OA would (after a timeout, or after a 503's
// Retry-After). Open-loop: a sender takes its next approval as soon as it has an answer; a resend
// waits in the senders' queue for its time, ahead of new approvals once due. Then the backlog
// drains, and the database says what was written, twice, compensated or lost.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { acceptSocketCount } from '../../edges/http/accept-sockets.js';
import { loadConfig } from '../../app/env.js';
import { sleep } from '../harness/time.js';
import { type BurstDoor, type BurstDoorName, openDoor } from './doors.js';
import { drainAndTally, exactlyOnceHeld, printDeliveryFigures, type DeliveryFigures } from './delivery-report.js';
import { deliveryLog, type DeliveryLog, oaSender, type OaSender } from './oa-sender.js';
import { ordersCommittedAfter, ordersOverTime } from './order-ledger.js';
import { sampleProcesses } from './process-samples.js';
import { mergeResults, readResults, steadyRate } from './results-file.js';
import { SHAPE_TITLE, SHAPES, type ShapeName, type ShapeOptions, startShape, STEADY_NAME } from './shape.js';
import { largest } from '../harness/stats.js';
import { type Panel, renderTimeline } from './timeline-chart.js';

export interface BurstOptions extends ShapeOptions {
  approvals: number;
  concurrency: number;
  maxAttempts: number;
  /** How long the order count may stand still after the last answer before the missing count as lost. */
  drainQuietMs: number;
  out: string;
  /** Where the approvals come in: the webhook, or a vendor's callback route. */
  door: BurstDoorName;
  /** Approvals sent one at a time before the burst (0: it meets processes that served nothing yet). */
  warmUpApprovals: number;
}

interface Approval {
  approvalNo: string;
  payload: string;
}

/** `concurrency` senders work through the approvals and the resends they earn, until none is left. */
async function sendAll(approvals: Approval[], concurrency: number, sender: OaSender, log: DeliveryLog) {
  const resends: { approval: Approval; attempt: number; dueAt: number }[] = [];
  let next = 0;
  let inFlight = 0;
  const dueResend = (now: number) => {
    let earliest = -1;
    resends.forEach((resend, index) => {
      if (resend.dueAt <= now && (earliest < 0 || resend.dueAt < (resends[earliest]?.dueAt ?? 0))) earliest = index;
    });
    return earliest < 0 ? undefined : resends.splice(earliest, 1)[0];
  };
  const oneSender = async () => {
    for (;;) {
      const now = performance.now();
      const job =
        dueResend(now) ??
        (next < approvals.length ? { approval: approvals[next++] as Approval, attempt: 1, dueAt: now } : undefined);
      if (!job) {
        // Nothing due: done once no resend waits and no request is out that may earn one.
        if (resends.length === 0 && inFlight === 0) return;
        const soonest = Math.min(...resends.map((resend) => resend.dueAt), now + 50);
        await sleep(Math.max(1, Math.min(50, soonest - now)));
        continue;
      }
      inFlight += 1;
      const attempt = await sender.send(job.approval.approvalNo, job.approval.payload, job.attempt);
      const step = sender.next(attempt);
      log.record(attempt, step);
      if (step.kind === 'resend') {
        resends.push({ approval: job.approval, attempt: job.attempt + 1, dueAt: attempt.endedAt + step.afterMs });
      }
      inFlight -= 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, oneSender));
}

interface ShapeBurst extends DeliveryFigures {
  shape: ShapeName;
  drainSeconds: { fromFirstRequest: number; fromLastAnswer: number };
  /** Orders per second over the whole burst: every order over first request → last order. */
  wholeBurstRate: number;
  /** Orders per second once every approval is answered: those committed after the last answer. */
  backlogDrainRate: number;
  steadyC32?: { perSecond: number; from: string; drainOverSteady: number; wholeBurstOverSteady: number };
  settings: { senderTimeoutMs: number; workflowTaskSlots: number; dbPoolSize: number };
  perSecond: {
    accepted: number[];
    overloaded: number[];
    timedOutOrOther: number[];
    orders: number[];
    rssMiB: Record<string, { t: number; value: number }[]>;
  };
}

/** Approvals sent one after another before the burst, not counted in it. */
async function warmUp(sender: OaSender, door: BurstDoor, prefix: string, approvals: number) {
  const log = deliveryLog();
  for (let n = 0; n < approvals; n++) {
    const approvalNo = `${prefix}${n}`;
    await sendAll([{ approvalNo, payload: door.approval(approvalNo) }], 1, sender, log);
  }
}

async function burstOn(name: ShapeName, options: BurstOptions): Promise<ShapeBurst> {
  console.log(`\nburst, ${SHAPE_TITLE[name]}, through the ${options.door}: starting a fresh stack …`);
  const door = await openDoor(options.door, options.secret);
  const shape = await startShape(name, { ...options, env: door.env }).catch(async (error: unknown) => {
    await door.close();
    throw error;
  });
  try {
    const prefix = `B${options.run}-${name === 'hosting' ? 'H' : 'W'}-`;
    const approvals = Array.from({ length: options.approvals }, (_, n) => {
      const approvalNo = `${prefix}${n}`;
      return { approvalNo, payload: door.approval(approvalNo) };
    });
    const timeoutMs = door.timeoutMs ?? shape.settings.startTimeoutMs;
    const sender = oaSender({ url: shape.url, door, timeoutMs, maxAttempts: options.maxAttempts });
    // A month-end burst meets a service that has been running: the processes' first requests (the
    // query compiler, the workflow isolates, the pools) are paid before it, one approval at a time.
    // Without, the burst is the first traffic, as after a deploy.
    await warmUp(sender, door, `W${options.run}-${name === 'hosting' ? 'H' : 'W'}-`, options.warmUpApprovals);
    const log = deliveryLog();
    const sampler = sampleProcesses({ ...shape.pids, 'load generator': () => process.pid }, 1_000);
    console.log(
      `  ${options.approvals} approvals, ${options.concurrency} senders, sender timeout ${timeoutMs} ms${options.warmUpApprovals === 0 ? ', cold' : `, after ${options.warmUpApprovals} one at a time`}`,
    );
    const firstWall = Date.now();
    const firstPerf = performance.now();
    await sendAll(approvals, options.concurrency, sender, log);
    const lastAnswerWall =
      firstWall +
      (largest(
        log.attempts.map((a) => a.endedAt),
        firstPerf,
      ) -
        firstPerf);
    console.log(
      `  every approval answered or given up after ${((Date.now() - firstWall) / 1000).toFixed(1)} s; draining …`,
    );
    const { ledger, figures, peaks } = await drainAndTally(
      shape.prisma,
      prefix,
      options.approvals,
      log,
      options.drainQuietMs,
      sampler,
    );
    const lastOrderAt = ledger.lastOrderAt ?? Number.NaN;
    const fromFirstRequest = (lastOrderAt - firstWall) / 1000;
    const fromLastAnswer = (lastOrderAt - lastAnswerWall) / 1000;
    const wholeBurstRate = ledger.orders / fromFirstRequest;
    const backlogDrainRate =
      (await ordersCommittedAfter(shape.prisma, prefix, lastAnswerWall)) / Math.max(fromLastAnswer, 0.001);
    const steady = steadyRate(options.out, STEADY_NAME[name]);

    const seconds = Math.ceil(Math.max(fromFirstRequest, (lastAnswerWall - firstWall) / 1000, 1));
    const perSecond = (predicate: (a: DeliveryLog['attempts'][number]) => boolean) => {
      const counts = Array.from({ length: seconds + 1 }, () => 0);
      for (const attempt of log.attempts.filter(predicate)) {
        const second = Math.floor((attempt.endedAt - firstPerf) / 1000);
        if (second >= 0 && second < counts.length) counts[second] = (counts[second] ?? 0) + 1;
      }
      return counts;
    };
    const orders = Array.from({ length: seconds + 1 }, () => 0);
    for (const bucket of await ordersOverTime(shape.prisma, prefix, firstWall, 1)) {
      if (bucket.t >= 0 && bucket.t < orders.length) orders[bucket.t] = bucket.count;
    }
    const offset = (sampler.startedAt - firstPerf) / 1000;
    const rssMiB = Object.fromEntries(
      Object.keys(peaks).map((process) => [
        process,
        sampler.samples
          .filter((sample) => sample.process === process)
          .map((sample) => ({ t: sample.t + offset, value: sample.rssMiB })),
      ]),
    );
    return {
      shape: name,
      ...figures,
      drainSeconds: { fromFirstRequest, fromLastAnswer },
      wholeBurstRate,
      backlogDrainRate,
      ...(steady
        ? {
            steadyC32: {
              ...steady,
              drainOverSteady: backlogDrainRate / steady.perSecond,
              wholeBurstOverSteady: wholeBurstRate / steady.perSecond,
            },
          }
        : {}),
      settings: {
        senderTimeoutMs: timeoutMs,
        workflowTaskSlots: shape.settings.workflowTaskSlots,
        dbPoolSize: shape.settings.dbPoolSize,
      },
      perSecond: {
        accepted: perSecond((a) => a.outcome === '202' || a.outcome === '200' || a.outcome === '201'),
        overloaded: perSecond((a) => a.outcome === '503'),
        timedOutOrOther: perSecond((a) => a.outcome === 'timeout' || a.outcome === 'other'),
        orders,
        rssMiB,
      },
    };
  } finally {
    await shape.stop();
    await door.close();
  }
}

function printBurst(result: ShapeBurst): void {
  console.log(`\nburst, ${SHAPE_TITLE[result.shape]}:`);
  printDeliveryFigures(result);
  console.log(
    `  drain: first request → last order ${result.drainSeconds.fromFirstRequest.toFixed(1)} s, ` +
      `last answer → last order ${result.drainSeconds.fromLastAnswer.toFixed(1)} s`,
  );
  const steady = result.steadyC32;
  console.log(
    `  backlog drain rate (orders after the last answer) ${result.backlogDrainRate.toFixed(1)} orders/s, ` +
      `whole burst ${result.wholeBurstRate.toFixed(1)} orders/s` +
      (steady
        ? `; steady rate at c=32 ${steady.perSecond.toFixed(1)}/s (${steady.from}): backlog ` +
          `${steady.drainOverSteady.toFixed(2)}× (goal ≥ 0.9×), whole burst ${steady.wholeBurstOverSteady.toFixed(2)}×`
        : '; no steady rate at c=32 to compare with (run `npm run bench` first)'),
  );
}

function burstChart(results: ShapeBurst[]): string {
  const series = (values: number[]) => values.map((value, t) => ({ t, value }));
  const panels: Panel[] = results.flatMap((result) => [
    {
      title: `${SHAPE_TITLE[result.shape]}: answers and orders per second`,
      lines: [
        { name: 'accepted (202/200/201)', points: series(result.perSecond.accepted) },
        { name: '503', points: series(result.perSecond.overloaded) },
        { name: 'timeouts and other', points: series(result.perSecond.timedOutOrOther) },
        { name: 'orders committed', points: series(result.perSecond.orders) },
      ],
    },
    {
      title: `${SHAPE_TITLE[result.shape]}: resident memory, MiB`,
      lines: Object.entries(result.perSecond.rssMiB).map(([name, points]) => ({ name, points })),
    },
  ]);
  return renderTimeline('Month-end burst: seconds from the first request', panels);
}

/** Runs the burst on both shapes, prints, writes `burst` into results.json and burst.svg; true if exactly-once held. */
export async function runBurst(options: BurstOptions): Promise<boolean> {
  const results: ShapeBurst[] = [];
  for (const name of SHAPES) {
    const result = await burstOn(name, options);
    printBurst(result);
    results.push(result);
  }
  const run = {
    run: options.run,
    at: new Date().toISOString(),
    settings: {
      approvals: options.approvals,
      senders: options.concurrency,
      maxAttemptsPerApproval: options.maxAttempts,
      eagerSlots: Number(options.eagerSlots),
      door: options.door,
      warmUpApprovals: options.warmUpApprovals,
      // The runtime decides how many sockets the API accepts on (edges/http/accept-sockets.ts).
      node: process.versions.node,
      acceptSockets: acceptSocketCount(loadConfig().http.acceptSockets),
      latency: "from sending a request to its answer (or the sender's timeout), as the sender saw it",
    },
    shapes: Object.fromEntries(results.map((result) => [result.shape, result])),
  };
  // The webhook's run is `burst` itself; a vendor door's goes under `burst.doors`, beside it.
  const previous = (readResults(options.out)?.burst ?? {}) as { doors?: Record<string, unknown> };
  const burst =
    options.door === 'webhook'
      ? { ...run, ...(previous.doors ? { doors: previous.doors } : {}) }
      : { ...previous, doors: { ...previous.doors, [options.door]: run } };
  const file = mergeResults(options.out, { burst });
  const chart = options.door === 'webhook' ? 'burst.svg' : `burst-${options.door}.svg`;
  writeFileSync(path.join(options.out, chart), burstChart(results));
  console.log(`\nwrote ${file} (burst) and ${path.join(options.out, chart)}`);
  const held = results.every(exactlyOnceHeld);
  if (!held) console.error('EXACTLY-ONCE BROKEN in the burst: duplicates or lost approvals above');
  return held;
}
