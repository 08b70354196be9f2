// Development secrets: generated once, kept in the data folder, printed at start, so `npm run dev`
// needs no setup and the sample sender can sign with the same secret.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface DevSecrets {
  webhookSecret: string;
  mcpToken: string;
}

export function devSecretsFile(dataDir: string): string {
  return path.join(dataDir, 'dev-secrets.json');
}

export function loadOrCreateDevSecrets(dataDir: string): DevSecrets {
  const file = devSecretsFile(dataDir);
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as DevSecrets;
  const secrets = { webhookSecret: randomBytes(24).toString('hex'), mcpToken: randomBytes(24).toString('hex') };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  return secrets;
}
