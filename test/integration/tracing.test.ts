// One trace per approval: the webhook request's span, the workflow start, the order workflow, its
// activities (the write, a local activity, included), the POST and the broker publish of
// `order.created` share one trace id, the downstream receives it in `traceparent`, and every span
// carries the key. Our own spans are named and tagged after OpenTelemetry's HTTP and messaging
// conventions, and none shows the broker's password or the downstream URL's query token. Spans are
// kept in memory in place of the OTLP exporter; the stack is the real one.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient, InMemoryTransport, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import type { Channel } from 'amqplib';
import Fastify from 'fastify';
import pg from 'pg';
import { idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { eventIdFor } from '../../domain-node/order-event.js';
import { registerRequestSpans } from '../../edges/http/request-spans.js';
import { loadConfig } from '../../app/env.js';
import { createMcpServer } from '../../edges/mcp/server.js';
import { submitApprovedOrderTool } from '../../edges/mcp/tools/submit-approved-order.js';
import { installTracing, KEY_ATTRIBUTE, shutdownTracing } from '../../services/telemetry/tracing.js';
import { workflowCode } from '../../worker/workflow-bundle.js';
import { historyFromFile, replayHistories } from '../../worker/replay.js';
import {
  approvedFeishuOrder,
  type FakeFeishu,
  feishuApprovalPayload,
  feishuCallback,
  startFakeFeishu,
} from '../../tools/harness/fake-feishu.js';
import { startScriptedDownstream, type ScriptedDownstream } from '../../tools/harness/scripted-downstream.js';
import {
  approval,
  createSku,
  eventually,
  postApproval,
  postVendorCallback,
  stackEnv,
  startTestService,
  statusReaches,
  testEnv,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';
import { type OtlpReceiver, startOtlpReceiver } from '../../tools/harness/otlp-receiver.js';
import { apiProcess, processEnv, sendApproval } from '../../tools/harness/processes.js';
import { AMQP_URL, brokerForSuite } from '../../tools/harness/rabbitmq.js';

const SECRET = 'downstream-secret-0123456789';
const FEISHU_ENCRYPT_KEY = 'feishu-encrypt-key-0123456789';
const FEISHU_VERIFICATION_TOKEN = 'feishu-verification-token';
/** A credential in the downstream URL's query, as a receiver that authenticates with `?code=…` has one. */
const DOWNSTREAM_QUERY_TOKEN = 'downstream-query-token-0123456789';
/** The broker URL's password: no span may show it. */
const AMQP_PASSWORD = decodeURIComponent(new URL(AMQP_URL).password);

/** All of a span an exporter sends — name, attributes, events, status — as text to search. */
function spanText(span: ReadableSpan): string {
  const events = span.events.map((event) => ({ name: event.name, attributes: event.attributes }));
  return JSON.stringify({ name: span.name, attributes: span.attributes, events, status: span.status });
}

/** The spans of one trace, as a tree of names with the key attribute, for the test's output. */
function treeOf(spans: readonly ReadableSpan[]): string {
  const children = (parentId: string | undefined) =>
    spans
      .filter((span) => span.parentSpanId === parentId || (parentId === undefined && !hasParentIn(spans, span)))
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  const lines: string[] = [];
  const walk = (span: ReadableSpan, depth: number) => {
    lines.push(`${'  '.repeat(depth)}${span.name}  [${KEY_ATTRIBUTE}=${String(span.attributes[KEY_ATTRIBUTE])}]`);
    for (const child of children(span.spanContext().spanId)) walk(child, depth + 1);
  };
  for (const root of children(undefined)) walk(root, 0);
  return lines.join('\n');
}

function hasParentIn(spans: readonly ReadableSpan[], span: ReadableSpan): boolean {
  return spans.some((other) => other.spanContext().spanId === span.parentSpanId);
}

/** Whether `span` sits below `ancestor` in the same trace. */
function descendsFrom(spans: readonly ReadableSpan[], span: ReadableSpan, ancestor: ReadableSpan): boolean {
  let parentId = span.parentSpanId;
  while (parentId !== undefined) {
    if (parentId === ancestor.spanContext().spanId) return true;
    parentId = spans.find((other) => other.spanContext().spanId === parentId)?.parentSpanId;
  }
  return false;
}

describe('OpenTelemetry traces', () => {
  const exporter = new InMemorySpanExporter();
  // The events also go to the broker, on an exchange of this run, where a queue of the test takes them.
  const broker = brokerForSuite();
  const exchange = `orders-trace-${randomBytes(4).toString('hex')}`;
  let channel: Channel;
  let queue: string;
  let pool: pg.Pool;
  let downstream: ScriptedDownstream;
  let service: TestService;
  let receiver: OtlpReceiver;
  let feishu: FakeFeishu;
  let env: Record<string, string>;

  before(async () => {
    if (!broker.reachable()) return; // every test fails, saying why
    channel = await broker.connection().createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: true });
    ({ queue } = await channel.assertQueue('', { exclusive: true }));
    await channel.bindQueue(queue, exchange, 'order.created');
    pool = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
    downstream = await startScriptedDownstream(pool, SECRET, `consumer_${randomBytes(3).toString('hex')}`);
    receiver = await startOtlpReceiver();
    feishu = await startFakeFeishu();
    env = testEnv({
      // The Feishu connector, against a fake open API that holds the approval forms.
      OA_FORM_MAPPING: fileURLToPath(new URL('../../examples/oa-form-mapping.json', import.meta.url)),
      FEISHU_APP_ID: feishu.appId,
      FEISHU_APP_SECRET: feishu.appSecret,
      FEISHU_ENCRYPT_KEY,
      FEISHU_VERIFICATION_TOKEN,
      FEISHU_API_BASE_URL: feishu.url,
      // A token in the query, as some receivers take theirs: the POST's span shows it redacted.
      DOWNSTREAM_URL: `${downstream.url}?code=${DOWNSTREAM_QUERY_TOKEN}`,
      DOWNSTREAM_SECRET: SECRET,
      AMQP_URL,
      ORDER_EVENTS_EXCHANGE: exchange,
      // Turns tracing on; in this process the in-memory exporter below stands in for the OTLP one.
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    const config = loadConfig(env);
    // Before the clients and the worker: they take their interceptors from it.
    assert.ok(installTracing(config.tracing, 'test', new SimpleSpanProcessor(exporter)));
    service = await startTestService({ config });
  });
  after(async () => {
    if (!broker.reachable()) return;
    await service.stop();
    await shutdownTracing();
    await downstream.close();
    await receiver.close();
    await feishu.close();
    await pool.end();
    await channel.deleteExchange(exchange);
    await broker.connection().close();
  });

  /** The finished spans of the trace whose span `name` carries `key`, once its workflow run has ended. */
  async function traceOf(name: string, key: string) {
    return eventually(`the trace of ${key}, its workflow span ended`, () => {
      const spans = exporter.getFinishedSpans();
      const root = spans.find((span) => span.name === name && span.attributes[KEY_ATTRIBUTE] === key);
      if (!root) return Promise.resolve(undefined);
      const traceId = root.spanContext().traceId;
      const trace = spans.filter((span) => span.spanContext().traceId === traceId);
      const ran = trace.some((span) => span.name === 'RunWorkflow:orderWorkflow');
      return Promise.resolve(ran ? { root, trace } : undefined);
    });
  }

  /** Calls `submit_approved_order` for a new approval over `transport`, then closes the session. */
  async function submitThroughMcp(transport: Transport, approvalNo: string) {
    const client = new McpClient({ name: 'tracing-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await client.callTool({
        name: 'submit_approved_order',
        arguments: { ...approval(approvalNo, await createSku(service.prisma, 10)) },
      });
      assert.notEqual(result.isError, true, JSON.stringify(result.content));
    } finally {
      await client.close();
    }
  }

  /**
   * Once `key` is delivered: its trace, rooted at the span `rootName`, printed; each of `names` in it
   * below the root, and every span of it tagged with the key.
   */
  async function assertOneTraceTaggedWith(rootName: string, key: string, names: string[]) {
    await statusReaches(service, key, 'DELIVERED');
    const { root, trace } = await traceOf(rootName, key);
    console.log(`the trace of ${key}:\n${treeOf(trace)}`);
    assert.equal(root.parentSpanId, undefined, `${rootName} is the root of the trace`);
    for (const name of names) {
      const span = trace.find((candidate) => candidate.name === name);
      assert.ok(span, `${name} is in the trace`);
      assert.ok(descendsFrom(trace, span, root), `${name} descends from ${root.name}`);
    }
    for (const span of trace) {
      assert.equal(span.attributes[KEY_ATTRIBUTE], key, `${span.name} carries ${KEY_ATTRIBUTE}`);
    }
    return { root, trace };
  }

  it('one approval is one trace, from the webhook request to the downstream POST, every span tagged with its key', async () => {
    const approvalNo = uniqueApprovalNo('OTEL');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const response = await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)));
    assert.equal(response.statusCode, 202, response.body);
    const { root, trace } = await assertOneTraceTaggedWith('POST /webhooks/oa/approvals', key, [
      'StartWorkflow:orderWorkflow',
      'RunWorkflow:orderWorkflow',
      // The write: a local activity in the run's first workflow task, traced all the same.
      'StartActivity:writeOrder',
      'RunActivity:writeOrder',
      'RunActivity:deliverOrderEvent',
      'POST',
      `send ${exchange}`,
    ]);

    // The downstream POST: a client span named by its method alone (the URL is no template), the
    // URL redacted, the server by its host and port.
    const post = trace.find((span) => span.name === 'POST');
    assert.ok(post);
    assert.equal(post.kind, SpanKind.CLIENT);
    const { 'http.response.status_code': postStatus, ...postAttributes } = post.attributes;
    assert.ok(typeof postStatus === 'number' && postStatus >= 200 && postStatus < 300, `status ${String(postStatus)}`);
    assert.deepEqual(postAttributes, {
      [KEY_ATTRIBUTE]: key,
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'server.port': Number(new URL(downstream.url).port),
      'url.full': `${downstream.url}?code=REDACTED`,
    });
    const [arrival] = downstream.arrivals(key);
    assert.ok(arrival, 'the event reached the downstream');
    assert.equal(
      arrival.headers.traceparent,
      `00-${root.spanContext().traceId}-${post.spanContext().spanId}-01`,
      'the downstream POST carries the trace, with its own span as the parent',
    );
    // The broker publish: a producer span `send <exchange>`, the broker by its host and port.
    const publish = trace.find((span) => span.name === `send ${exchange}`);
    assert.ok(publish);
    assert.equal(publish.kind, SpanKind.PRODUCER);
    const amqp = new URL(AMQP_URL);
    assert.deepEqual(publish.attributes, {
      [KEY_ATTRIBUTE]: key,
      'messaging.system': 'rabbitmq',
      'messaging.operation.name': 'send',
      'messaging.operation.type': 'send',
      'messaging.destination.name': exchange,
      'messaging.rabbitmq.destination.routing_key': 'order.created',
      'messaging.message.id': eventIdFor(key),
      'server.address': amqp.hostname,
      'server.port': Number(amqp.port || 5672),
    });
    assert.notEqual(AMQP_PASSWORD, '', 'AMQP_URL carries a password to search for');
    for (const span of trace) {
      assert.ok(!spanText(span).includes(AMQP_PASSWORD), `${span.name} shows the broker's password`);
      assert.ok(!spanText(span).includes(DOWNSTREAM_QUERY_TOKEN), `${span.name} shows the downstream's query token`);
    }
    const message = await eventually('the message of the key on the queue', async () => {
      for (let got = await channel.get(queue, { noAck: true }); got; got = await channel.get(queue, { noAck: true })) {
        if (got.properties.headers?.['idempotency-key'] === key) return got;
      }
      return undefined;
    });
    assert.equal(
      String(message.properties.headers?.traceparent),
      `00-${root.spanContext().traceId}-${publish.spanContext().spanId}-01`,
      'the broker message carries the trace, with the publish span as the parent',
    );
  });

  it('a POST the downstream refused is a failed client span with the status as its error.type, and the retry a span of its own', async () => {
    const approvalNo = uniqueApprovalNo('OTEL503');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    downstream.script(key, [{ kind: 'status', status: 503 }]);
    const response = await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)));
    assert.equal(response.statusCode, 202, response.body);
    const { trace } = await assertOneTraceTaggedWith('POST /webhooks/oa/approvals', key, ['POST']);
    const posts = trace.filter((span) => span.name === 'POST');
    const refused = posts.find((span) => span.attributes['http.response.status_code'] === 503);
    assert.ok(refused, `a POST span with status 503 among ${posts.length}`);
    assert.equal(refused.kind, SpanKind.CLIENT);
    assert.equal(refused.attributes['error.type'], '503');
    assert.equal(refused.status.code, SpanStatusCode.ERROR);
    const delivered = posts.find((span) => span !== refused);
    assert.ok(delivered, "the retry's POST is a span of its own");
    assert.equal(delivered.attributes['error.type'], undefined);
    assert.notEqual(delivered.status.code, SpanStatusCode.ERROR);
  });

  /** The server span of the request to `path`, once it has ended. */
  function serverSpanAt(path: string) {
    return eventually(`the request span of ${path}`, () =>
      Promise.resolve(
        exporter
          .getFinishedSpans()
          .find((span) => span.kind === SpanKind.SERVER && span.attributes['url.path'] === path),
      ),
    );
  }

  it('a request no route took is a span named by its method alone, with no query in any attribute; a matched route is named by its template', async () => {
    const token = `query-token-${randomBytes(6).toString('hex')}`;
    const unknownPath = `/no/such/route/${randomBytes(4).toString('hex')}`;
    const unmatched = await service.app.inject({ method: 'GET', url: `${unknownPath}?access_token=${token}` });
    assert.equal(unmatched.statusCode, 404, unmatched.body);
    const noRoute = await serverSpanAt(unknownPath);
    assert.equal(noRoute.name, 'GET');
    assert.deepEqual(noRoute.attributes, {
      'http.request.method': 'GET',
      'url.scheme': 'http',
      'url.path': unknownPath,
      'http.response.status_code': 404,
    });

    // An order that does not exist: the route answers 404, and it is still the route's span.
    const orderPath = `/orders/${encodeURIComponent(idempotencyKeyFor(uniqueApprovalNo('OTELGET'), 'MAIN'))}`;
    const matched = await service.app.inject({ method: 'GET', url: `${orderPath}?access_token=${token}` });
    assert.equal(matched.statusCode, 404, matched.body);
    const routed = await serverSpanAt(orderPath);
    assert.equal(routed.name, 'GET /orders/:key');
    assert.deepEqual(routed.attributes, {
      'http.request.method': 'GET',
      'url.scheme': 'http',
      'url.path': orderPath,
      'http.route': '/orders/:key',
      'http.response.status_code': 404,
    });
    for (const span of [noRoute, routed]) {
      assert.ok(!spanText(span).includes(token), `${span.name} shows the query's token`);
      assert.ok(!spanText(span).includes('access_token'), `${span.name} shows the query`);
    }
  });

  it('a request that fails with a 5xx is a failed server span with the status as its error.type', async () => {
    // A route of the test's own that fails every time: the service's routes fail only when a part
    // under them does.
    const app = Fastify();
    registerRequestSpans(app);
    app.get('/fails/:id', () => Promise.reject(new Error('the handler failed')));
    try {
      const answer = await app.inject({ method: 'GET', url: '/fails/1' });
      assert.equal(answer.statusCode, 500, answer.body);
    } finally {
      await app.close();
    }
    const failed = await serverSpanAt('/fails/1');
    assert.equal(failed.name, 'GET /fails/:id');
    assert.equal(failed.attributes['http.response.status_code'], 500);
    assert.equal(failed.attributes['error.type'], '500');
    assert.equal(failed.status.code, SpanStatusCode.ERROR);
  });

  it('a Feishu approval event is one trace too, from its callback through the form read to the downstream POST', async () => {
    const id = uniqueApprovalNo('OTELFS');
    const key = idempotencyKeyFor(id, 'MAIN');
    feishu.register(id, approvedFeishuOrder(await createSku(service.prisma, 10), 2, 10.5));
    const callback = feishuCallback(feishuApprovalPayload({ instanceCode: id, status: 'APPROVED' }), {
      encryptKey: FEISHU_ENCRYPT_KEY,
      token: FEISHU_VERIFICATION_TOKEN,
      sign: true,
    });
    const response = await postVendorCallback(service, 'feishu', callback);
    assert.equal(response.statusCode, 200, response.body);
    await assertOneTraceTaggedWith('POST /webhooks/feishu', key, [
      'StartWorkflow:orderWorkflow',
      'RunWorkflow:orderWorkflow',
      'RunActivity:readApprovalForm',
      'RunActivity:writeOrder',
      'POST',
    ]);
  });

  it("a webhook request that carries the OA's traceparent continues the OA's trace", async () => {
    const approvalNo = uniqueApprovalNo('OTELOA');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const [traceId, spanId] = [randomBytes(16).toString('hex'), randomBytes(8).toString('hex')];
    const response = await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)), {
      traceparent: `00-${traceId}-${spanId}-01`,
    });
    assert.equal(response.statusCode, 202, response.body);
    const { root } = await traceOf('POST /webhooks/oa/approvals', key);
    assert.equal(root.spanContext().traceId, traceId);
    assert.equal(root.parentSpanId, spanId);
  });

  it('an MCP tool call is a trace of its own, tagged with its key down to the write', async () => {
    const approvalNo = uniqueApprovalNo('OTELMCP');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
    // A tools/call: the client's revision changes nothing in it.
    const server = createMcpServer([submitApprovedOrderTool({ ...service, log: quiet })]);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    await submitThroughMcp(clientSide, approvalNo);
    await server.close();
    // The tool call starts a trace of its own: its span is the root.
    await assertOneTraceTaggedWith('MCP tools/call submit_approved_order', key, [
      // The tool waits for the write: its start carries the writeOutcome update.
      'UpdateWithStartWorkflow:writeOutcome',
      'RunWorkflow:orderWorkflow',
      'RunActivity:writeOrder',
      'POST',
    ]);
  });

  it('the recorded histories replay with the tracing interceptors in the workflow bundle: tracing may be turned on under running workflows', async () => {
    const bundleDir = process.env.WORKFLOW_BUNDLE_DIR;
    const bundle = await workflowCode({ traced: true, dir: bundleDir });
    const code = 'code' in bundle ? bundle.code : readFileSync(bundle.codePath, 'utf8');
    assert.ok(code.includes('@temporalio/interceptor-workflow'), 'the bundle holds the tracing interceptors');
    const dir = fileURLToPath(new URL('../replay/histories/', import.meta.url));
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.json'));
    assert.ok(files.length > 0, 'replay fixtures to replay');
    const outcomes = await replayHistories(await Promise.all(files.map((name) => historyFromFile(`${dir}${name}`))), {
      bundleDir,
    });
    assert.deepEqual(
      outcomes.filter((outcome) => !outcome.ok),
      [],
    );
    assert.equal(outcomes.length, files.length);
  });

  it('a process started with OTEL_EXPORTER_OTLP_ENDPOINT exports over OTLP, and its trace goes on in the worker', async () => {
    const approvalNo = uniqueApprovalNo('OTELSTDIO');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    // The orders-mcp bin as an agent starts it: the environment is its only configuration.
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [fileURLToPath(new URL('../../bin/orders-mcp.mjs', import.meta.url))],
      env: { ...env, PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn' },
      stderr: 'pipe',
    });
    const stderr: string[] = [];
    transport.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk.toString('utf8')));
    // Closing the session ends the server, which exports what its batch still holds on the way out.
    await submitThroughMcp(transport, approvalNo);
    const exported = await eventually('the stdio server to export its tool call span', () =>
      Promise.resolve(
        receiver
          .spans()
          .find(
            (span) => span.name === 'MCP tools/call submit_approved_order' && span.attributes[KEY_ATTRIBUTE] === key,
          ),
      ),
    );
    assert.equal(exported.serviceName, 'orders-mcp', stderr.join(''));
    assert.equal(exported.parentSpanId, undefined, 'the tool call is the root of its trace');
    const start = receiver.spans().find((span) => span.name === 'UpdateWithStartWorkflow:writeOutcome');
    assert.ok(start && start.traceId === exported.traceId, 'the start is exported from the same process, same trace');
    // The worker runs in this test process: its spans joined the trace the stdio server began.
    await statusReaches(service, key, 'DELIVERED');
    const { root: run, trace } = await traceOf('RunWorkflow:orderWorkflow', key);
    assert.equal(run.spanContext().traceId, exported.traceId);
    assert.equal(run.parentSpanId, start.spanId, 'the run is the child of the start made in the other process');
    for (const span of trace) assert.equal(span.attributes[KEY_ATTRIBUTE], key, `${span.name} carries the key`);
    console.log(
      `exported by orders-mcp over OTLP: ${receiver
        .spans()
        .filter((span) => span.traceId === exported.traceId)
        .map((span) => span.name)
        .join(', ')}`,
    );
  });

  it('an API hosting the worker exports the whole trace of an approval over OTLP, flushed on SIGTERM', async () => {
    const api = await apiProcess(
      'api-traced',
      processEnv(service.config, {
        API_HOSTS_WORKER: '1',
        // A task queue of its own: only the API's worker runs this approval.
        TEMPORAL_TASK_QUEUE: `traced-${randomBytes(4).toString('hex')}`,
        SHUTDOWN_DRAIN_MS: '0',
        DOWNSTREAM_URL: downstream.url,
        DOWNSTREAM_SECRET: SECRET,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      }),
    );
    await api.start();
    const approvalNo = uniqueApprovalNo('OTELAPI');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    try {
      const answer = await sendApproval(api.url, approval(approvalNo, await createSku(service.prisma, 10)));
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      await service.temporal.workflow.getHandle(orderWorkflowIdFor(key)).result();
    } finally {
      await api.kill('SIGTERM');
    }
    assert.deepEqual(api.exit(), { code: 0, signal: null });
    const root = receiver
      .spans()
      .find((span) => span.name === 'POST /webhooks/oa/approvals' && span.attributes[KEY_ATTRIBUTE] === key);
    assert.ok(root, 'the request span was exported');
    const trace = receiver.spans().filter((span) => span.traceId === root.traceId);
    console.log(`exported by the API hosting the worker: ${trace.map((span) => span.name).join(', ')}`);
    for (const name of ['StartWorkflow:orderWorkflow', 'RunWorkflow:orderWorkflow', 'RunActivity:writeOrder', 'POST']) {
      assert.ok(
        trace.some((span) => span.name === name),
        `${name} was exported in the trace`,
      );
    }
    for (const span of trace) {
      assert.equal(span.serviceName, 'orders-api', span.name);
      assert.equal(span.attributes[KEY_ATTRIBUTE], key, span.name);
    }
    const traceparent = downstream.arrivals(key)[0]?.headers.traceparent;
    assert.ok(typeof traceparent === 'string' && traceparent.startsWith(`00-${root.traceId}-`), String(traceparent));
  });
});
