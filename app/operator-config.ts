// The configuration of an operator command: the environment, or, when it names neither a database
// (DATABASE_URL) nor a Temporal of its own (TEMPORAL_ADDRESS, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE),
// the addresses of the running `npm run dev` stack, so `orders-cli …` works against the dev stack
// without copying addresses into the environment. Never with NODE_ENV=production: there the
// addresses are the environment's alone, so a dev-stack.json left in (or put into) the folder an
// operator runs from cannot point a decision at another database or Temporal.
import path from 'node:path';
import { readDevStackFile } from '../services/config/dev-stack-file.js';
import { type EnvSource, presentSettings } from '../services/config/environment.js';
import { type Config, loadConfig } from './env.js';
import { namesOwnTemporal, withoutTemporalCredentials } from '../services/temporal/settings.js';

export function loadOperatorConfig(source: EnvSource = process.env): Config {
  const env = presentSettings(source);
  if (env.NODE_ENV === 'production' || env.DATABASE_URL || namesOwnTemporal(env)) return loadConfig(env);
  const dev = readDevStackFile(path.resolve(env.DATA_DIR ?? '.data'));
  if (!dev) return loadConfig(env);
  // The dev stack's Temporal is the plaintext dev server: TLS settings or an API key in the shell
  // (for the CLI's other clusters) are not for it.
  return loadConfig({
    ...env,
    ...withoutTemporalCredentials(env),
    DATABASE_URL: dev.databaseUrl,
    TEMPORAL_ADDRESS: dev.temporalAddress,
    TEMPORAL_TASK_QUEUE: env.TEMPORAL_TASK_QUEUE ?? dev.taskQueue,
  });
}
