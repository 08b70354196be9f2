// One service, three revisions of the MCP specification: clients of 2025-06-18, 2025-11-25 and
// 2026-07-28 (the SDK's v2 client, each made to speak its own) submit the same approval over
// Streamable HTTP and over stdio, against the real Temporal dev server and PostgreSQL. Whichever
// comes first, one order is written; the first answer is the submission, the others duplicates
// with the same order number. Each client is watched on the wire, so one that fell back to
// another revision fails the test.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { loadConfig } from '../../app/env.js';
import {
  answerOf,
  assertOneOrderWritten,
  clientOf,
  MCP_STDIO_ARGS,
  REVISIONS,
  type Revision,
} from '../../tools/harness/mcp-clients.js';
import {
  approval,
  createSku,
  orderCount,
  startTestService,
  testEnv,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const MCP_TOKEN = 'test-mcp-revisions-token-0123456789';
const MCP_OPERATOR_TOKEN = 'test-mcp-revisions-operator-token-0123';
const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';
const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';

interface Submission {
  idempotencyKey: string;
  duplicate: boolean;
  status: string;
  orderNo?: string;
}

/** What one HTTP client sent: each request's JSON-RPC method and its MCP headers. */
interface SentRequest {
  method: string;
  protocolVersion: string | null;
  mcpMethod: string | null;
  mcpName: string | null;
}

/** Every order of `items`, for "whichever comes first". */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, index) =>
    permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]),
  );
}

