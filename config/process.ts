// Process lifecycle shared by the entry points: a named logger, a clear message and a non-zero
// exit for anything that stops start-up, and one crash path.
import pino, { type Logger } from 'pino';
import { ConfigError } from './env.js';

export function createLogger(name: string): Logger {
  return pino({ name, level: process.env.LOG_LEVEL ?? 'info' });
}

export function requireSetting<T>(name: string, value: T | undefined): T {
  if (value === undefined) throw new ConfigError([`${name}: required (this entry point starts no embedded service)`]);
  return value;
}

export async function runMain(name: string, main: (log: Logger) => Promise<void>): Promise<void> {
  const log = createLogger(name);
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
