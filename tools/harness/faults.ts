// Real faults in front of the real write activity, chosen per approval number, for integration
// tests. Each fault is produced by real parts: a database port nothing listens on (a genuine
// ECONNREFUSED through the driver), or a commit whose answer never reaches Temporal (the activity
// outlives its start-to-close timeout after committing).
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { type ActivityDeps, createActivities } from '../../activities/index.js';
import { toActivityFailure } from '../../activities/activity-failure.js';
import { createPrismaClient } from '../../services/db/prisma-client.js';
import { freePort } from './ports.js';
import type { OrderWorkflowInput } from '../../workflows/definitions.js';
import { eventually, startTestService, testConfig, type TestService } from './service.js';

type Activities = ReturnType<typeof createActivities>;

export type Fault =
  /** Attempts up to `attempts` reach a database that is down. */
  | { kind: 'database-down'; attempts: number }
  /** The first attempt commits, then its result is lost (it hangs past start-to-close). */
  | { kind: 'lost-response' }
  /** The first attempt commits, then fails with an error nobody classified (not retried). */
  | { kind: 'commit-then-unclassified-failure' }
  /** Every attempt takes `ms` longer before it writes (keep it below start-to-close). */
  | { kind: 'slow'; ms: number }
  /**
   * The first attempt fails for good (an error nobody classified), and its write runs, and commits,
   * only once compensation has looked and found no order: the key already waits for an operator.
   * So lands the COMMIT of an attempt that gave up after sending it.
   */
  | { kind: 'commit-after-reconciliation' };

export class FaultPlan {
  private readonly faults = new Map<string, Fault>();
  private readonly delays = new Map<string, number[]>();
  private readonly heldOutcomes = new Map<string, Promise<void>>();
  set(approvalNo: string, fault: Fault): void {
    this.faults.set(approvalNo, fault);
  }
  /** The cause is fixed: later attempts and resubmits reach the real database. */
  clear(approvalNo: string): void {
    this.faults.delete(approvalNo);
  }
  get(approvalNo: string): Fault | undefined {
    return this.faults.get(approvalNo);
  }
  /**
   * The delivery outcome of `key` is recorded, then its activity holds until `release` is called:
   * the record already says DELIVERY_FAILED while the workflow has not heard it yet.
   */
  holdDeliveryOutcome(key: string): { release: () => void } {
    let release = () => {};
    this.heldOutcomes.set(key, new Promise<void>((resolve) => (release = resolve)));
    return {
      release: () => {
        this.heldOutcomes.delete(key);
        release();
      },
    };
  }
  heldOutcome(key: string): Promise<void> | undefined {
    return this.heldOutcomes.get(key);
  }
  /** The `nextRetryDelay` each failure injected for `approvalNo` carried, in order. */
  retryDelaysOf(approvalNo: string): number[] {
    return this.delays.get(approvalNo) ?? [];
  }
  recordFailure(approvalNo: string, error: unknown): void {
    // The write's failures carry their delay in milliseconds (activities/activity-failure.ts).
    const delay: unknown = error instanceof ApplicationFailure ? error.nextRetryDelay : undefined;
    if (typeof delay === 'number') this.delays.set(approvalNo, [...this.retryDelaysOf(approvalNo), delay]);
  }
}

export async function faultyActivities(plan: FaultPlan, options: { startToCloseMs: number }) {
  // A port nothing listens on: the driver gets a real ECONNREFUSED.
  const downUrl = `postgresql://postgres:postgres@127.0.0.1:${await freePort()}/orders`;
  const downDb = createPrismaClient({ databaseUrl: downUrl, poolSize: 1, statementTimeoutMs: 1000 });
  return (real: Activities, deps: ActivityDeps) => {
    const down = createActivities({ ...deps, prisma: downDb });
    return {
      ...real,
      async writeOrder(input: OrderWorkflowInput) {
        const { attempt } = Context.current().info;
        const fault = plan.get(input.approvalNo);
        if (fault?.kind === 'database-down' && attempt <= fault.attempts) {
          try {
            return await down.writeOrder(input);
          } catch (error) {
            plan.recordFailure(input.approvalNo, error);
            throw error;
          }
        }
        if (fault?.kind === 'lost-response' && attempt === 1) {
          plan.clear(input.approvalNo); // a lost answer happens once, not on every run
          await real.writeOrder(input);
          await new Promise((resolve) => setTimeout(resolve, options.startToCloseMs + 1_500));
          throw new Error('unreachable: the attempt timed out before this line');
        }
        if (fault?.kind === 'slow') {
          await new Promise((resolve) => setTimeout(resolve, fault.ms));
        }
        if (fault?.kind === 'commit-then-unclassified-failure' && attempt === 1) {
          plan.clear(input.approvalNo);
          await real.writeOrder(input);
          throw toActivityFailure(new Error('the reply was garbled after the commit'), attempt);
        }
        if (fault?.kind === 'commit-after-reconciliation' && attempt === 1) {
          plan.clear(input.approvalNo);
          // Still in this attempt's context: the late commit is the attempt's own write.
          // Its failure shows as the order never written.
          commitOnceCompensating(deps, input.idempotencyKey, () => real.writeOrder(input)).catch((error: unknown) =>
            console.error(`the late commit of ${input.idempotencyKey} failed:`, error),
          );
          throw toActivityFailure(new Error('the attempt gave up before its commit'), attempt);
        }
        return real.writeOrder(input);
      },
      async recordDeliveryOutcome(request: Parameters<Activities['recordDeliveryOutcome']>[0]) {
        const recorded = await real.recordDeliveryOutcome(request);
        await plan.heldOutcome(request.idempotencyKey);
        return recorded;
      },
    };
  };
}

/** Runs `write` once the key's record says COMPENSATING (reconciliation found no order). */
async function commitOnceCompensating(deps: ActivityDeps, key: string, write: () => Promise<unknown>) {
  await eventually(`${key} to wait for an operator before its late commit`, async () => {
    const record = await deps.prisma.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
    return record?.status === 'COMPENSATING' ? true : undefined;
  });
  await write();
}

/** A test service whose write activity is fronted by the faults of `plan`. */
export async function startServiceWithFaults(
  plan: FaultPlan,
  overrides: Record<string, string> = {},
): Promise<TestService> {
  const config = testConfig(overrides);
  return startTestService({
    config,
    activities: await faultyActivities(plan, { startToCloseMs: config.writePolicy.startToCloseMs }),
  });
}
