// Where the running `npm run dev` stack is: written by the supervisor, read by the operator CLI, so
// `orders-cli …` works against the dev stack without copying addresses into the environment.
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
