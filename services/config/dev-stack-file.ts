// Where the running `npm run dev` stack is: written by the supervisor, read by the operator CLI, so
// `orders-cli …` works against the dev stack without copying addresses into the environment; never
// read with NODE_ENV=production, where a missing address says what to set instead.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface DevStackAddresses {
  databaseUrl: string;
  temporalAddress: string;
  taskQueue: string;
}

function stackFile(dataDir: string): string {
  return path.join(dataDir, 'dev-stack.json');
}

export function writeDevStackFile(dataDir: string, addresses: DevStackAddresses): void {
  writeFileSync(stackFile(dataDir), `${JSON.stringify(addresses, null, 2)}\n`, { mode: 0o600 });
}

export function removeDevStackFile(dataDir: string): void {
  rmSync(stackFile(dataDir), { force: true });
}

export function readDevStackFile(dataDir: string): DevStackAddresses | undefined {
  const file = stackFile(dataDir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DevStackAddresses) : undefined;
}

/**
 * Why an operator process has no database or Temporal address, for the ConfigError that names the
 * setting (`requireSetting`): with NODE_ENV=production, that the dev stack's file is not read and
 * what to set instead; undefined elsewhere (the setting's usual reason).
 */
export function missingAddressReason(config: { nodeEnv: string; dataDir: string }): string | undefined {
  if (config.nodeEnv !== 'production') return undefined;
  const file = stackFile(config.dataDir);
  return (
    `with NODE_ENV=production the dev stack's ${file} is not read: ` +
    'set DATABASE_URL and TEMPORAL_ADDRESS (or TEMPORAL_PROFILE)'
  );
}
