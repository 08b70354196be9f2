// The chaos run's faults: the seeded schedule of process and server faults (by progress, so it is
// the same on a fast or a slow machine), the injector that applies them one at a time, the
// downstream's fault script, and what fired, by name.
import { Prisma } from '../../services/db/generated/prisma/client.js';
import type { Reply } from '../harness/scripted-downstream.js';
import { sleep } from '../harness/time.js';
import { CHAOS_TIMINGS } from '../harness/timings.js';
import type { ChaosBroker } from './broker.js';
import { log } from './log.js';
import { between, type Random } from './prng.js';
import { type ChaosStack, SKUS } from './stack.js';

const FAULT_KINDS = [
  'worker-kill',
  'temporal-restart',
  'db-restart',
  'lock-hold',
  'worker-kill',
  'consumer-kill',
  'broker-cut',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface ScheduledFault {
  /** Injected once this many approvals were answered. */
  at: number;
  kind: FaultKind;
}

/** Every fault kind once per 100 approvals (at least once), spread over the first 90 % of the load. */
export function faultSchedule(random: Random, size: number): ScheduledFault[] {
  const schedule: ScheduledFault[] = [];
  const cycles = Math.max(1, Math.round(size / 100));
  for (let cycle = 0; cycle < cycles; cycle += 1) {
    const kinds = [...FAULT_KINDS].sort(() => random() - 0.5);
    kinds.forEach((kind, index) => {
      const slot = (cycle + (index + 0.5 + (random() - 0.5) * 0.5) / kinds.length) / cycles;
      schedule.push({ at: Math.floor(slot * size * 0.9), kind });
    });
  }
  return schedule.sort((a, b) => a.at - b.at);
}

export interface FaultInjector {
  /** Queues the fault behind those before it. */
  inject: (kind: FaultKind) => void;
  /** Resolves once every queued fault has run. */
  finished: () => Promise<void>;
  counts: Record<FaultKind, number>;
}

/** Applies faults one after another; `random` draws each fault's pause. */
export function faultInjector(stack: ChaosStack, broker: ChaosBroker, random: Random): FaultInjector {
  const counts: Record<FaultKind, number> = {
    'worker-kill': 0,
    'temporal-restart': 0,
    'db-restart': 0,
    'lock-hold': 0,
    'consumer-kill': 0,
    'broker-cut': 0,
  };
  let queue: Promise<void> = Promise.resolve();
  const apply = async (kind: FaultKind) => {
    log(`fault: ${kind}`);
    counts[kind] += 1;
    const pause = between(random, 500, 2_000);
    if (kind === 'worker-kill') {
      await stack.worker.kill('SIGKILL');
      await sleep(pause);
      await stack.worker.start();
    } else if (kind === 'temporal-restart') {
      await stack.temporal.stop();
      await sleep(pause);
      await stack.temporal.start();
    } else if (kind === 'db-restart') {
      // The MySQL server is the machine's: the worker sees it go away and come back.
      if (stack.mysqlProxy) {
        await stack.mysqlProxy.unreachableFor(pause);
      } else {
        await stack.postgres.stop();
        await sleep(pause);
        await stack.postgres.start();
      }
    } else if (kind === 'consumer-kill') {
      await broker.killConsumerBeforeAck(pause, log);
    } else if (kind === 'broker-cut') {
      await broker.cutDuringPublish(log);
    } else {
      // Hold every chaos SKU's row past the lock timeout: writes meet a real lock timeout.
      const holdMs = Number(CHAOS_TIMINGS.DB_STATEMENT_TIMEOUT_MS) + 1_000;
      await stack.orders.$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT sku FROM inventory WHERE sku IN (${Prisma.join(SKUS)}) ORDER BY sku FOR UPDATE`;
          await sleep(holdMs);
        },
        { timeout: holdMs + 10_000, maxWait: 10_000 },
      );
    }
  };
  return {
    counts,
    inject: (kind) => {
      queue = queue
        .then(() => apply(kind))
        .catch((error: unknown) => log(`fault ${kind} did not complete: ${String(error)}`));
    },
    finished: () => queue,
  };
}

export interface DownstreamFaults {
  reply: () => Reply;
  counts: { rateLimited: number; serverErrors: number; hangs: number };
  /** From now on every request reaches the consumer. */
  stop: () => void;
}

/** The downstream answers 429, 5xx or hangs now and then; the first requests meet each fault once. */
export function downstreamFaults(random: Random): DownstreamFaults {
  const counts = { rateLimited: 0, serverErrors: 0, hangs: 0 };
  let enabled = true;
  let requests = 0;
  return {
    counts,
    stop: () => {
      enabled = false;
    },
    reply: (): Reply => {
      if (!enabled) return { kind: 'consumer' };
      // The first requests meet each fault once for certain; after that, chance decides.
      requests += 1;
      const roll = requests <= 3 ? [0.01, 0.1, 0.13][requests - 1]! : random();
      if (roll < 0.06) {
        counts.rateLimited += 1;
        return { kind: 'status', status: 429, headers: { 'retry-after': '1' } };
      }
      if (roll < 0.12) {
        counts.serverErrors += 1;
        return { kind: 'status', status: roll < 0.09 ? 500 : 503 };
      }
      if (roll < 0.15) {
        counts.hangs += 1;
        return { kind: 'hang' };
      }
      return { kind: 'consumer' };
    },
  };
}

/** How often each fault fired, by the name the checks report it under. */
export function firedFaults(
  stack: ChaosStack,
  injector: FaultInjector,
  downstream: DownstreamFaults,
  broker: ChaosBroker,
): Record<string, number> {
  return {
    'lost COMMIT reply (db proxy)': stack.dbProxy.counts.lostCommitReplies,
    'connection reset (db proxy)': stack.dbProxy.counts.resets,
    'reply delayed past timeout (db proxy)': stack.dbProxy.counts.latencies,
    'row locks held past lock timeout': injector.counts['lock-hold'],
    'worker SIGKILL + restart': injector.counts['worker-kill'],
    'Temporal restart': injector.counts['temporal-restart'],
    [stack.mysqlProxy ? 'MySQL unreachable (connections cut, refused for a pause)' : 'PostgreSQL restart']:
      injector.counts['db-restart'],
    'downstream 429 + Retry-After': downstream.counts.rateLimited,
    'downstream 5xx': downstream.counts.serverErrors,
    'downstream hang': downstream.counts.hangs,
    'broker consumer SIGKILL with a committed, unacked message': broker.counts.consumerKillsBeforeAck,
    'worker↔broker connections cut during a publish': broker.counts.publishCuts,
  };
}
