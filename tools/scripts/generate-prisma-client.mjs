// `prisma generate`: writes the Prisma client to services/db/generated/ from prisma/schema.prisma.
// Run by postinstall in a development checkout and as the first step of `npm run build`, so a
// build with node alone (`npm ci --ignore-scripts && npm run build`: no postinstall, no Python)
// still compiles the client into dist/. Needs the `prisma` CLI, a development dependency.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Runs a command with its output shown; a failure ends this process with the command named. */
export function runOrExit(label, command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) {
    console.error(`${label}: \`${command} ${args.join(' ')}\` failed (exit ${result.status ?? result.signal})`);
    process.exit(1);
  }
}

export function generatePrismaClient(label = 'generate-prisma-client') {
  // `prisma generate` does not need Prisma's schema engine, but the CLI insists on finding one
  // before it starts; any existing file satisfies it (the engine cannot be downloaded here).
  const placeholder = path.join(ROOT, 'node_modules', '.cache', 'prisma-schema-engine-placeholder');
  mkdirSync(path.dirname(placeholder), { recursive: true });
  if (!existsSync(placeholder)) writeFileSync(placeholder, '');
  runOrExit(label, path.join(ROOT, 'node_modules', '.bin', 'prisma'), ['generate'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? placeholder,
      PRISMA_HIDE_UPDATE_MESSAGE: '1',
    },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) generatePrismaClient();
