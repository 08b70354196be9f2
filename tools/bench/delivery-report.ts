// What the burst and soak print and record about a run's deliveries: answers, latency as the
// sender saw it, resends, what the database holds afterwards, and the processes' peaks.
import type { PrismaClient } from '../../services/db/prisma-client.js';
import type { ProcessPeak } from './process-samples.js';
import { answerCounts, type DeliveryLog } from './oa-sender.js';
import { endedWithoutOrder, type Ledger, ledgerOf, orderedApprovals, waitForDrain } from './order-ledger.js';
import { type Spread, spreadOf } from '../harness/stats.js';

export interface DeliveryFigures {
  approvals: number;
  answers: ReturnType<typeof answerCounts>;
  latencyMs: { everyAttempt: Spread; firstAttempt: Spread };
  resends: Record<string, number>;
  orders: number;
  compensations: Ledger['compensations'];
  statuses: Ledger['statuses'];
  duplicates: { keysWithSeveralOrders: number; approvalsUnderSeveralKeys: number };
  /** Accepted by an answer, no order after the drain and not ended by compensation. */
  lost: number;
  lostApprovals: string[];
  /** Approvals the sender gave up on (attempts exhausted, or refused with a 4xx), and why. */
  notAccepted: Record<string, number>;
  peaks: Record<string, ProcessPeak>;
}

export function deliveryFigures(
  approvals: number,
  log: DeliveryLog,
  ledger: Ledger,
  withOrder: Set<string>,
  endedWithoutOrder: Set<string>,
  peaks: Record<string, ProcessPeak>,
): DeliveryFigures {
  const latency = (attempts: DeliveryLog['attempts']) => spreadOf(attempts.map((a) => a.endedAt - a.sentAt));
  const lostApprovals = [...log.accepted].filter((no) => !withOrder.has(no) && !endedWithoutOrder.has(no));
  const notAccepted: Record<string, number> = {};
  for (const reason of log.givenUp.values()) notAccepted[reason] = (notAccepted[reason] ?? 0) + 1;
  return {
    approvals,
    answers: answerCounts(log.attempts),
    latencyMs: {
      everyAttempt: latency(log.attempts),
      firstAttempt: latency(log.attempts.filter((attempt) => attempt.attempt === 1)),
    },
    resends: log.resends,
    orders: ledger.orders,
    compensations: ledger.compensations,
    statuses: ledger.statuses,
    duplicates: {
      keysWithSeveralOrders: ledger.keysWithSeveralOrders,
      approvalsUnderSeveralKeys: ledger.approvalsUnderSeveralKeys,
    },
    lost: lostApprovals.length,
    lostApprovals: lostApprovals.slice(0, 20),
    notAccepted,
    peaks,
  };
}

/**
 * Once every approval is answered: waits until the accepted ones are written or ended, stops the
 * process sampler, and reads what the database holds of the run's approvals (`prefix`).
 */
export async function drainAndTally(
  prisma: PrismaClient,
  prefix: string,
  approvals: number,
  log: DeliveryLog,
  drainQuietMs: number,
  sampler: { stop(): Record<string, ProcessPeak> },
): Promise<{ ledger: Ledger; figures: DeliveryFigures; peaks: Record<string, ProcessPeak> }> {
  await waitForDrain(prisma, prefix, log.accepted.size, drainQuietMs);
  const peaks = sampler.stop();
  const ledger = await ledgerOf(prisma, prefix);
  const figures = deliveryFigures(
    approvals,
    log,
    ledger,
    await orderedApprovals(prisma, prefix),
    await endedWithoutOrder(prisma, prefix),
    peaks,
  );
  return { ledger, figures, peaks };
}

/** Exactly-once held: no key or approval written twice, nothing accepted and lost. */
export function exactlyOnceHeld(figures: DeliveryFigures): boolean {
  return (
    figures.duplicates.keysWithSeveralOrders === 0 &&
    figures.duplicates.approvalsUnderSeveralKeys === 0 &&
    figures.lost === 0
  );
}

const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(0) : '-');
const spread = (s: Spread) => `p50 ${ms(s.p50)} p99 ${ms(s.p99)} max ${ms(s.max)} ms (${s.count})`;
const listed = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([name, count]) => `${name} ${count}`)
    .join(', ') || 'none';

export function printDeliveryFigures(figures: DeliveryFigures): void {
  const { byOutcome, problems } = figures.answers;
  console.log(
    `  answers: 202 ${byOutcome['202']}, 200 ${byOutcome['200']}, 201 ${byOutcome['201']}, 503 ${byOutcome['503']}, ` +
      `other ${byOutcome.other}, timeouts ${byOutcome.timeout}` +
      (Object.keys(problems).length ? ` (problems: ${listed(problems)})` : ''),
  );
  console.log(`  acknowledgement latency, every attempt: ${spread(figures.latencyMs.everyAttempt)}`);
  console.log(`  acknowledgement latency, first attempts: ${spread(figures.latencyMs.firstAttempt)}`);
  console.log(`  resends: ${listed(figures.resends)}`);
  console.log(
    `  orders written: ${figures.orders} for ${figures.approvals} approvals; key statuses: ${listed(figures.statuses)}`,
  );
  console.log(
    `  compensations: ${
      figures.compensations.map((c) => `${c.count} × ${c.reasonType}: ${c.reason}`).join('; ') || 'none'
    }`,
  );
  console.log(
    `  duplicates: keys with more than one order ${figures.duplicates.keysWithSeveralOrders}, ` +
      `approvals under different keys ${figures.duplicates.approvalsUnderSeveralKeys}`,
  );
  console.log(
    `  lost: ${figures.lost}${figures.lost ? ` (${figures.lostApprovals.join(', ')})` : ''}; ` +
      `not accepted by any answer: ${listed(figures.notAccepted)}`,
  );
  for (const [name, peak] of Object.entries(figures.peaks)) {
    console.log(
      `  ${name}: peak RSS ${peak.peakRssMiB.toFixed(0)} MiB, peak CPU ${peak.peakCpuPercent.toFixed(0)} %, ` +
        `mean CPU ${peak.meanCpuPercent.toFixed(0)} % of a core`,
    );
  }
}
