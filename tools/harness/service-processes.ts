// The service's HTTP API and worker as child processes on a stack — what `npm run dev`, the chaos
// run, the explorer, the bench and the process tests start. A tool that runs a variant of its own
// (a broken rule, a fault-injecting worker, built JavaScript) passes its entry point: the product
// carries no switch for it.
import type { Client } from '@temporalio/client';
import { type ManagedProcess, managedProcess, type ManagedProcessOptions } from './child-process.js';
import { freePort } from './ports.js';

export const API_ENTRY = 'app/api-main.ts';
export const WORKER_ENTRY = 'app/worker-main.ts';

export interface ServiceProcessOptions
  extends Partial<
    Pick<ManagedProcessOptions, 'ready' | 'readyTimeoutMs' | 'nodeArgs' | 'nodeFlags' | 'cwd' | 'onOutput' | 'onExit'>
  > {
  /** The stack it runs on (DATABASE_URL, TEMPORAL_ADDRESS), unless `env` points it elsewhere. */
  stack?: { databaseUrl: string; temporalAddress: string };
  /** Its settings besides the stack's (task queue, secrets, timings, a proxy's address); over `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Instead of the product's entry point. */
  entry?: string;
  name?: string;
}

export interface ApiOptions extends ServiceProcessOptions {
  /** A free one when unset. */
  port?: number;
  /** The API hosts an order worker of its own (API_HOSTS_WORKER=1): starts run eagerly on it. */
  hostsWorker?: boolean;
}

export interface ApiProcess extends ManagedProcess {
  port: number;
  url: string;
}

/** The API, ready once it listens (or once `ready` answers true). Not started yet. */
export async function apiProcess(options: ApiOptions = {}): Promise<ApiProcess> {
  const port = options.port ?? (await freePort());
  const managed = serviceProcess(options, {
    name: 'api',
    entry: API_ENTRY,
    readyLine: 'Server listening',
    env: { PORT: String(port), ...(options.hostsWorker ? { API_HOSTS_WORKER: '1' } : {}) },
  });
  return { ...managed, port, url: `http://127.0.0.1:${port}` };
}

/** A worker, ready once it polls its task queue (or once `ready` answers true). Not started yet. */
export function workerProcess(options: ServiceProcessOptions = {}): ManagedProcess {
  return serviceProcess(options, { name: 'worker', entry: WORKER_ENTRY, readyLine: 'worker polling', env: {} });
}

/**
 * A `ready` check for a worker: true once some worker polls `taskQueue` (for one whose log, at the
 * level it runs at, says nothing when it starts polling).
 */
export function pollingTaskQueue(temporal: Client, taskQueue: string): () => Promise<boolean> {
  return async () => {
    const { pollers } = await temporal.workflowService.describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: taskQueue },
    });
    return (pollers?.length ?? 0) > 0;
  };
}

function serviceProcess(
  options: ServiceProcessOptions,
  role: { name: string; entry: string; readyLine: string; env: NodeJS.ProcessEnv },
): ManagedProcess {
  const { stack, env, entry, name, ...rest } = options;
  return managedProcess({
    ...rest,
    name: name ?? role.name,
    entry: entry ?? role.entry,
    readyLine: role.readyLine,
    env: {
      ...process.env,
      ...(stack ? { DATABASE_URL: stack.databaseUrl, TEMPORAL_ADDRESS: stack.temporalAddress } : {}),
      ...env,
      ...role.env,
    },
  });
}
