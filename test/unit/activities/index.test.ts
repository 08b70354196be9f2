// The activity names the worker registers are the names recorded in workflow histories: a run
// that scheduled `deliverOrderEvent` before a rename would wait for it forever after. Replaying a
// history does not run activities, so test/replay/replay.test.ts cannot see a rename; this does.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createActivities } from '../../../activities/index.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import type { Client } from '@temporalio/client';

const HISTORIES = new URL('../../replay/histories/', import.meta.url);

/** Nothing is called while the activities are composed: a dependency used would throw. */
const unused = <T>(name: string) =>
  new Proxy(
    {},
    {
      get: () => {
        throw new Error(`${name} was used while composing the activities`);
      },
    },
  ) as T;

interface HistoryEvent {
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
  markerRecordedEventAttributes?: {
    markerName?: string;
    details?: Record<string, { payloads?: { data?: string }[] }>;
  };
}

/** Every activity type a recorded history scheduled: activity tasks, and local activities' markers. */
function recordedActivityTypes(): Set<string> {
  const types = new Set<string>();
  for (const file of readdirSync(HISTORIES).filter((name) => name.endsWith('.json'))) {
    const { events } = JSON.parse(readFileSync(new URL(file, HISTORIES), 'utf8')) as { events: HistoryEvent[] };
    for (const event of events) {
      const scheduled = event.activityTaskScheduledEventAttributes?.activityType?.name;
      if (scheduled) types.add(scheduled);
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName !== 'core_local_activity') continue;
      for (const payload of marker.details?.data?.payloads ?? []) {
        const data = JSON.parse(Buffer.from(payload.data ?? '', 'base64').toString('utf8')) as {
          activity_type?: string;
        };
        if (data.activity_type) types.add(data.activity_type);
      }
    }
  }
  return types;
}

describe('the activities a worker registers', () => {
  it('include every activity a recorded history scheduled, under the name it was recorded with', () => {
    const registered = new Set(
      Object.keys(
        createActivities({
          prisma: unused<PrismaClient>('the database'),
          temporal: unused<Client>('the Temporal client'),
          taskQueue: 'orders',
        }),
      ),
    );
    const recorded = recordedActivityTypes();
    // The histories cover the write, the delivery, the form read, compensation and the safety nets.
    for (const expected of ['writeOrder', 'deliverOrderEvent', 'readApprovalForm', 'reconcileFailedWrite']) {
      assert.ok(recorded.has(expected), `the histories record ${expected}`);
    }
    const missing = [...recorded].filter((type) => !registered.has(type));
    assert.deepEqual(missing, [], `recorded activity types no worker registers any more: ${missing.join(', ')}`);
  });
});
