import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { loadConfig } from '../../../app/env.js';
import { ConfigError } from '../../../services/config/environment.js';
import { API_OWN_CONNECTIONS, workerSlots } from '../../../worker/worker-slots.js';

const refusal = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems.join('\n');
  }
  assert.fail('expected the slots to be refused');
};

describe("a worker's slots and its pool", () => {
  it('by default: 5 activities and the order writes take the rest of the 10 connections', () => {
    const config = loadConfig({});
    assert.deepEqual(workerSlots(config, false), { activities: 5, localActivities: 5, workflowTasks: 40 });
    assert.deepEqual(workerSlots(config, true), {
      activities: 5,
      localActivities: 5 - API_OWN_CONNECTIONS,
      workflowTasks: 40,
    });
  });

  it('refuses slots that can hold more connections than the pool, naming every setting that counts', () => {
    const config = loadConfig({
      DB_POOL_SIZE: '10',
      WORKER_MAX_CONCURRENT_ACTIVITIES: '6',
      WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: '4',
    });
    assert.deepEqual(workerSlots(config, false), { activities: 6, localActivities: 4, workflowTasks: 40 });
    assert.equal(
      refusal(() => workerSlots(config, true)),
      "WORKER_MAX_CONCURRENT_ACTIVITIES (6) + WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES (4) + 2 for the API's own " +
        'statements (API_HOSTS_WORKER=1) can hold 12 connections at once, more than DB_POOL_SIZE (10): raise ' +
        'DB_POOL_SIZE or lower the slots',
    );
    assert.match(
      refusal(() => workerSlots(loadConfig({ DB_POOL_SIZE: '5' }), false)),
      /^DB_POOL_SIZE \(5\) leaves no connection for the order writes after WORKER_MAX_CONCURRENT_ACTIVITIES \(5\)/,
    );
  });

  it('whatever the settings: the slots it gives fit the pool, and it refuses only settings that cannot', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 60 }),
        fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
        fc.boolean(),
        (pool, activities, local, hostedByApi) => {
          const settings = {
            dbPoolSize: pool,
            worker: {
              maxConcurrentActivities: activities,
              maxConcurrentLocalActivities: local,
              maxConcurrentWorkflowTasks: 40,
            },
          };
          const room = hostedByApi ? API_OWN_CONNECTIONS : 0;
          const fits = activities + (local ?? 1) + room <= pool;
          if (!fits) {
            assert.throws(() => workerSlots(settings, hostedByApi), ConfigError);
            return;
          }
          const slots = workerSlots(settings, hostedByApi);
          assert.ok(slots.activities + slots.localActivities + room <= pool);
          assert.equal(slots.activities, activities);
          // Unset, the writes get every connection the rest leaves.
          assert.equal(slots.localActivities, local ?? pool - activities - room);
        },
      ),
    );
  });
});
