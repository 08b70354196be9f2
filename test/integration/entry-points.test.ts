// What each entry point needs to start: the settings it uses, and nothing else. The stdio MCP
// server, like orders-cli, finds the running `npm run dev` stack by itself and needs no webhook
// secret; the HTTP API, the one entry point that verifies webhooks, stops without one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
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
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', path.join(ROOT, 'edges/http/main.ts')],
        {
          cwd: ROOT,
          // Addresses nobody listens on: the check comes before any connection.
          env: {
            PATH: process.env.PATH,
            NODE_ENV: 'production',
            DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none',
            TEMPORAL_ADDRESS: '127.0.0.1:1',
          },
          timeout: 60_000,
        },
        (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
      );
    });
    assert.notEqual(code, 0);
    assert.match(stderr, /WEBHOOK_SECRET: required \(every webhook request is verified with it\)/);
  });
});
