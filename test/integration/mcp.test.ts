// AI agents submit orders through MCP tools with the webhook's exactly-once guarantees: the SDK's
// own Client, over stdio (the server `orders-mcp` starts, as a child process) and over Streamable HTTP (the
// API listening on a real port), against the real Temporal dev server and PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Context } from '@temporalio/activity';
import fc from 'fast-check';
import {
  Client,
  type Progress,
  SdkError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { toActivityFailure } from '../../activities/activity-failure.js';
import { buildApp } from '../../edges/http/app.js';
import { loadConfig } from '../../app/env.js';
import { freePort } from '../../tools/harness/ports.js';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { createLazyClient } from '../../services/temporal/connection.js';
import type { OrderWorkflowInput } from '../../workflows/definitions.js';
import {
  approval,
  type ApprovalBody,
  createSku,
  eventually,
  orderCount,
  orderedQuantities,
  postApproval,
  startTestService,
  testEnv,
  type TestService,
  uniqueApprovalNo,
  workflowExists,
} from '../../tools/harness/service.js';
import {
  answerOf,
  assertOneOrderWritten,
  MCP_STDIO_ARGS,
  mcpRequest,
  type ToolAnswer,
} from '../../tools/harness/mcp-clients.js';

const MCP_TOKEN = 'test-mcp-token-0123456789abcdef';
const MCP_OPERATOR_TOKEN = 'test-mcp-operator-token-0123456789';
const OPERATOR_TOOLS = ['list_orders_awaiting_decision', 'decide_compensation', 'decide_delivery'];
const SUBMIT_TOOLS = ['submit_approved_order', 'get_order_status'];
// Long enough that a write on a loaded machine is answered with its outcome, as the tests expect.
const SUBMIT_WAIT_MS = 10_000;
const ALLOWED_ORIGIN = 'http://agent.example:8080';

/** A JSON-RPC answer as /mcp sends it. */
interface RpcAnswer {
  jsonrpc: string;
  id: number;
  result?: unknown;
  error?: { code: number; message: string };
}

interface Submission {
  idempotencyKey: string;
  workflowId: string;
  duplicate: boolean;
  status: string;
  orderNo?: string;
}

/**
 * Holds the writes of chosen approvals until released: a write still in progress, for real. A held
 * attempt gives up just before its start-to-close with a lost connection (retried by the policy),
 * so no attempt outlives its timeout.
 */
class WriteGate {
  private readonly held = new Map<string, { opened: Promise<void>; open: () => void }>();
  hold(approvalNo: string): void {
    let open = () => {};
    const opened = new Promise<void>((resolve) => (open = resolve));
    this.held.set(approvalNo, { opened, open });
  }
  release(approvalNo: string): void {
    this.held.get(approvalNo)?.open();
    this.held.delete(approvalNo);
  }
  /** Resolves when the write may go on; rejects (retryably) when it was held for `maxHoldMs`. */
  async passage(approvalNo: string, maxHoldMs: number): Promise<void> {
    const gate = this.held.get(approvalNo);
    if (!gate) return;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<'held'>((resolve) => (timer = setTimeout(() => resolve('held'), maxHoldMs)));
    const outcome = await Promise.race([gate.opened, gaveUp]);
    clearTimeout(timer);
    if (outcome === 'held') {
      throw Object.assign(new Error('the connection was reset while the test held the write'), { code: 'ECONNRESET' });
    }
  }
}

describe('MCP tools', () => {
  const gate = new WriteGate();
  const env = testEnv({
    MCP_TOKEN,
    MCP_OPERATOR_TOKEN,
    // The stdio bin's switch; over HTTP the operator tools follow the token alone.
    MCP_OPERATOR_TOOLS: '1',
    MCP_ALLOWED_ORIGINS: ALLOWED_ORIGIN,
    MCP_SUBMIT_WAIT_MS: String(SUBMIT_WAIT_MS),
    // Room for a held write (see WriteGate) to be retried until the test releases it: its
    // retries (backoff up to 1 s) outlast the submit wait.
    RETRY_MAX_ATTEMPTS: '20',
    LOG_LEVEL: 'warn',
  });
  let service: TestService;
  let mcpUrl: URL;
  /** Two stdio servers: two agent sessions on one machine. */
  const stdio: Client[] = [];
  const stdioErrors: Error[] = [];
  const stdioStderr: string[] = [];
  const httpClients: Client[] = [];

  before(async () => {
    service = await startTestService({
      config: loadConfig(env),
      activities: (real) => ({
        ...real,
        async writeOrder(input: OrderWorkflowInput) {
          try {
            await gate.passage(input.approvalNo, input.policy.startToCloseMs - 1_000);
          } catch (error) {
            throw toActivityFailure(error, Context.current().info.attempt, input.policy);
          }
          return real.writeOrder(input);
        },
      }),
    });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    const address = service.app.server.address();
    assert.ok(address && typeof address === 'object');
    mcpUrl = new URL(`http://127.0.0.1:${address.port}/mcp`);
    for (let session = 0; session < 2; session++) stdio.push(await connectStdio(['--operator-tools']));
  });

  after(async () => {
    await Promise.all([...stdio, ...httpClients].map((client) => client.close()));
    await service.stop();
  });

  async function connectStdio(args: string[]): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [...MCP_STDIO_ARGS, ...args],
      // Not production: the source under test runs, not a dist/ an earlier build left.
      env: { ...env, PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    });
    // Drain stderr (a full pipe would stall the server); keep it for a failing test's message.
    transport.stderr?.on('data', (chunk: Buffer) => stdioStderr.push(chunk.toString('utf8')));
    const client = new Client({ name: 'mcp-test-stdio', version: '1.0.0' });
    client.onerror = (error) => stdioErrors.push(error);
    await client.connect(transport);
    await client.listTools(); // caches the output schemas, so every answer is checked against them
    return client;
  }

  async function connectHttp(token: string | undefined = MCP_TOKEN, url = mcpUrl): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
    });
    const client = new Client({ name: 'mcp-test-http', version: '1.0.0' });
    await client.connect(transport);
    httpClients.push(client);
    await client.listTools();
    return client;
  }

  function submit(client: Client, body: unknown, options: Parameters<Client['callTool']>[1] = {}) {
    return answerOf(
      client.callTool({ name: 'submit_approved_order', arguments: body as Record<string, unknown> }, options),
    );
  }

  function callTool(client: Client, name: string, args: Record<string, unknown>) {
    return answerOf(client.callTool({ name, arguments: args }));
  }

  async function assertNothingStarted(approvalNo: string) {
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false, 'no workflow');
    assert.equal(await service.prisma.idempotencyRecord.count({ where: { approvalNo } }), 0, 'no record');
    assert.equal(await orderCount(service.prisma, key), 0, 'no order row');
  }

  it('tools/list shows every tool with its input schema, output schema and annotations, over both transports', async () => {
    for (const client of [stdio[0] as Client, await connectHttp(MCP_OPERATOR_TOKEN)]) {
      const { tools } = await client.listTools();
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      assert.deepEqual([...byName.keys()].sort(), [
        'decide_compensation',
        'decide_delivery',
        'get_order_status',
        'list_orders_awaiting_decision',
        'submit_approved_order',
      ]);
      for (const tool of tools) {
        assert.ok(tool.description && tool.description.length > 80, `${tool.name} is described for a model`);
        assert.equal(tool.inputSchema.type, 'object');
        assert.equal(tool.inputSchema.additionalProperties, false, `${tool.name} refuses unknown fields`);
        assert.equal(tool.outputSchema?.type, 'object', `${tool.name} has an output schema`);
        assert.ok(tool.annotations?.title, `${tool.name} has a title`);
      }
      const submitTool = byName.get('submit_approved_order');
      assert.deepEqual(Object.keys(submitTool?.inputSchema.properties ?? {}).sort(), [
        'approvalNo',
        'approvedAt',
        'operation',
        'order',
      ]);
      assert.deepEqual(Object.keys(submitTool?.outputSchema?.properties ?? {}).sort(), [
        'duplicate',
        'idempotencyKey',
        'orderNo',
        'status',
        'workflowId',
      ]);
      assert.deepEqual(
        { ...submitTool?.annotations, title: undefined },
        { title: undefined, readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      );
      assert.equal(byName.get('get_order_status')?.annotations?.readOnlyHint, true);
      assert.equal(byName.get('list_orders_awaiting_decision')?.annotations?.readOnlyHint, true);
      assert.equal(byName.get('decide_compensation')?.annotations?.destructiveHint, true);
      assert.equal(byName.get('decide_compensation')?.annotations?.idempotentHint, true);
      assert.equal(byName.get('decide_delivery')?.annotations?.idempotentHint, true);
    }
  });

  it('the same call made five times at once over stdio and HTTP writes one order, with one first submission', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCP5');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku);
    const clients = [stdio[0], stdio[1], await connectHttp(), await connectHttp(), await connectHttp()] as Client[];

    const answers = await Promise.all(clients.map((client) => submit(client, body)));

    for (const answer of answers) assert.equal(answer.isError, undefined, answer.text);
    const submissions = answers.map((answer) => answer.structured as unknown as Submission);
    assert.deepEqual(new Set(submissions.map((s) => s.idempotencyKey)), new Set([key]));
    assert.deepEqual(new Set(submissions.map((s) => s.workflowId)), new Set([orderWorkflowIdFor(key)]));
    assert.equal(submissions.filter((s) => !s.duplicate).length, 1, 'exactly one duplicate: false');
    await assertOneOrderWritten(service, key);
  });

  it('the first call answers with the order number of the order it wrote, over both transports', async () => {
    const sku = await createSku(service.prisma, 100);
    for (const client of [stdio[0] as Client, await connectHttp()]) {
      const approvalNo = uniqueApprovalNo('MCPFIRST');
      const key = idempotencyKeyFor(approvalNo, 'MAIN');

      const answer = await submit(client, approval(approvalNo, sku));

      assert.equal(answer.isError, undefined, answer.text);
      const row = await service.prisma.orderMain.findUnique({ where: { idempotentKey: key } });
      assert.ok(row, 'the order is written');
      assert.deepEqual(answer.structured, {
        idempotencyKey: key,
        workflowId: orderWorkflowIdFor(key),
        duplicate: false,
        status: 'SUBMITTED',
        orderNo: row.orderNo,
      });
      assert.match(answer.text, new RegExp(`Order ${row.orderNo} is written`));
    }
  });

  it('a client that gives up after a few milliseconds and calls again gets the same key, and one order is written', async () => {
    const sku = await createSku(service.prisma, 100);
    for (const client of [stdio[0] as Client, await connectHttp()]) {
      const approvalNo = uniqueApprovalNo('MCPGIVEUP');
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      const body = approval(approvalNo, sku);

      await assert.rejects(
        submit(client, body, { timeout: 5 }),
        (error) => error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout,
      );
      const again = await submit(client, body);

      assert.equal(again.isError, undefined, again.text);
      const submission = again.structured as unknown as Submission;
      assert.equal(submission.idempotencyKey, key);
      assert.equal(submission.workflowId, orderWorkflowIdFor(key));
      assert.ok(['RECEIVED', 'SUBMITTED'].includes(submission.status), `final or current status: ${submission.status}`);
      await assertOneOrderWritten(service, key);
    }
  });

  it('a retried call with a changed line is refused as a conflict: nothing written, the first order intact', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPCONFLICT');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const first = approval(approvalNo, sku);
    assert.equal((await submit(stdio[0] as Client, first)).isError, undefined);
    await assertOneOrderWritten(service, key);
    const record = await service.prisma.idempotencyRecord.findUniqueOrThrow({ where: { idempotentKey: key } });

    const changed: ApprovalBody = {
      ...first,
      order: { ...first.order, lines: [{ sku, quantity: 3, unitPrice: '10.50' }] },
    };
    for (const client of [stdio[1] as Client, await connectHttp()]) {
      const answer = await submit(client, changed);
      assert.equal(answer.isError, true);
      assert.match(answer.text, /Conflict/);
      assert.match(answer.text, /\[0\]\.quantity differ/, 'it says what differs');
      assert.match(answer.text, /Nothing was written/);
      assert.doesNotMatch(answer.text, /\n\s+at /, 'no stack trace');
    }

    assert.deepEqual(await orderedQuantities(service.prisma, key), [2], 'the first order is the one written');
    assert.equal(await orderCount(service.prisma, key), 1);
    const after = await service.prisma.idempotencyRecord.findUniqueOrThrow({ where: { idempotentKey: key } });
    assert.equal(after.fingerprint, record.fingerprint, 'the stored request is the first one');
  });

  it('an idempotencyKey or any other unknown argument is refused by the schema, and nothing is started', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPUNKNOWN');
    const body = approval(approvalNo, sku);
    const withKey = { ...body, idempotencyKey: 'APPROVAL:CHOSEN-BY-MODEL:MAIN' };
    const withNested = { ...body, order: { ...body.order, discount: '5' } };
    const badQuantity = { ...body, order: { ...body.order, lines: [{ sku, quantity: 0, unitPrice: '1' }] } };

    for (const client of [stdio[0] as Client, await connectHttp()]) {
      const keyAnswer = await submit(client, withKey);
      assert.equal(keyAnswer.isError, true);
      assert.match(keyAnswer.text, /\/idempotencyKey: unknown field: the idempotency key is computed/);
      assert.match(keyAnswer.text, /nothing was started/);

      const nested = await submit(client, withNested);
      assert.equal(nested.isError, true);
      assert.match(nested.text, /\/order\/discount: unknown field/);

      const invalid = await submit(client, badQuantity);
      assert.equal(invalid.isError, true);
      assert.match(invalid.text, /\/order\/lines\/0\/quantity: /, 'each bad field is named by its JSON pointer');
    }
    await assertNothingStarted(approvalNo);
  });

  it('a malformed unit price is an isError answer naming the field over both transports, never a protocol error', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPPRICE');
    const body = approval(approvalNo, sku);
    for (const client of [stdio[0] as Client, await connectHttp()]) {
      for (const unitPrice of ['12,50', '1e3', '-1', '', '1.23456', ' 1.00', '０.５']) {
        const answer = await submit(client, {
          ...body,
          order: { ...body.order, lines: [{ sku, quantity: 1, unitPrice }] },
        });
        assert.equal(answer.isError, true, JSON.stringify(unitPrice));
        assert.match(answer.text, /^The arguments were refused and nothing was started/);
        assert.match(
          answer.text,
          /- \/order\/lines\/0\/unitPrice: must be a decimal string/,
          JSON.stringify(unitPrice),
        );
      }
    }
    await assertNothingStarted(approvalNo);
  });

  it('/mcp answers 401 to a missing or wrong bearer token and runs no tool', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPAUTH');
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'submit_approved_order', arguments: approval(approvalNo, sku) },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const refusals = new Set<string>();
    for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', `Basic ${MCP_TOKEN}`, 'Bearer ']) {
      const response = await fetch(mcpUrl, {
        method: 'POST',
        headers: { ...headers, ...(authorization === undefined ? {} : { authorization }) },
        body: call,
      });
      assert.equal(response.status, 401, `authorization ${authorization ?? '(none)'}`);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="mcp"');
      refusals.add(await response.text());
    }
    // Whatever was wrong with the token, the answer is the same: it tells a guesser nothing.
    assert.equal(refusals.size, 1, [...refusals].join('\n'));
    await assert.rejects(connectHttp('wrong-token-0123456789abcdef'), /401|Unauthorized/);
    await assertNothingStarted(approvalNo);

    // The very same request with the token is carried out: the refusals above were the token's doing.
    const accepted = await fetch(mcpUrl, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${MCP_TOKEN}` },
      body: call,
    });
    assert.equal(accepted.status, 200);
    assert.match(await accepted.text(), /"idempotencyKey":"APPROVAL:/);
    await assertOneOrderWritten(service, idempotencyKeyFor(approvalNo, 'MAIN'));
  });

  /** One JSON-RPC request to /mcp with `token`, answered as JSON or as an event stream's message. */
  async function rpc(token: string, method: string, params: Record<string, unknown>): Promise<RpcAnswer> {
    const request = mcpRequest(token, method, params);
    const response = await fetch(mcpUrl, { method: request.method, headers: request.headers, body: request.payload });
    assert.equal(response.status, 200, `${method} with ${token === MCP_TOKEN ? 'the submit' : 'the operator'} token`);
    const text = await response.text();
    const data = text.startsWith('{') ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? text);
    return JSON.parse(data) as RpcAnswer;
  }

  it('the submit token lists no operator tool, and a call of one is refused exactly as a call of a tool that does not exist', async () => {
    const listed = async (token: string) =>
      ((await rpc(token, 'tools/list', {})).result as { tools: { name: string }[] }).tools.map((tool) => tool.name);
    assert.deepEqual((await listed(MCP_TOKEN)).sort(), [...SUBMIT_TOOLS].sort());
    assert.deepEqual((await listed(MCP_OPERATOR_TOKEN)).sort(), [...SUBMIT_TOOLS, ...OPERATOR_TOOLS].sort());

    // Empty arguments: a tool that exists refuses them as a tool result and runs nothing (the
    // awaiting list reads, changing nothing); one that does not is a protocol error naming the call.
    const unknownToolAnswer = (name: string) => ({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: `Unknown tool: ${name}` },
    });
    const toolName = fc.oneof(
      fc.constantFrom(...SUBMIT_TOOLS, ...OPERATOR_TOOLS),
      fc.stringMatching(/^[a-z][a-z_]{0,30}$/).filter((name) => ![...SUBMIT_TOOLS, ...OPERATOR_TOOLS].includes(name)),
    );
    await fc.assert(
      fc.asyncProperty(toolName, fc.constantFrom(MCP_TOKEN, MCP_OPERATOR_TOKEN), async (name, token) => {
        const offered = SUBMIT_TOOLS.includes(name) || (token === MCP_OPERATOR_TOKEN && OPERATOR_TOOLS.includes(name));
        const answer = await rpc(token, 'tools/call', { name, arguments: {} });
        if (offered) assert.ok(answer.result, `${name} is called: ${JSON.stringify(answer)}`);
        // To the submit token an operator tool is one more name it does not know: the same answer, word for word.
        else assert.deepEqual(answer, unknownToolAnswer(name));
      }),
      { numRuns: 40 },
    );
  });

  it('a decision over stdio is recorded as taken over stdio, under the name the caller gave', async () => {
    const sku = await createSku(service.prisma, 0);
    const key = idempotencyKeyFor(uniqueApprovalNo('MCPSTDIODECIDE'), 'MAIN');
    const client = stdio[1] as Client;
    await submit(client, approval(key.split(':')[1] as string, sku));
    await eventually(`${key} to wait for a decision`, async () => {
      const answer = await callTool(client, 'get_order_status', { idempotencyKey: key });
      return answer.structured?.status === 'COMPENSATING' ? answer : undefined;
    });

    const decided = await callTool(client, 'decide_compensation', {
      idempotencyKey: key,
      decision: 'abandon',
      decidedBy: 'stdio-operator',
    });

    assert.equal(decided.isError, undefined, decided.text);
    const record = await service.prisma.compensationRecord.findFirstOrThrow({ where: { idempotentKey: key } });
    assert.equal(record.decidedBy, 'mcp-stdio:stdio-operator');
  });

  it('/mcp refuses a browser origin MCP_ALLOWED_ORIGINS does not list with 403, before the token, and runs no tool', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPORIGIN');
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'submit_approved_order', arguments: approval(approvalNo, sku) },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    for (const [origin, authorization] of [
      ['http://evil.example', `Bearer ${MCP_TOKEN}`],
      [`http://127.0.0.1:${mcpUrl.port}`, `Bearer ${MCP_TOKEN}`],
      ['null', `Bearer ${MCP_TOKEN}`],
      // A page without the token hears 403 too: the token check's answer is never its to see.
      ['http://evil.example', 'Bearer wrong-token-0123456789abcdef'],
    ] as const) {
      const response = await fetch(mcpUrl, {
        method: 'POST',
        headers: { ...headers, origin, authorization },
        body: call,
      });
      assert.equal(response.status, 403, `Origin ${origin}`);
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(((await response.json()) as { type: string }).type, '/problems/origin-not-allowed');
    }
    await assertNothingStarted(approvalNo);

    // The listed origin (written with its default port or not, any case) and no Origin at all are served.
    const listed = await fetch(mcpUrl, {
      method: 'POST',
      headers: { ...headers, origin: 'HTTP://Agent.Example:8080', authorization: `Bearer ${MCP_TOKEN}` },
      body: call,
    });
    assert.equal(listed.status, 200);
    assert.match(await listed.text(), /"idempotencyKey":"APPROVAL:/);
    await assertOneOrderWritten(service, idempotencyKeyFor(approvalNo, 'MAIN'));
    const client = await connectHttp();
    assert.ok((await client.listTools()).tools.length > 0, 'a client that sends no Origin is served');
  });

  it('the same approval submitted by webhook and then by MCP, or the other way round, is one order', async () => {
    const sku = await createSku(service.prisma, 100);

    const webhookFirst = approval(uniqueApprovalNo('HOOKFIRST'), sku);
    const hookKey = idempotencyKeyFor(webhookFirst.approvalNo, 'MAIN');
    const delivered = await postApproval(service, webhookFirst);
    assert.equal(delivered.statusCode, 202);
    const viaMcp = await submit(stdio[0] as Client, webhookFirst);
    assert.deepEqual(
      { ...(viaMcp.structured as unknown as Submission), status: undefined, orderNo: undefined },
      {
        idempotencyKey: hookKey,
        workflowId: orderWorkflowIdFor(hookKey),
        duplicate: true,
        status: undefined,
        orderNo: undefined,
      },
    );
    await assertOneOrderWritten(service, hookKey);

    const mcpFirst = approval(uniqueApprovalNo('MCPFIRST'), sku, { operation: 'SUPPLEMENT' });
    const mcpKey = idempotencyKeyFor(mcpFirst.approvalNo, 'SUPPLEMENT');
    const submitted = (await submit(await connectHttp(), mcpFirst)).structured as unknown as Submission;
    assert.deepEqual([submitted.idempotencyKey, submitted.duplicate], [mcpKey, false]);
    const redelivered = await postApproval(service, mcpFirst);
    assert.equal(redelivered.statusCode, 200);
    assert.deepEqual(redelivered.json<{ idempotencyKey: string; duplicate: boolean }>(), {
      ...redelivered.json<object>(),
      idempotencyKey: mcpKey,
      duplicate: true,
    });
    await assertOneOrderWritten(service, mcpKey);
  });

  it('a write still in progress after MCP_SUBMIT_WAIT_MS is answered at once with the key, RECEIVED and what to call next, with progress on the way', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPSLOW');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    gate.hold(approvalNo);
    const callers = [stdio[1] as Client, await connectHttp()];
    const progress: Progress[][] = callers.map(() => []);
    let answers: ToolAnswer[];
    try {
      answers = await Promise.all(
        callers.map((client, index) =>
          submit(client, approval(approvalNo, sku), { onprogress: (update) => progress[index]?.push(update) }),
        ),
      );
    } finally {
      gate.release(approvalNo);
    }
    for (const [index, answer] of answers.entries()) {
      assert.equal(answer.isError, undefined, answer.text);
      const submission = answer.structured as unknown as Submission;
      assert.equal(submission.idempotencyKey, key);
      assert.equal(submission.status, 'RECEIVED');
      assert.equal(submission.orderNo, undefined);
      assert.match(answer.text, new RegExp(`get_order_status with idempotencyKey "${key}"`));
      const updates = progress[index] ?? [];
      assert.ok(updates.length >= 1, 'progress notifications were sent while it waited');
      for (const update of updates) {
        assert.equal(update.total, SUBMIT_WAIT_MS);
        assert.match(update.message ?? '', /^status RECEIVED/);
      }
      const values = updates.map((update) => update.progress);
      assert.deepEqual(
        values,
        [...values].sort((a, b) => a - b),
        'progress only grows',
      );
    }
    const status = await eventually(`${key} to be written`, async () => {
      const answer = await callTool(stdio[0] as Client, 'get_order_status', { idempotencyKey: key });
      return answer.structured?.status === 'SUBMITTED' ? answer : undefined;
    });
    assert.match(String(status.structured?.orderNo), /\S/);
    await assertOneOrderWritten(service, key);
  });

  it('get_order_status finds an order by its key or by approvalNo + operation, and says when none is known', async () => {
    const sku = await createSku(service.prisma, 100);
    const approvalNo = uniqueApprovalNo('MCPSTATUS');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    // A write that finishes within the wait is answered with its outcome, not a receipt.
    const submitted = (await submit(stdio[0] as Client, approval(approvalNo, sku))).structured as unknown as Submission;
    assert.equal(submitted.status, 'SUBMITTED');
    await assertOneOrderWritten(service, key);

    const byKey = await callTool(stdio[1] as Client, 'get_order_status', { idempotencyKey: key });
    const byApproval = await callTool(await connectHttp(), 'get_order_status', { approvalNo, operation: 'MAIN' });
    assert.deepEqual(byApproval.structured, byKey.structured);
    assert.equal(byKey.structured?.status, 'SUBMITTED');
    assert.equal(byKey.structured?.orderNo, submitted.orderNo);
    assert.equal(byKey.structured?.idempotencyKey, key);

    const unknown = await callTool(stdio[0] as Client, 'get_order_status', {
      approvalNo: uniqueApprovalNo(),
      operation: 'MAIN',
    });
    assert.equal(unknown.isError, true);
    assert.match(unknown.text, /No order is known/);
    const both = await callTool(stdio[0] as Client, 'get_order_status', { idempotencyKey: key, approvalNo });
    assert.equal(both.isError, true);
    assert.match(both.text, /either idempotencyKey or approvalNo \+ operation/);
  });

  it('an order that cannot be written waits in compensation; the operator tools list it and abandon it once', async () => {
    const sku = await createSku(service.prisma, 0);
    const approvalNo = uniqueApprovalNo('MCPNOSTOCK');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const body = approval(approvalNo, sku);
    const client = stdio[0] as Client;
    await submit(client, body);
    const compensating = await eventually(`${key} to wait for a decision`, async () => {
      const answer = await callTool(client, 'get_order_status', { idempotencyKey: key });
      return answer.structured?.status === 'COMPENSATING' ? answer : undefined;
    });
    assert.match(compensating.text, /waits for an operator/);

    const listed = await callTool(client, 'list_orders_awaiting_decision', { limit: 100 });
    const orders = (
      listed.structured as {
        orders: { idempotencyKey: string; reason: string; status: string; nextActions: string[] }[];
      }
    ).orders;
    const ours = orders.find((order) => order.idempotencyKey === key);
    assert.match(ours?.reason ?? '', /InsufficientStock/);
    assert.deepEqual([ours?.status, ours?.nextActions], ['COMPENSATING', ['resubmit', 'abandon']]);

    // A delivery decision is only for a written order whose delivery failed: refused, nothing done.
    const notDelivery = await callTool(client, 'decide_delivery', {
      idempotencyKey: key,
      decision: 'mark-handled',
      decidedBy: 'mcp-test-operator',
    });
    assert.equal(notDelivery.isError, true);
    assert.match(notDelivery.text, /^Nothing was decided: its status is COMPENSATING/);

    const notYet = await callTool(client, 'decide_compensation', {
      idempotencyKey: idempotencyKeyFor(uniqueApprovalNo(), 'MAIN'),
      decision: 'abandon',
      decidedBy: 'mcp-test-operator',
    });
    assert.equal(notYet.isError, true);
    assert.match(notYet.text, /no compensation is running/);

    const decided = await callTool(await connectHttp(MCP_OPERATOR_TOKEN), 'decide_compensation', {
      idempotencyKey: key,
      decision: 'abandon',
      decidedBy: 'mcp-test-operator',
    });
    assert.equal(decided.isError, undefined, decided.text);
    assert.deepEqual(decided.structured, {
      idempotencyKey: key,
      decision: 'abandon',
      status: 'COMPENSATED',
      outcome: 'ABANDONED',
    });
    const record = await service.prisma.compensationRecord.findFirstOrThrow({ where: { idempotentKey: key } });
    // The name is the caller's word; the door it came through is what the server checked.
    assert.deepEqual([record.decision, record.decidedBy], ['abandon', 'mcp-operator:mcp-test-operator']);

    const twice = await callTool(client, 'decide_compensation', {
      idempotencyKey: key,
      decision: 'resubmit',
      decidedBy: 'mcp-test-operator',
    });
    assert.equal(twice.isError, true);
    assert.match(twice.text, /^Nothing was decided/);

    // The operator's decision stands: submitting again writes nothing.
    const again = (await submit(client, body)).structured as unknown as Submission;
    assert.deepEqual([again.duplicate, again.status], [true, 'COMPENSATED']);
    assert.equal(await orderCount(service.prisma, key), 0);
  });

  describe('when Temporal cannot be reached', () => {
    let unreachable: ReturnType<typeof buildApp>;

    before(async () => {
      const temporal = createLazyClient({ address: `127.0.0.1:${await freePort()}`, namespace: 'default' });
      unreachable = buildApp({ config: service.config, prisma: service.prisma, temporal });
      await unreachable.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => unreachable.close());

    it('submit_approved_order says it is safe to call again, starts nothing, and the call again later succeeds', async () => {
      const address = unreachable.server.address();
      assert.ok(address && typeof address === 'object');
      const sku = await createSku(service.prisma, 100);
      const approvalNo = uniqueApprovalNo('MCPDOWN');
      const body = approval(approvalNo, sku);

      const answer = await submit(await connectHttp(MCP_TOKEN, new URL(`http://127.0.0.1:${address.port}/mcp`)), body);
      assert.equal(answer.isError, true);
      assert.match(answer.text, /safe to call submit_approved_order again with the same arguments/);
      const key = idempotencyKeyFor(approvalNo, 'MAIN');
      assert.equal(await workflowExists(service.temporal, orderWorkflowIdFor(key)), false, 'no workflow');
      assert.equal(await orderCount(service.prisma, key), 0, 'no order row');

      const later = (await submit(stdio[0] as Client, body)).structured as unknown as Submission;
      assert.equal(later.duplicate, false, 'the call again is the first submission');
    });
  });

  it('without MCP_TOKEN the HTTP transport is off: /mcp answers 404 and start-up says so', async () => {
    const lines: string[] = [];
    const { default: pino } = await import('pino');
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const config = loadConfig({ ...env, MCP_TOKEN: '', NODE_ENV: 'production' });
    const app = buildApp({ config, prisma: service.prisma, temporal: service.temporal, logger });
    try {
      const response = await app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { authorization: `Bearer ${MCP_TOKEN}` },
      });
      assert.equal(response.statusCode, 404);
      assert.ok(
        lines.some((line) => /MCP_TOKEN is not set: the MCP HTTP transport is off/.test(line)),
        'a start-up line says the transport is off',
      );
    } finally {
      await app.close();
    }
  });

  it('MCP_OPERATOR_TOOLS without MCP_OPERATOR_TOKEN offers no operator tool over HTTP, and start-up says so', async () => {
    const lines: string[] = [];
    const { default: pino } = await import('pino');
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const config = loadConfig({ ...env, MCP_OPERATOR_TOKEN: '' });
    const app = buildApp({ config, prisma: service.prisma, temporal: service.temporal, logger });
    try {
      const response = await app.inject(mcpRequest(MCP_TOKEN, 'tools/list', {}));
      assert.equal(response.statusCode, 200);
      for (const name of OPERATOR_TOOLS) assert.ok(!response.body.includes(name), `${name} is not listed`);
      assert.ok(response.body.includes('submit_approved_order'), response.body);
      assert.ok(
        lines.some((line) => /MCP_OPERATOR_TOOLS is set but MCP_OPERATOR_TOKEN is not/.test(line)),
        'a start-up line says why the operator tools are not offered',
      );
    } finally {
      await app.close();
    }
  });

  it('the stdio servers wrote nothing but protocol messages to stdout', () => {
    assert.deepEqual(
      stdioErrors.map((error) => error.message),
      [],
      `stderr of the stdio servers:\n${stdioStderr.join('')}`,
    );
  });
});
