// The safety nets' activities in a mocked activity context, the scan and the purge stood in for:
// every alert the scan records reaches on-call as a warn line and a count, the scheduled purge never
// dry-runs nor releases unanswered keys and heartbeats its running total after each batch, and a
// database failure reaches the schedule's retry policy as it was thrown. What the scan and the purge
// do in the database is proven by test/integration/safety-nets.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type LogEntry } from '@temporalio/worker';
import { createSafetyNetActivities, type safetyNetDatabase } from '../../../activities/safety-nets.js';
import type { PurgeResult, ScanOptions, ScanResult } from '../../../domain/safety-nets.js';
import { type AlertChange, alertLogLine } from '../../../services/db/duplicate-scan.js';
import type { PurgeOptions } from '../../../services/db/retention.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import { noProductMetrics } from '../../../services/metrics/product-metrics.js';

/** The client the activities are handed; the stand-ins check they are handed it in turn. */
const DATABASE = { database: 'the safety nets' } as unknown as PrismaClient;

const SCAN_OPTIONS: ScanOptions = { lookbackMinutes: 1_440, nearWindowMinutes: 10 };

const NEW_CLUSTER: AlertChange = {
  change: 'new',
  alertId: '41',
  kind: 'SAME_DOCUMENT',
  orderCount: 2,
  detail: 'approval A-1 MAIN: orders SO-1, SO-2 under 2 keys',
};
const GROWN_CLUSTER: AlertChange = {
  change: 'grown',
  alertId: '7',
  kind: 'NEAR_IDENTICAL',
  orderCount: 4,
  detail: 'fingerprint ffff: orders SO-3, SO-4, SO-5, SO-6 of 4 approvals',
};

const SCANNED: ScanResult = {
  scannedSince: '2025-03-01T00:00:00.000Z',
  sameDocumentClusters: 1,
  nearIdenticalClusters: 1,
  newAlerts: 1,
  grownAlerts: 1,
  newAlertIds: ['41'],
};

const PURGED: PurgeResult = {
  cutoff: '2025-02-01T00:00:00.000Z',
  dryRun: false,
  purged: 2_500,
  kept: { COMPENSATED: 3, FAILED: 1 },
  unanswered: 2,
};

/** The scan and the purge as the database would run them, reporting what they were asked. */
function safetyNetsOn(options: { alerts?: AlertChange[]; batches?: number[]; fails?: Error } = {}) {
  const asked: { scans: ScanOptions[]; purges: Omit<PurgeOptions, 'onProgress'>[] } = { scans: [], purges: [] };
  const database: typeof safetyNetDatabase = {
    scanForDuplicates: async (prisma, scanOptions, onChange = () => {}) => {
      assert.equal(prisma, DATABASE);
      await new Promise((resolve) => setImmediate(resolve));
      if (options.fails) throw options.fails;
      asked.scans.push(scanOptions);
      for (const change of options.alerts ?? []) onChange(change);
      return SCANNED;
    },
    purgeExpiredRecords: async (prisma, { onProgress, ...purgeOptions }) => {
      assert.equal(prisma, DATABASE);
      if (options.fails) throw options.fails;
      asked.purges.push(purgeOptions);
      let purged = 0;
      for (const batch of options.batches ?? []) {
        // Each batch is its own transaction: let the event loop turn between them, as the database's answers do.
        await new Promise((resolve) => setImmediate(resolve));
        purged += batch;
        onProgress?.(purged);
      }
      return { ...PURGED, purged };
    },
  };
  return { database, asked };
}

function activityContext() {
  const logged: LogEntry[] = [];
  const context = new MockActivityEnvironment(
    { attempt: 1 },
    { logger: new DefaultLogger('TRACE', (entry) => logged.push(entry)) },
  );
  return { context, logged };
}

