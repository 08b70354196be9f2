// PgBouncer (Debian's `pgbouncer`) in transaction mode in front of a test's PostgreSQL, as a
// platform team puts one between the service and its database: every client connection borrows a
// server connection for one transaction at a time. It knows the one role the test gives it.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, isPortOpen } from './ports.js';
import { sleep } from './time.js';

export interface RunningPgBouncer {
  /** `url` with its host and port replaced by the pooler's. */
  urlOf: (url: string) => string;
  output: () => string;
  stop: () => Promise<void>;
}

/** Starts one in front of the server `serverUrl` names, for the role and password in it. */
export async function startPgBouncer(serverUrl: string): Promise<RunningPgBouncer> {
  const server = new URL(serverUrl);
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'orders-pgbouncer-'));
  // As root it must switch to another user (it refuses to run as root), who reads these files.
  chmodSync(dir, 0o755);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const quoted = (value: string) => `"${value.replaceAll('"', '""')}"`;
  writeFileSync(path.join(dir, 'users.txt'), `${quoted(user)} ${quoted(password)}\n`, { mode: 0o644 });
  const ini = [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = plain',
    `auth_file = ${path.join(dir, 'users.txt')}`,
    'pool_mode = transaction',
    // Fewer server connections than the service's pools hold: clients take turns, as in production.
    'default_pool_size = 5',
    'max_client_conn = 200',
  ].join('\n');
  writeFileSync(path.join(dir, 'pgbouncer.ini'), `${ini}\n`, { mode: 0o644 });
  const asRoot = process.getuid?.() === 0 ? ['-u', 'postgres'] : [];
  let output = '';
  const child: ChildProcess = spawn('pgbouncer', [...asRoot, path.join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (error) => reject(new Error(`pgbouncer: ${error.message} (apt-get install pgbouncer)`))),
  );
  const deadline = Date.now() + 15_000;
  const listening = (async () => {
    while (!(await isPortOpen(port))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`pgbouncer did not start:\n${output}`);
      await sleep(50);
    }
  })();
  await Promise.race([listening, spawnError]);
  return {
    urlOf: (url) => {
      const pooled = new URL(url);
      pooled.hostname = '127.0.0.1';
      pooled.port = String(port);
      return pooled.toString();
    },
    output: () => output,
    stop: async () => {
      process.off('exit', kill);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
