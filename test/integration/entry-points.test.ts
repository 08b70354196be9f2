// What each entry point needs to start: the settings it uses, and nothing else. The stdio MCP
// server, like orders-cli, finds the running `npm run dev` stack by itself and needs no webhook
// secret; the HTTP API, the one entry point that verifies webhooks, stops without one, and shares
// its port among HTTP_ACCEPT_SOCKETS sockets where the runtime can, or stops saying it cannot.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { reusePortAvailable } from '../../edges/http/accept-sockets.js';
import { writeDevStackFile } from '../../services/config/dev-stack-file.js';
import {
  approval,
  createSku,
  postApproval,
  startTestService,
  statusReaches,
  stackEnv,
  type TestService,
  uniqueApprovalNo,
} from '../support/service.js';
import { apiProcess, processEnv, sendApproval } from '../support/processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('entry points read only the settings they use', () => {
  let service: TestService;
  let dataDir: string;

  before(async () => {
    service = await startTestService();
    dataDir = mkdtempSync(path.join(tmpdir(), 'orders-entry-'));
    writeDevStackFile(dataDir, { ...stackEnv(), taskQueue: service.config.temporal.taskQueue });
  });
  after(async () => {
    await service.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('orders-mcp finds the dev stack with no address and no webhook secret in its environment', async () => {
    const approvalNo = uniqueApprovalNo('MCPDEV');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, await createSku(service.prisma, 10));
    assert.equal((await postApproval(service, body)).statusCode, 202);
    const written = await statusReaches(service, key, 'SUBMITTED');

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.join(ROOT, 'bin', 'orders-mcp.mjs')],
      // Nothing but where the dev stack keeps its data: no DATABASE_URL, TEMPORAL_ADDRESS or secret.
      env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
      stderr: 'pipe',
    });
    const stderr: string[] = [];
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const client = new Client({ name: 'entry-points-test', version: '1.0.0' });
    try {
      await client.connect(transport);
      const answer = await client.callTool({ name: 'get_order_status', arguments: { idempotencyKey: key } });
      assert.equal(answer.isError, undefined, stderr.join(''));
      const status = answer.structuredContent as { status?: string; orderNo?: string };
      assert.equal(status.status, 'SUBMITTED');
      assert.equal(status.orderNo, written.orderNo, 'the order of the dev stack’s own database');
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${stderr.join('')}`, { cause: error });
    } finally {
      await client.close();
    }
  });

  it('the HTTP API stops without WEBHOOK_SECRET, saying why it needs it', async () => {
    const { code, stderr } = await apiThatStops({});
    assert.notEqual(code, 0);
    assert.match(stderr, /WEBHOOK_SECRET: required \(every webhook request is verified with it\)/);
  });

  it('the HTTP API listens on HTTP_ACCEPT_SOCKETS sockets of its port where the runtime can share it, else stops saying so', async () => {
    if (!reusePortAvailable(process.versions.node, process.platform)) {
      const { code, stderr } = await apiThatStops({
        HTTP_ACCEPT_SOCKETS: '2',
        WEBHOOK_SECRET: 'a-secret-of-enough-length',
      });
      assert.notEqual(code, 0);
      assert.match(stderr, /HTTP_ACCEPT_SOCKETS: 2 sockets on one port need SO_REUSEPORT/);
      return;
    }
    const api = await apiProcess('api-3-sockets', processEnv(service.config, { HTTP_ACCEPT_SOCKETS: '3' }));
    try {
      await api.start();
      assert.equal(listenersOn(api.port), 3, 'three listening sockets on the port, as ss -ltn shows them');
      const answer = await sendApproval(
        api.url,
        approval(uniqueApprovalNo('SOCKETS'), await createSku(service.prisma, 5)),
      );
      assert.equal(answer.status, 202);
      await api.kill('SIGTERM');
      assert.equal(listenersOn(api.port), 0, 'every socket of the port closed with the process');
    } finally {
      await api.kill('SIGKILL');
    }
  });
});

/** Runs the API with `env` over addresses nobody listens on (its checks come before any connection). */
function apiThatStops(env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'edges/http/main.ts')],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH,
          NODE_ENV: 'production',
          DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none',
          TEMPORAL_ADDRESS: '127.0.0.1:1',
          ...env,
        },
        timeout: 60_000,
      },
      (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
    );
  });
}

/** Listening TCP sockets on `port` (IPv4), read from the kernel's table as `ss -ltn` reads it. */
function listenersOn(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter(([, local, , state]) => local?.endsWith(`:${hexPort}`) && state === '0A').length;
}