describe('MCP clients of 2025-06-18, 2025-11-25 and 2026-07-28', () => {
  // A wait long enough that the first answer is the written order on a loaded machine too.
  // The operator tools: over stdio by MCP_OPERATOR_TOOLS, over HTTP to MCP_OPERATOR_TOKEN.
  const env = testEnv({
    MCP_TOKEN,
    MCP_OPERATOR_TOKEN,
    MCP_OPERATOR_TOOLS: '1',
    LOG_LEVEL: 'warn',
    MCP_SUBMIT_WAIT_MS: '20000',
  });
  let service: TestService;
  let mcpUrl: URL;
  const opened: Client[] = [];

  before(async () => {
    service = await startTestService({ config: loadConfig(env) });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    const address = service.app.server.address();
    assert.ok(address && typeof address === 'object');
    mcpUrl = new URL(`http://127.0.0.1:${address.port}/mcp`);
  });

  after(async () => {
    await Promise.all(opened.map((client) => client.close()));
    await service.stop();
  });

  /** A client of `revision` over HTTP, with what it sent. */
  async function overHttp(revision: Revision, token = MCP_TOKEN) {
    const sent: SentRequest[] = [];
    const recording = async (input: string | URL | Request, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      if (init?.method === 'POST' && typeof init.body === 'string') {
        const { method } = JSON.parse(init.body) as { method?: string };
        sent.push({
          method: method ?? '(a response)',
          protocolVersion: headers.get('mcp-protocol-version'),
          mcpMethod: headers.get('mcp-method'),
          mcpName: headers.get('mcp-name'),
        });
      }
      return fetch(input, init);
    };
    const transport = new StreamableHTTPClientTransport(mcpUrl, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: recording,
    });
    const client = clientOf(revision);
    opened.push(client);
    await client.connect(transport);
    return { client, sent };
  }

  /** A client of `revision` over stdio: the server `orders-mcp` starts, as its own child process. */
  async function overStdio(revision: Revision) {
    const stderr: string[] = [];
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [...MCP_STDIO_ARGS],
      env: { ...env, PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    const client = clientOf(revision);
    // Closed by `after` whatever happens: a child left running would keep the test process alive.
    opened.push(client);
    try {
      await client.connect(transport);
    } catch (error) {
      await transport.close();
      throw new Error(`the ${revision} client could not connect over stdio:\n${stderr.join('')}`, { cause: error });
    }
    return client;
  }

  async function submit(client: Client, body: unknown): Promise<Submission> {
    const answer = await answerOf(
      client.callTool({ name: 'submit_approved_order', arguments: body as Record<string, unknown> }),
    );
    assert.equal(answer.isError, undefined, answer.text);
    return answer.structured as unknown as Submission;
  }

  /** The three answers, in the order the clients were asked: one order, one first answer, then duplicates. */
  async function assertOneOrderFrom(answers: Submission[], key: string, order: readonly Revision[]) {
    const label = `in the order ${order.join(', ')}`;
    assert.deepEqual(
      answers.map((answer) => answer.duplicate),
      [false, true, true],
      `the first answer is the submission, the others duplicates, ${label}`,
    );
    assert.equal(answers[0]?.status, 'SUBMITTED', label);
    assert.match(answers[0]?.orderNo ?? '', /\S/, `the first answer carries the order number, ${label}`);
    assert.deepEqual(new Set(answers.map((answer) => answer.orderNo)), new Set([answers[0]?.orderNo]), label);
    assert.deepEqual(new Set(answers.map((answer) => answer.idempotencyKey)), new Set([key]), label);
    await assertOneOrderWritten(service, key);
  }

  it('over HTTP, whichever revision submits first, the same approval is one order: one first answer, two duplicates with the same orderNo', async () => {
    const clients = {} as Record<Revision, Awaited<ReturnType<typeof overHttp>>>;
    for (const revision of REVISIONS) clients[revision] = await overHttp(revision);
    const sku = await createSku(service.prisma, 100);
    const orders = permutations(REVISIONS);
    for (const order of orders) {
      const approvalNo = uniqueApprovalNo('MCPREV');
      const body = approval(approvalNo, sku);
      const answers: Submission[] = [];
      for (const revision of order) answers.push(await submit(clients[revision].client, body));
      await assertOneOrderFrom(answers, idempotencyKeyFor(approvalNo, 'MAIN'), order);
    }

    // Each client spoke its own revision on the wire.
    for (const revision of ['2025-06-18', '2025-11-25'] as const) {
      const { sent } = clients[revision];
      assert.equal(sent[0]?.method, 'initialize', `${revision} opens with initialize`);
      const calls = sent.filter((request) => request.method === 'tools/call');
      assert.equal(calls.length, orders.length);
      assert.deepEqual(new Set(calls.map((call) => call.protocolVersion)), new Set([revision]));
    }
    const modern = clients['2026-07-28'].sent;
    assert.equal(
      modern.some((request) => request.method === 'initialize'),
      false,
      '2026-07-28 never sends initialize',
    );
    assert.equal(modern[0]?.method, 'server/discover', '2026-07-28 opens with server/discover');
    const modernCalls = modern.filter((request) => request.method === 'tools/call');
    assert.equal(modernCalls.length, orders.length);
    for (const call of modernCalls) {
      assert.deepEqual(
        [call.protocolVersion, call.mcpMethod, call.mcpName],
        ['2026-07-28', 'tools/call', 'submit_approved_order'],
      );
    }
  });

  it('over stdio, clients of the three revisions submitting the same approval get one order, one first answer and two duplicates', async () => {
    const order = ['2025-06-18', '2026-07-28', '2025-11-25'] as const;
    const clients: Client[] = [];
    for (const revision of order) clients.push(await overStdio(revision));
    for (const [index, revision] of order.entries()) {
      const client = clients[index] as Client;
      assert.equal(client.getNegotiatedProtocolVersion(), revision, `the stdio client speaks ${revision}`);
      assert.equal(client.getProtocolEra(), revision === '2026-07-28' ? 'modern' : 'legacy');
    }
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPREVIO');
    const body = approval(approvalNo, sku);
    const answers: Submission[] = [];
    for (const client of clients) answers.push(await submit(client, body));
    await assertOneOrderFrom(answers, idempotencyKeyFor(approvalNo, 'MAIN'), order);
  });

  it('every revision lists the same tools with the same annotations, in JSON Schema 2020-12 from 2025-11-25 on and in draft-07 to 2025-06-18', async () => {
    const listed = [];
    for (const revision of REVISIONS) {
      const { client } = await overHttp(revision, MCP_OPERATOR_TOKEN);
      const stdio = await overStdio(revision);
      listed.push({ revision, http: await client.listTools(), stdio: await stdio.listTools() });
    }
    const [first] = listed;
    assert.ok(first);
    const withoutSchemas = (tools: typeof first.http.tools) =>
      tools.map(({ inputSchema: _in, outputSchema: _out, ...rest }) => rest);
    const dialects = (tools: typeof first.http.tools) =>
      new Set(tools.flatMap((tool) => [tool.inputSchema.$schema, tool.outputSchema?.$schema]));
    for (const { revision, http, stdio } of listed) {
      const expected = new Set([revision === '2025-06-18' ? DRAFT_07 : DRAFT_2020_12]);
      assert.deepEqual(dialects(http.tools), expected, `${revision} over HTTP`);
      assert.deepEqual(dialects(stdio.tools), expected, `${revision} over stdio`);
      assert.deepEqual(withoutSchemas(http.tools), withoutSchemas(first.http.tools), `${revision}: the same tools`);
      assert.deepEqual(withoutSchemas(stdio.tools), withoutSchemas(first.http.tools), `${revision} over stdio`);
      assert.equal(http.tools.length, 5);
    }
  });

  it('a 2026-07-28 request whose Mcp-Name header disagrees with its body is refused with 400 and runs no tool', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPHDR');
    const call = (mcpName: string) =>
      fetch(mcpUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${MCP_TOKEN}`,
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': mcpName,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            name: 'submit_approved_order',
            arguments: approval(approvalNo, sku),
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        }),
      });
    const refused = await call('get_order_status');
    assert.equal(refused.status, 400, await refused.clone().text());
    const { error } = (await refused.json()) as { error?: { code: number; message: string } };
    assert.ok(error, 'a JSON-RPC error');
    assert.equal(await orderCount(service.prisma, idempotencyKeyFor(approvalNo, 'MAIN')), 0, 'nothing written');

    // The very same request with agreeing headers is carried out, answered with a complete result.
    const served = await call('submit_approved_order');
    assert.equal(served.status, 200);
    const text = await served.text();
    const json = served.headers.get('content-type')?.includes('text/event-stream')
      ? ([...text.matchAll(/^data: (.+)$/gm)].at(-1)?.[1] ?? '')
      : text;
    const { result } = JSON.parse(json) as { result: { resultType?: string; structuredContent?: Submission } };
    assert.equal(result.resultType, 'complete');
    assert.equal(result.structuredContent?.duplicate, false);
    await assertOneOrderWritten(service, idempotencyKeyFor(approvalNo, 'MAIN'));
  });
});
