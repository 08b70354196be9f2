// The HTTP API process. Starts no embedded service; reads DATABASE_URL and TEMPORAL_ADDRESS. With
// API_HOSTS_WORKER=1 it also runs the order worker (docs/architecture.md, decision 20).
import { runMain } from '../services/config/process.js';
import { runApiProcess } from '../edges/http/run-api.js';
import { loadConfig } from './env.js';

await runMain('api', (log) => runApiProcess(loadConfig(), log));
