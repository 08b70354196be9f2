// The worker process: polls the task queue and runs workflows and activities. Starts no embedded
// service; reads DATABASE_URL and TEMPORAL_ADDRESS from the environment.
import { runMain } from '../services/config/process.js';
import { runWorkerProcess } from '../worker/run-worker.js';
import { loadConfig } from './env.js';

await runMain('worker', (log) => runWorkerProcess(loadConfig(), log));
