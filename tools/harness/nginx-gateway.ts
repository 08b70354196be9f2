// nginx in front of API processes, run from the documented configuration (docs/nginx-gateway.conf):
// only its listen port, its upstream servers and its access log's path are rewritten, so the file
// a reader deploys is the file the test runs. nginx itself comes from Debian (`apt-get install
// nginx`); a machine without it fails the test with that instruction, never skips it.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, isPortOpen, waitFor } from './ports.js';

export const GATEWAY_CONF = fileURLToPath(new URL('../../docs/nginx-gateway.conf', import.meta.url));

/** The documented read timeout of the webhook location: a reply later than this is given up on. */
export function webhookReadTimeoutMs(): number {
  const found = /location \/webhooks\/ \{[\s\S]*?proxy_read_timeout (\d+)s;/.exec(readFileSync(GATEWAY_CONF, 'utf8'));
  if (!found?.[1])
    throw new Error('docs/nginx-gateway.conf: no proxy_read_timeout (in seconds) in location /webhooks/');
  return Number(found[1]) * 1_000;
}

/** `nginx` on PATH, else Debian's /usr/sbin/nginx (not on a non-root user's PATH). */
export function findNginx(): string {
  for (const candidate of ['nginx', '/usr/sbin/nginx']) {
    if (spawnSync(candidate, ['-v'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  throw new Error(
    'the gateway test needs nginx, and neither `nginx` on PATH nor /usr/sbin/nginx runs: install it with ' +
      '`apt-get update && apt-get install -y nginx` (Debian package nginx; .ci/run does this when it is missing)',
  );
}

/** Replaces every match of `pattern` and fails when the documented file no longer has `count` of them. */
function rewrite(
  text: string,
  pattern: RegExp,
  count: number,
  replace: (index: number, groups: (string | undefined)[]) => string,
): string {
  let index = 0;
  const result = text.replace(pattern, (_match, ...groups: (string | undefined)[]) => replace(index++, groups));
  if (index !== count) {
    throw new Error(`docs/nginx-gateway.conf: expected ${count} match(es) of ${String(pattern)}, found ${index}`);
  }
  return result;
}

/** The documented configuration with this machine's listen port, upstream addresses and log path. */
export function renderGatewayConf(text: string, options: { port: number; upstreams: string[]; accessLog: string }) {
  // Only the address changes; each line keeps its indentation and its parameters.
  let rendered = rewrite(
    text,
    /^([ \t]*listen[ \t]+)[^;\n]+;/gm,
    1,
    (_i, [lead]) => `${lead}127.0.0.1:${options.port};`,
  );
  rendered = rewrite(
    rendered,
    /^([ \t]*server[ \t]+)[^\s{;]+([^;\n]*;)/gm,
    options.upstreams.length,
    (index, [lead, rest]) => `${lead}${options.upstreams[index]}${rest}`,
  );
  return rewrite(rendered, /^([ \t]*access_log[ \t]+)[^\s;]+/gm, 1, (_i, [lead]) => `${lead}${options.accessLog}`);
}

/** One client request as the gateway logged it, with every upstream attempt it made. */
export interface GatewayLogLine {
  method: string;
  uri: string;
  status: number;
  attempts: { addr: string; status: string; bytesSent: number }[];
}

/** `a, b` lists the attempts of one upstream group; ` : ` separates groups after an internal redirect. */
const splitList = (value: string) => (value === '' ? [] : value.split(/\s*(?:,|\s:\s)\s*/));

export function parseGatewayLog(text: string): GatewayLogLine[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const entry = JSON.parse(line) as Record<string, string>;
      const addrs = splitList(entry.upstreamAddr ?? '');
      const statuses = splitList(entry.upstreamStatus ?? '');
      const bytes = splitList(entry.upstreamBytesSent ?? '');
      return {
        method: entry.method ?? '',
        uri: entry.uri ?? '',
        status: Number(entry.status),
        attempts: addrs.map((addr, i) => ({ addr, status: statuses[i] ?? '', bytesSent: Number(bytes[i] ?? 0) })),
      };
    });
}

export interface NginxGateway {
  url: string;
  /** The access log so far, one line per client request. */
  log: () => GatewayLogLine[];
  stop: () => Promise<void>;
}

/** Starts nginx in the foreground with the documented configuration in front of `upstreams`. */
export async function startNginxGateway(upstreams: string[]): Promise<NginxGateway> {
  const nginx = findNginx();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orders-gateway-'));
  // Should nginx, started as root, switch to its unprivileged user, that user must reach the temp folders.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const accessLog = path.join(dir, 'access.log');
  writeFileSync(
    path.join(dir, 'gateway.conf'),
    renderGatewayConf(readFileSync(GATEWAY_CONF, 'utf8'), { port, upstreams, accessLog }),
  );
  // What /etc/nginx/nginx.conf would hold around the file: every path in the temp folder.
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    [
      'events { worker_connections 512; }',
      'http {',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (kind) => `  ${kind}_temp_path ${path.join(dir, kind)};`,
      ),
      `  include ${path.join(dir, 'gateway.conf')};`,
      '}',
      '',
    ].join('\n'),
  );
  let output = '';
  const child: ChildProcess = spawn(
    nginx,
    [
      '-p',
      dir,
      '-c',
      path.join(dir, 'nginx.conf'),
      '-g',
      // One process, no workers: whatever ends the test ends nginx with it, nothing left behind.
      `daemon off; master_process off; pid ${path.join(dir, 'nginx.pid')}; error_log ${path.join(dir, 'error.log')} warn;`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await waitFor(
    `nginx on port ${port}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`nginx exited at start:\n${output}`);
      return isPortOpen(port);
    },
    20_000,
  );
  return {
    url: `http://127.0.0.1:${port}`,
    log: () => parseGatewayLog(readFileSync(accessLog, 'utf8')),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      process.off('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
