// How much one worker runs at once, bounded by its process's PostgreSQL pool. Every activity slot
// and every local activity slot (the order write) may hold one pooled connection at a time; when
// they can hold more than the pool has, the excess waits for a connection inside its attempt, runs
// out its timeout under a burst and sends orders to compensation for no fault of the database.
import { ConfigError } from '../services/config/environment.js';

/**
 * Connections an API that hosts the worker (API_HOSTS_WORKER=1) keeps for its own statements: a
 * delivery's claim and a status read at once, so that intake never waits behind the worker's writes.
 */
export const API_OWN_CONNECTIONS = 2;

export interface WorkerSlots {
  /** maxConcurrentActivityTaskExecutions: deliveries, compensation steps, form reads, safety nets. */
  activities: number;
  /** maxConcurrentLocalActivityExecutions: the order writes. */
  localActivities: number;
  workflowTasks: number;
}

export interface SlotSettings {
  dbPoolSize: number;
  worker: {
    maxConcurrentActivities: number;
    /** undefined = what the pool leaves after the activities (and the hosting API's own room). */
    maxConcurrentLocalActivities: number | undefined;
    maxConcurrentWorkflowTasks: number;
  };
}

/**
 * The worker's slots, or a ConfigError naming the settings when what they can hold at once does not
 * fit DB_POOL_SIZE. `hostedByApi`: the worker shares its pool with the API's own statements.
 */
export function workerSlots(settings: SlotSettings, hostedByApi: boolean): WorkerSlots {
  const { dbPoolSize, worker } = settings;
  const apiRoom = hostedByApi ? API_OWN_CONNECTIONS : 0;
  const left = dbPoolSize - worker.maxConcurrentActivities - apiRoom;
  const localActivities = worker.maxConcurrentLocalActivities ?? left;
  const held = [
    `WORKER_MAX_CONCURRENT_ACTIVITIES (${worker.maxConcurrentActivities})`,
    worker.maxConcurrentLocalActivities === undefined
      ? undefined
      : `WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES (${worker.maxConcurrentLocalActivities})`,
    hostedByApi ? `${API_OWN_CONNECTIONS} for the API's own statements (API_HOSTS_WORKER=1)` : undefined,
  ].filter((part): part is string => part !== undefined);
  if (worker.maxConcurrentLocalActivities === undefined && left < 1) {
    throw new ConfigError([
      `DB_POOL_SIZE (${dbPoolSize}) leaves no connection for the order writes after ${held.join(' + ')}: ` +
        'raise DB_POOL_SIZE or lower WORKER_MAX_CONCURRENT_ACTIVITIES',
    ]);
  }
  if (localActivities > left) {
    throw new ConfigError([
      `${held.join(' + ')} can hold ${dbPoolSize - left + localActivities} connections at once, ` +
        `more than DB_POOL_SIZE (${dbPoolSize}): raise DB_POOL_SIZE or lower the slots`,
    ]);
  }
  return {
    activities: worker.maxConcurrentActivities,
    localActivities,
    workflowTasks: worker.maxConcurrentWorkflowTasks,
  };
}
