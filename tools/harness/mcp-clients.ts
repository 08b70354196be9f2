// MCP clients as the tests run them: the SDK's v2 client made to speak one revision of the
// specification — a 2025 one by offering only that one at `initialize`, 2026-07-28 by pinning it
// (then it sends `server/discover` and never `initialize`) — and what a tool call answered, read
// the same way whichever revision carried it.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { eventually, orderCount, type TestService, visibleRuns } from './service.js';
import { nodeArgsFor } from './test-build.js';

/** The MCP stdio bin, as an agent's configuration names it. */
export const MCP_BIN = path.join(fileURLToPath(new URL('../..', import.meta.url)), 'bin', 'orders-mcp.mjs');

/**
 * The node arguments that start the MCP stdio server: the entry point the `orders-mcp` bin starts,
 * run from the test run's build when there is one (tools/harness/test-build.ts). The bin's own
 * start is entry-points.test.ts's, no-secret-leaks.test.ts's and the Inspector's where it lists the tools.
 */
export const MCP_STDIO_ARGS = nodeArgsFor('app/mcp-stdio-main.ts');

/** The revisions the service serves, the newest first. */
export const REVISIONS = ['2026-07-28', '2025-11-25', '2025-06-18'] as const;
export type Revision = (typeof REVISIONS)[number];

/** A v2 client that speaks `revision` and nothing else: a server that does not serve it fails its connect. */
export function clientOf(revision: Revision, name = `test-client-${revision}`): Client {
  const info = { name, version: '1.0.0' };
  return revision >= '2026-07-28'
    ? new Client(info, { versionNegotiation: { mode: { pin: revision } } })
    : new Client(info, { supportedProtocolVersions: [revision] });
}

export interface ToolAnswer {
  isError?: boolean;
  text: string;
  structured: Record<string, unknown> | undefined;
}

export async function answerOf(call: Promise<unknown>): Promise<ToolAnswer> {
  const result = (await call) as {
    isError?: boolean;
    content: { type: string; text?: string }[];
    structuredContent?: Record<string, unknown>;
  };
  return {
    ...(result.isError ? { isError: true } : {}),
    text: result.content.map((part) => part.text ?? '').join('\n'),
    structured: result.structuredContent,
  };
}

/** Once `key`'s order is written: exactly one order row and one workflow run behind it. */
export async function assertOneOrderWritten(service: TestService, key: string): Promise<void> {
  await eventually(`the order of ${key}`, async () => ((await orderCount(service.prisma, key)) > 0 ? true : undefined));
  assert.equal(await orderCount(service.prisma, key), 1, 'exactly one order row');
  assert.equal(await visibleRuns(service.temporal, orderWorkflowIdFor(key)), 1, 'exactly one workflow run');
}

/** One JSON-RPC request to `/mcp` with `token`, as `app.inject` takes it (no session: the transport is stateless). */
export function mcpRequest(token: string, method: string, params: Record<string, unknown>) {
  return {
    method: 'POST' as const,
    url: '/mcp',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
    },
    payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  };
}
