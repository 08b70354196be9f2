// What every reader of the environment shares: the error that stops start-up naming each bad
// variable, the environment as a process is given it, an empty variable as unset, and the log
// level, which a process reads before the rest of its settings.
import { type LogLevel, logLevelSetting } from '../telemetry/settings.js';

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

export type EnvSource = Record<string, string | undefined>;

/** An empty variable means "not set", as in most twelve-factor tooling. */
export function presentSettings(source: EnvSource): Record<string, string> {
  return Object.fromEntries(
    Object.entries(source).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  );
}

/**
 * The log level, readable before the whole configuration is: a logger exists before start-up can
 * report a bad setting. A bad LOG_LEVEL logs at `info` and is then refused when the whole
 * configuration is loaded.
 */
export function logLevelFrom(source: EnvSource = process.env): LogLevel {
  const parsed = logLevelSetting.safeParse(presentSettings(source).LOG_LEVEL);
  return parsed.success ? parsed.data : 'info';
}
