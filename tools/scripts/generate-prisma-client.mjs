// `prisma generate`: writes the Prisma clients to services/db/generated/, one per store: prisma/
// from prisma/schema.prisma (PostgreSQL), prisma-mysql/ from prisma/mysql/schema.prisma.
// Run by postinstall in a development checkout and as the first step of `npm run build`, so a
// build with node alone (`npm ci --ignore-scripts && npm run build`: no postinstall, no Python)
// still compiles the client into dist/. Needs the `prisma` CLI, a development dependency.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUTPUT = path.join(ROOT, 'services', 'db', 'generated');
/** Each store's schema; each generates its own client (its output is named in the schema). */
const SCHEMAS = ['prisma/schema.prisma', 'prisma/mysql/schema.prisma'];
/** The digest of what the clients in OUTPUT were generated from. */
const STAMP = path.join(OUTPUT, '.generated-from');

/** Runs a command with its output shown; a failure ends this process with the command named. */
export function runOrExit(label, command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) {
    console.error(`${label}: \`${command} ${args.join(' ')}\` failed (exit ${result.status ?? result.signal})`);
    process.exit(1);
  }
}

/** What the client is generated from: the schema, the CLI's configuration and its version. */
function sourcesDigest() {
  const hash = createHash('sha256');
  for (const file of [...SCHEMAS, 'prisma.config.ts', 'node_modules/prisma/package.json']) {
    hash.update(readFileSync(path.join(ROOT, file)));
  }
  return hash.digest('hex');
}

/**
 * `force`: generate even when the client was generated from the same sources (an install makes
 * everything afresh). Otherwise such a client is left as it is: generating rewrites its files in
 * place, and a process importing them at that moment (a test file starting while a test runs the
 * build) could read half a file.
 */
export function generatePrismaClient(label = 'generate-prisma-client', { force = false } = {}) {
  const digest = sourcesDigest();
  if (
    !force &&
    existsSync(path.join(OUTPUT, 'prisma', 'client.ts')) &&
    existsSync(path.join(OUTPUT, 'prisma-mysql', 'client.ts')) &&
    existsSync(STAMP) &&
    readFileSync(STAMP, 'utf8') === digest
  ) {
    console.log(`${label}: the Prisma clients in services/db/generated are up to date`);
    return;
  }
  // `prisma generate` does not need Prisma's schema engine, but the CLI insists on finding one
  // before it starts; any existing file satisfies it (the engine cannot be downloaded here).
  const placeholder = path.join(ROOT, 'node_modules', '.cache', 'prisma-schema-engine-placeholder');
  mkdirSync(path.dirname(placeholder), { recursive: true });
  if (!existsSync(placeholder)) writeFileSync(placeholder, '');
  for (const schema of SCHEMAS) {
    runOrExit(label, path.join(ROOT, 'node_modules', '.bin', 'prisma'), ['generate', '--schema', schema], {
      cwd: ROOT,
      env: {
        ...process.env,
        PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? placeholder,
        PRISMA_HIDE_UPDATE_MESSAGE: '1',
      },
    });
  }
  writeFileSync(STAMP, digest);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) generatePrismaClient();
