// The configuration of an operator command: the environment, or, when neither DATABASE_URL nor
// TEMPORAL_ADDRESS is set, the addresses of the running `npm run dev` stack, so `orders-cli …`
// works against the dev stack without copying addresses into the environment.
import path from 'node:path';
import { readDevStackFile } from './dev-stack-file.js';
import { type Config, type EnvSource, loadConfig, presentSettings } from './env.js';

export function loadOperatorConfig(source: EnvSource = process.env): Config {
  const env = presentSettings(source);
  const dev = readDevStackFile(path.resolve(env.DATA_DIR ?? '.data'));
  if (!dev || env.DATABASE_URL || env.TEMPORAL_ADDRESS) return loadConfig(env);
  return loadConfig({
    ...env,
    DATABASE_URL: dev.databaseUrl,
    TEMPORAL_ADDRESS: dev.temporalAddress,
    TEMPORAL_TASK_QUEUE: env.TEMPORAL_TASK_QUEUE ?? dev.taskQueue,
  });
}