describe('the duplicate scan', () => {
  it("tells on-call of each new or grown alert, a warn line and a count each, and returns the scan's counts", async () => {
    const { database, asked } = safetyNetsOn({ alerts: [NEW_CLUSTER, GROWN_CLUSTER] });
    const counted: string[] = [];
    const metrics = {
      ...noProductMetrics(),
      alertRecorded: (kind: string, change: string) => counted.push(`${kind} ${change}`),
    };
    const { scanForDuplicateOrders } = createSafetyNetActivities({ prisma: DATABASE, metrics, database });
    const { context, logged } = activityContext();

    const result = await context.run(scanForDuplicateOrders, SCAN_OPTIONS);
    assert.deepEqual(result, SCANNED);
    assert.deepEqual(asked.scans, [SCAN_OPTIONS]);
    assert.deepEqual(counted, ['SAME_DOCUMENT new', 'NEAR_IDENTICAL grown']);
    const warned = logged.filter((entry) => entry.level === 'WARN');
    assert.deepEqual(
      warned.map((entry): unknown[] => [entry.message, entry.meta?.alertId, entry.meta?.orderCount]),
      [
        [alertLogLine(NEW_CLUSTER), '41', 2],
        [alertLogLine(GROWN_CLUSTER), '7', 4],
      ],
    );
    assert.match(warned[0]?.message ?? '', /^DUPLICATE ALERT SAME_DOCUMENT \(new\): approval A-1 MAIN/);
  });

  it('logs every alert on a worker without metrics too', async () => {
    const { database } = safetyNetsOn({ alerts: [NEW_CLUSTER] });
    const { scanForDuplicateOrders } = createSafetyNetActivities({ prisma: DATABASE, database });
    const { context, logged } = activityContext();
    await context.run(scanForDuplicateOrders, SCAN_OPTIONS);
    assert.deepEqual(
      logged.filter((entry) => entry.level === 'WARN').map((entry) => entry.message),
      [alertLogLine(NEW_CLUSTER)],
    );
  });

  it('finding nothing, warns of nothing', async () => {
    const { database } = safetyNetsOn({ alerts: [] });
    const { scanForDuplicateOrders } = createSafetyNetActivities({ prisma: DATABASE, database });
    const { context, logged } = activityContext();
    await context.run(scanForDuplicateOrders, SCAN_OPTIONS);
    assert.deepEqual(
      logged.filter((entry) => entry.level === 'WARN'),
      [],
    );
  });
});

describe('the retention purge', () => {
  it('purges for real, keeping keys no delivery was answered for, and heartbeats the running total after each batch', async () => {
    const { database, asked } = safetyNetsOn({ batches: [1_000, 1_000, 500] });
    const { purgeExpiredIdempotencyRecords } = createSafetyNetActivities({ prisma: DATABASE, database });
    const { context } = activityContext();
    const seen: string[] = [];
    context.on('heartbeat', (purged: unknown) => seen.push(`heartbeat ${String(purged)}`));

    const result = await context.run(purgeExpiredIdempotencyRecords, { retentionDays: 30 }).then((value) => {
      seen.push('returned');
      return value;
    });
    assert.deepEqual(asked.purges, [{ retentionDays: 30, dryRun: false }], 'never a dry run, never releasing');
    assert.deepEqual(seen, ['heartbeat 1000', 'heartbeat 2000', 'heartbeat 2500', 'returned']);
    assert.deepEqual(result, { ...PURGED, purged: 2_500 });
  });
});

describe('a safety net whose database fails', () => {
  it("hands the failure to the schedule's retry policy as it was thrown", async () => {
    const lost = Object.assign(new Error('Connection terminated unexpectedly'), { code: 'P1017' });
    const { database } = safetyNetsOn({ fails: lost });
    const { scanForDuplicateOrders, purgeExpiredIdempotencyRecords } = createSafetyNetActivities({
      prisma: DATABASE,
      database,
    });
    const thrown = (run: Promise<unknown>) =>
      run.then(
        () => assert.fail('the step must fail'),
        (error: unknown) => error,
      );
    assert.equal(await thrown(activityContext().context.run(scanForDuplicateOrders, SCAN_OPTIONS)), lost);
    assert.equal(
      await thrown(activityContext().context.run(purgeExpiredIdempotencyRecords, { retentionDays: 30 })),
      lost,
    );
  });
});
