// What each entry point needs to start: the settings it uses, and nothing else. The stdio MCP
// server, like orders-cli, finds the running `npm run dev` stack by itself and needs no webhook
// secret; the HTTP API, the one entry point that verifies webhooks, stops without one, and shares
// its port among HTTP_ACCEPT_SOCKETS sockets where the runtime can, or stops saying it cannot.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
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
  eventually,
  postApproval,
  startTestService,
  statusReaches,
  stackEnv,
  type TestService,
  uniqueApprovalNo,
  until,
} from '../../tools/harness/service.js';
import { signedHeaders } from '../../tools/harness/signed-webhook.js';
import { listeningSockets } from '../../tools/harness/listening-sockets.js';
import { apiProcess, processEnv, sendApproval } from '../../tools/harness/processes.js';
import { nodeArgsFor } from '../../tools/harness/test-build.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHARES_PORTS = reusePortAvailable(process.versions.node, process.platform);

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

  it(
    'the HTTP API stops when HTTP_ACCEPT_SOCKETS asks for more sockets than the runtime can share a port among',
    { skip: SHARES_PORTS && 'this runtime shares a port among sockets' },
    async () => {
      const { code, stderr } = await apiThatStops({
        HTTP_ACCEPT_SOCKETS: '2',
        WEBHOOK_SECRET: 'a-secret-of-enough-length',
      });
      assert.notEqual(code, 0);
      assert.match(stderr, /HTTP_ACCEPT_SOCKETS: 2 sockets on one port need SO_REUSEPORT/);
    },
  );

  it('the HTTP API listens on its sockets, answers a delivery in flight when stopped and closes its connection with it', async () => {
    const sockets = SHARES_PORTS ? 3 : 1;
    // A task queue no worker polls: a start is accepted and its write never comes, so a sender that
    // asks to wait is still waiting when the API is told to stop.
    const api = await apiProcess(
      `api-${sockets}-sockets`,
      processEnv(service.config, {
        ...(SHARES_PORTS ? { HTTP_ACCEPT_SOCKETS: String(sockets) } : {}),
        TEMPORAL_TASK_QUEUE: `unpolled-${uniqueApprovalNo('Q')}`,
        SHUTDOWN_DRAIN_MS: '200',
      }),
    );
    try {
      await api.start();
      await until(
        `${sockets} listening sockets on the port, as ss -ltn shows them`,
        () => listeningSockets(api.port).length === sockets,
      );
      const sku = await createSku(service.prisma, 5);
      const answer = await sendApproval(api.url, approval(uniqueApprovalNo('SOCKETS'), sku));
      assert.equal(answer.status, 202);

      const waitingNo = uniqueApprovalNo('SOCKETS');
      const waiting = waitingAnswer(api.port, JSON.stringify(approval(waitingNo, sku)), 'wait=3');
      const waitingKey = idempotencyKeyFor(waitingNo, 'MAIN');
      await eventually('the waiting delivery claimed', () =>
        service.prisma.idempotencyRecord
          .findUnique({ where: { idempotentKey: waitingKey } })
          .then((row) => row ?? undefined),
      );
      const stopped = api.kill('SIGTERM');
      const { status, connection } = await waiting;
      assert.equal(status, 202, 'a delivery in flight when the stop began is answered');
      assert.equal(connection, 'close', 'its connection closes with the answer instead of holding the stop');
      await stopped;
      assert.equal(listeningSockets(api.port).length, 0, 'every socket of the port closed with the process');
    } finally {
      await api.kill('SIGKILL');
    }
  });
});

/** POSTs a signed approval with `Prefer`, on a kept-alive connection; the answer's status and Connection header. */
function waitingAnswer(
  port: number,
  payload: string,
  prefer: string,
): Promise<{ status: number; connection?: string }> {
  const agent = new http.Agent({ keepAlive: true });
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhooks/oa/approvals',
        method: 'POST',
        agent,
        headers: { ...signedHeaders(payload), prefer },
      },
      (response) => {
        response.resume();
        response.on('end', () => {
          agent.destroy();
          const { connection } = response.headers;
          resolve({ status: response.statusCode ?? 0, ...(connection ? { connection } : {}) });
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** Runs the API with `env` over addresses nobody listens on (its checks come before any connection). */
function apiThatStops(env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      nodeArgsFor('app/api-main.ts'),
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
