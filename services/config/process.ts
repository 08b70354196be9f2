// Process lifecycle shared by the entry points: a named logger, a clear message and a non-zero
// exit for anything that stops start-up, and one crash path.
import pino, { type Logger } from 'pino';
import { redactRequestTarget } from '../../domain-node/redact-url.js';
import { ConfigError, logLevelFrom } from './environment.js';

/** Logs go to stdout, or to stderr for a process whose stdout carries a protocol (MCP stdio). */
export type LogDestination = 'stdout' | 'stderr';

/**
 * The HTTP framework logs every request it receives (`req`): with its query values redacted, so a
 * caller who puts a token in the URL does not put it in the log.
 */
const serializers = {
  req: (request: { method?: string; url?: string; host?: string; remoteAddress?: string }) => ({
    method: request.method,
    url: request.url === undefined ? undefined : redactRequestTarget(request.url),
    host: request.host,
    remoteAddress: request.remoteAddress,
  }),
};

export function createLogger(name: string, destination: LogDestination = 'stdout'): Logger {
  const options = { name, level: logLevelFrom(), serializers };
  return destination === 'stderr' ? pino(options, pino.destination({ dest: 2, sync: true })) : pino(options);
}

export function requireSetting<T>(
  name: string,
  value: T | undefined,
  why = 'this entry point starts no embedded service',
): T {
  if (value === undefined) throw new ConfigError([`${name}: required (${why})`]);
  return value;
}

export async function runMain(
  name: string,
  main: (log: Logger) => Promise<void>,
  destination: LogDestination = 'stdout',
): Promise<void> {
  const log = createLogger(name, destination);
  try {
    await main(log);
  } catch (error) {
    if (error instanceof ConfigError) {
      log.fatal(error.message);
      console.error(error.message);
    } else {
      log.fatal({ err: error }, `${name} crashed`);
    }
    process.exit(1);
  }
}
