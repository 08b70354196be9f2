// No secret in any output: the API, the worker and `orders-mcp` run as processes with every secret
// set to a value the test recognises — the database password and the downstream's query token
// included — and trace to a local OTLP receiver. Approvals arrive through every door (the signed
// webhook, Feishu's callback and its long connection, DingTalk's callback and its Stream
// connection, WeCom, MCP over HTTP and stdio), refused ones too, and the connections' tickets are
// searched for as well; the downstream answers
// 500 and the broker is unreachable, so the error paths run. Then every log line, span attribute
// and event, HTTP answer (body and headers) and the /metrics text is searched for each secret.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Context } from '@temporalio/activity';
import fc from 'fast-check';
import pg from 'pg';
import { toActivityFailure } from '../../activities/activity-failure.js';
import { TABLE } from '../../domain/error-classification.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { loadConfig } from '../../app/env.js';
import { claimRecord } from '../../services/db/idempotency-records.js';
import { readOrderStatus } from '../../submission/order-status-view.js';
import type { OrderWorkflowInput } from '../../workflows/definitions.js';
import { signBody } from '../../domain-node/signature.js';
import { redactUrl } from '../../domain-node/redact-url.js';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import {
  approvedDingTalkOrder,
  dingtalkApprovalPayload,
  dingtalkCallback,
  dingtalkStreamApproval,
  type FakeDingTalk,
  randomDingTalkAesKey,
  startFakeDingTalk,
} from '../../tools/harness/fake-dingtalk.js';
import {
  approvedFeishuOrder,
  type FakeFeishu,
  feishuApprovalPayload,
  feishuApprovalPayloadV2,
  feishuCallback,
  startFakeFeishu,
} from '../../tools/harness/fake-feishu.js';
import {
  approvedWeComOrder,
  type FakeWeCom,
  randomWeComAesKey,
  startFakeWeCom,
  wecomApprovalXml,
  wecomCallback,
  wecomUrlCheck,
} from '../../tools/harness/fake-wecom.js';
import { freePort } from '../../tools/harness/ports.js';
import { sentAsThePlatformDoes } from '../../tools/harness/platform-resend.js';
import { type OtlpReceiver, startOtlpReceiver } from '../../tools/harness/otlp-receiver.js';
import { type ApiProcess, apiProcess, workerProcess } from '../../tools/harness/processes.js';
import { MCP_BIN, mcpRequest } from '../../tools/harness/mcp-clients.js';
import { type RawError, rawErrorText, TOLD_TYPES } from '../../tools/harness/raw-errors.js';
import {
  approval,
  createSku,
  eventually,
  exampleMappingFile,
  getOrder,
  type OrderView,
  postApproval,
  stackEnv,
  startTestService,
  statusReaches,
  testEnv,
  type TestService,
  uniqueApprovalNo,
  until,
} from '../../tools/harness/service.js';

const FEISHU_PURCHASE = 'PURCHASE-ORDER-APPROVAL';
const DINGTALK_PURCHASE = 'PROC-FAKE';
const WECOM_PURCHASE = 'TEMPLATE-FAKE';

/** What the downstream answers its 500 with: a host, an address, an egress IP and form values, as real ones do. */
const DOWNSTREAM_INTERNAL_PARTS = ['erp-db-7.corp.internal', '10.20.30.40', '203.0.113.77', 'CUST-PRIVATE-42'];
const DOWNSTREAM_INTERNALS =
  `the ERP's database ${DOWNSTREAM_INTERNAL_PARTS[0]} (${DOWNSTREAM_INTERNAL_PARTS[1]}) is down; errmsg: egress ` +
  `${DOWNSTREAM_INTERNAL_PARTS[2]} not allowed; form: customer=${DOWNSTREAM_INTERNAL_PARTS[3]}`;

/** A value no output of the service has any business showing, recognisable wherever it lands. */
const probe = (name: string) => `probe-${name}-${randomBytes(6).toString('hex')}`;

/** Every output the test collected: where it came from and its text. */
interface Output {
  source: string;
  text: string;
}

/** The secrets some output shows, as configured or URL-encoded, with where. */
function leaks(secrets: Record<string, string>, outputs: readonly Output[]): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(secrets)) {
    const forms = new Set([value, encodeURIComponent(value)]);
    for (const { source, text } of outputs) {
      if ([...forms].some((form) => text.includes(form))) found.push(`${name} in ${source}`);
    }
  }
  return found;
}

/** What each HTTP answer looked like, headers and body, for the search. */
interface Answer {
  request: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

describe('no secret in any output', () => {
  const admin = new pg.Pool({ connectionString: stackEnv().databaseUrl, max: 2 });
  const role = `leak_probe_${randomBytes(4).toString('hex')}`;
  const secrets: Record<string, string> = {
    WEBHOOK_SECRET: probe('webhook-secret'),
    WEBHOOK_SECRET_PREVIOUS: probe('webhook-previous'),
    MCP_TOKEN: probe('mcp-token'),
    MCP_TOKEN_PREVIOUS: probe('mcp-token-previous'),
    MCP_OPERATOR_TOKEN: probe('mcp-operator-token'),
    STATUS_TOKEN: probe('status-token'),
    DOWNSTREAM_SECRET: probe('downstream-secret'),
    DOWNSTREAM_SECRET_PREVIOUS: probe('downstream-previous'),
    FEISHU_ENCRYPT_KEY: probe('feishu-encrypt-key'),
    FEISHU_VERIFICATION_TOKEN: probe('feishu-token'),
    DINGTALK_AES_KEY: randomDingTalkAesKey(),
    DINGTALK_TOKEN: probe('dingtalk-token'),
    WECOM_ENCODING_AES_KEY: randomWeComAesKey(),
    WECOM_TOKEN: probe('wecom-token'),
    'the DATABASE_URL password': probe('db-password'),
    'the AMQP_URL password': probe('amqp-password'),
    'the OTLP endpoint password': probe('otlp-password'),
    'the DOWNSTREAM_URL query token': probe('downstream-code'),
  };
  const answers: Answer[] = [];
  const mcpStderr: string[] = [];
  let receiver: OtlpReceiver;
  let downstream: http.Server;
  let downstreamPosts = 0;
  let downstreamUrl: string;
  let feishu: FakeFeishu;
  let dingtalk: FakeDingTalk;
  let wecom: FakeWeCom;
  let api: ApiProcess;
  let worker: ManagedProcess;
  let metricsText: string[];
  let statusOverMcp: string;
  let client: McpClient | undefined;
  const keys: string[] = [];

  /** Sends a request to the API and keeps its answer for the search. */
  async function send(what: string, url: string, init: RequestInit = {}): Promise<Answer> {
    const response = await fetch(url, init);
    const answer: Answer = {
      request: what,
      status: response.status,
      headers: Object.fromEntries(response.headers),
      body: await response.text(),
    };
    answers.push(answer);
    return answer;
  }

  // A callback answered 503 on a busy machine is sent again, as the OA system or the vendor does.
  const callbackAnswer = (answer: Answer) => ({ status: answer.status, retryAfter: answer.headers['retry-after'] });

  async function createSku(): Promise<string> {
    const sku = `SKU-LEAK-${randomBytes(5).toString('hex')}`;
    await admin.query('INSERT INTO inventory (sku, on_hand, updated_at) VALUES ($1, 100, now())', [sku]);
    return sku;
  }

  before(async () => {
    // A login of its own whose password the test knows: the processes reach PostgreSQL with it.
    await admin.query(`CREATE ROLE ${role} LOGIN SUPERUSER PASSWORD '${secrets['the DATABASE_URL password']}'`);
    const databaseUrl = new URL(stackEnv().databaseUrl);
    databaseUrl.username = role;
    databaseUrl.password = secrets['the DATABASE_URL password'] as string;

    // A downstream that fails every delivery: the delivery's error path runs, up to DELIVERY_FAILED.
    downstream = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        downstreamPosts += 1;
        response.writeHead(500, { 'content-type': 'text/plain' }).end(DOWNSTREAM_INTERNALS);
      });
    });
    await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve));
    downstreamUrl =
      `http://127.0.0.1:${(downstream.address() as AddressInfo).port}/hook` +
      `?code=${secrets['the DOWNSTREAM_URL query token']}&tenant=acme`;

    receiver = await startOtlpReceiver();
    const otlpEndpoint = new URL(receiver.url);
    otlpEndpoint.username = 'collector';
    otlpEndpoint.password = secrets['the OTLP endpoint password'] as string;

    feishu = await startFakeFeishu();
    dingtalk = await startFakeDingTalk();
    secrets.FEISHU_APP_SECRET = feishu.appSecret;
    secrets.DINGTALK_APP_SECRET = dingtalk.appSecret;
    wecom = await startFakeWeCom();
    secrets.WECOM_AGENT_SECRET = wecom.agentSecret;
    // The example mapping, for the purchase-order definitions the callbacks below name.
    const mappingFile = exampleMappingFile({
      feishu: [FEISHU_PURCHASE],
      dingtalk: [DINGTALK_PURCHASE],
      wecom: [WECOM_PURCHASE],
    });

    const [apiMetrics, workerMetrics, workerProbes, closedPort] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      // Every line the processes have, not only the warnings.
      LOG_LEVEL: 'debug',
      DATABASE_URL: databaseUrl.href,
      TEMPORAL_ADDRESS: stackEnv().temporalAddress,
      TEMPORAL_TASK_QUEUE: `leaks-${randomBytes(4).toString('hex')}`,
      WEBHOOK_SECRET: secrets.WEBHOOK_SECRET,
      WEBHOOK_SECRET_PREVIOUS: secrets.WEBHOOK_SECRET_PREVIOUS,
      MCP_TOKEN: secrets.MCP_TOKEN,
      MCP_TOKEN_PREVIOUS: secrets.MCP_TOKEN_PREVIOUS,
      MCP_OPERATOR_TOKEN: secrets.MCP_OPERATOR_TOKEN,
      STATUS_TOKEN: secrets.STATUS_TOKEN,
      DOWNSTREAM_URL: downstreamUrl,
      DOWNSTREAM_SECRET: secrets.DOWNSTREAM_SECRET,
      DOWNSTREAM_SECRET_PREVIOUS: secrets.DOWNSTREAM_SECRET_PREVIOUS,
      DOWNSTREAM_TIMEOUT_MS: '1000',
      // A broker that is not there: every publish fails, with the broker's address in the error.
      AMQP_URL: `amqp://orders:${secrets['the AMQP_URL password']}@127.0.0.1:${closedPort}/orders`,
      AMQP_CONFIRM_TIMEOUT_MS: '1000',
      OA_FORM_MAPPING: mappingFile,
      FEISHU_APP_ID: feishu.appId,
      FEISHU_APP_SECRET: feishu.appSecret,
      FEISHU_ENCRYPT_KEY: secrets.FEISHU_ENCRYPT_KEY,
      FEISHU_VERIFICATION_TOKEN: secrets.FEISHU_VERIFICATION_TOKEN,
      FEISHU_API_BASE_URL: feishu.url,
      // Both Feishu doors: the callback (its keys are set) and the long connection the API opens.
      FEISHU_EVENT_MODE: 'long-connection',
      DINGTALK_APP_KEY: dingtalk.appKey,
      DINGTALK_APP_SECRET: dingtalk.appSecret,
      DINGTALK_AES_KEY: secrets.DINGTALK_AES_KEY,
      DINGTALK_TOKEN: secrets.DINGTALK_TOKEN,
      DINGTALK_API_BASE_URL: dingtalk.url,
      // The Stream connection too, beside the callback: its endpoint answer carries a ticket.
      DINGTALK_EVENT_MODE: 'stream',
      WECOM_CORP_ID: wecom.corpId,
      WECOM_AGENT_SECRET: wecom.agentSecret,
      WECOM_TOKEN: secrets.WECOM_TOKEN,
      WECOM_ENCODING_AES_KEY: secrets.WECOM_ENCODING_AES_KEY,
      WECOM_API_BASE_URL: wecom.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint.href,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      RETRY_MAX_ATTEMPTS: '2',
      RETRY_INITIAL_INTERVAL_MS: '100',
      RETRY_MAX_INTERVAL_MS: '200',
      DB_STATEMENT_TIMEOUT_MS: '1500',
      ACTIVITY_START_TO_CLOSE_MS: '4000',
      ACTIVITY_SCHEDULE_TO_CLOSE_MS: '30000',
      COMPENSATION_DECISION_TIMEOUT_MS: '120000',
      MCP_SUBMIT_WAIT_MS: '6000',
      SHUTDOWN_DRAIN_MS: '0',
    };
    api = await apiProcess('api-leaks', { ...env, METRICS_PORT: String(apiMetrics) });
    worker = workerProcess('worker-leaks', {
      ...env,
      METRICS_PORT: String(workerMetrics),
      WORKER_HEALTH_PORT: String(workerProbes),
    });
    await Promise.all([api.start(), worker.start()]);

    // The signed webhook: signed with the secret, with the previous one (a rotation), and wrongly.
    for (const secret of [secrets.WEBHOOK_SECRET, secrets.WEBHOOK_SECRET_PREVIOUS, probe('not-the-secret')]) {
      const approvalNo = uniqueApprovalNo('LEAK');
      const body = JSON.stringify(approval(approvalNo, await createSku()));
      const timestamp = String(Math.floor(Date.now() / 1000));
      const statuses = await sentAsThePlatformDoes(() =>
        send('webhook', `${api.url}/webhooks/oa/approvals`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-oa-timestamp': timestamp,
            'x-oa-signature': signBody(secret as string, timestamp, body),
          },
          body,
        }).then(callbackAnswer),
      );
      // Taken: 202 at once, or, sent again after a 503 that had already recorded it, 200 or 201.
      if ([200, 201, 202].includes(statuses.at(-1) ?? 0)) keys.push(idempotencyKeyFor(approvalNo, 'MAIN'));
    }

    // Feishu: an approval event signed and encrypted with the console's key, and one that is not.
    const feishuId = uniqueApprovalNo('LEAKFS');
    feishu.register(feishuId, approvedFeishuOrder(await createSku(), 2, 10.5));
    for (const encryptKey of [secrets.FEISHU_ENCRYPT_KEY as string, probe('wrong-encrypt-key')]) {
      await sentAsThePlatformDoes(() => {
        const callback = feishuCallback(
          feishuApprovalPayload({ instanceCode: feishuId, status: 'APPROVED', approvalCode: FEISHU_PURCHASE }),
          { encryptKey, token: secrets.FEISHU_VERIFICATION_TOKEN as string, sign: true },
        );
        return send('feishu callback', `${api.url}/webhooks/feishu`, {
          method: 'POST',
          headers: callback.headers,
          body: callback.rawBody,
        }).then(callbackAnswer);
      });
    }
    keys.push(idempotencyKeyFor(feishuId, 'MAIN'));

    // Feishu's long connection: an approval pushed over it, then the connection dropped, so the
    // API discovers the endpoint again and a second ticket is issued.
    await feishu.longConnection.connected(1);
    const feishuWsId = uniqueApprovalNo('LEAKFSWS');
    feishu.register(feishuWsId, approvedFeishuOrder(await createSku(), 2, 10.5));
    await feishu.longConnection.acknowledged(
      await feishu.longConnection.push(
        feishuApprovalPayloadV2({ instanceCode: feishuWsId, status: 'APPROVED', approvalCode: FEISHU_PURCHASE }),
      ),
    );
    keys.push(idempotencyKeyFor(feishuWsId, 'MAIN'));
    feishu.longConnection.dropConnections();
    await eventually('a second endpoint discovery', () =>
      Promise.resolve(feishu.longConnection.issuedUrls().length >= 2 || undefined),
    );
    await feishu.longConnection.connected(1);

    // DingTalk: an approval event signed with the token, and one signed with another.
    const dingtalkId = uniqueApprovalNo('LEAKDT');
    dingtalk.register(dingtalkId, approvedDingTalkOrder(await createSku(), 2, 10.5, 'CUST-DT-1'));
    for (const token of [secrets.DINGTALK_TOKEN as string, probe('wrong-dingtalk-token')]) {
      await sentAsThePlatformDoes(() => {
        const callback = dingtalkCallback(
          dingtalkApprovalPayload({ processInstanceId: dingtalkId, type: 'finish', result: 'agree' }),
          { aesKey: secrets.DINGTALK_AES_KEY as string, token, appKey: dingtalk.appKey },
        );
        return send(
          'dingtalk callback',
          `${api.url}/webhooks/dingtalk?${new URLSearchParams(callback.query).toString()}`,
          {
            method: 'POST',
            headers: callback.headers,
            body: callback.rawBody,
          },
        ).then(callbackAnswer);
      });
    }
    keys.push(idempotencyKeyFor(dingtalkId, 'MAIN'));

    // DingTalk's Stream: an approval pushed over the connection, which is then cut, so the API
    // asks for an endpoint again and opens another with a new ticket.
    const streamId = uniqueApprovalNo('LEAKDTS');
    dingtalk.register(streamId, approvedDingTalkOrder(await createSku(), 2, 10.5, 'CUST-DT-2'));
    await until('the Stream connected', () => dingtalk.stream.openConnections() > 0);
    const streamEvent = dingtalk.stream.push(
      dingtalkStreamApproval({ processInstanceId: streamId, type: 'finish', result: 'agree' }),
    );
    await until('the Stream event acknowledged', () =>
      dingtalk.stream.acks(streamEvent).some((ack) => ack.status === 'SUCCESS'),
    );
    const opened = dingtalk.stream.connectionsOpened();
    dingtalk.stream.cutConnections();
    await until('the Stream connected again', () => dingtalk.stream.connectionsOpened() > opened);
    keys.push(idempotencyKeyFor(streamId, 'MAIN'));

    // WeCom: the URL check, an approval event signed with the token, and one signed with another.
    // The reader's token request carries the agent secret in its query, and its reads the token.
    const wecomId = uniqueApprovalNo('LEAKWC');
    wecom.register(wecomId, approvedWeComOrder(await createSku(), 2, 10.5));
    // The reader's error paths too: a token refused (refreshed once), then a 502 (retried).
    wecom.script(wecomId, [{ kind: 'token-invalid' }, { kind: 'status', status: 502 }]);
    const wecomUrl = (query: Record<string, string>) =>
      `${api.url}/webhooks/wecom?${new URLSearchParams(query).toString()}`;
    const check = wecomUrlCheck('leak-echo', {
      token: secrets.WECOM_TOKEN as string,
      encodingAesKey: secrets.WECOM_ENCODING_AES_KEY as string,
      corpId: wecom.corpId,
    });
    await send('wecom URL check', wecomUrl(check.query));
    for (const token of [secrets.WECOM_TOKEN as string, probe('wrong-wecom-token')]) {
      await sentAsThePlatformDoes(() => {
        const callback = wecomCallback(
          wecomApprovalXml({ corpId: wecom.corpId, spNo: wecomId, spStatus: 2, templateId: WECOM_PURCHASE }),
          { token, encodingAesKey: secrets.WECOM_ENCODING_AES_KEY as string, corpId: wecom.corpId },
        );
        return send('wecom callback', wecomUrl(callback.query), {
          method: 'POST',
          headers: callback.headers,
          body: callback.rawBody,
        }).then(callbackAnswer);
      });
    }
    keys.push(idempotencyKeyFor(wecomId, 'MAIN'));

    // MCP over HTTP: with the token, with a wrong one, and from a browser origin not allowed.
    const mcpApprovalNo = uniqueApprovalNo('LEAKMCP');
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'submit_approved_order', arguments: approval(mcpApprovalNo, await createSku()) },
    });
    const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    for (const extra of [
      { authorization: `Bearer ${secrets.MCP_TOKEN}` } as Record<string, string>,
      { authorization: `Bearer ${secrets.MCP_TOKEN_PREVIOUS}` },
      { authorization: `Bearer ${secrets.MCP_OPERATOR_TOKEN}` },
      { authorization: `Bearer ${probe('wrong-mcp-token')}` },
      { authorization: `Bearer ${secrets.MCP_TOKEN}`, origin: 'http://evil.example' },
    ]) {
      await send('/mcp', `${api.url}/mcp`, { method: 'POST', headers: { ...mcpHeaders, ...extra }, body: call });
    }
    keys.push(idempotencyKeyFor(mcpApprovalNo, 'MAIN'));

    // MCP over stdio: the orders-mcp bin as an agent starts it, with the same environment: its own
    // start (bin/launch.mjs) is under the same watch as the server's.
    const stdioApprovalNo = uniqueApprovalNo('LEAKSTDIO');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_BIN],
      env: env as Record<string, string>,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => mcpStderr.push(chunk.toString('utf8')));
    client = new McpClient({ name: 'leak-test', version: '1.0.0' });
    await client.connect(transport);
    const result = await client.callTool({
      name: 'submit_approved_order',
      arguments: { ...approval(stdioApprovalNo, await createSku()) },
    });
    answers.push({ request: 'orders-mcp tool call', status: 0, headers: {}, body: JSON.stringify(result) });
    const stdioKey = idempotencyKeyFor(stdioApprovalNo, 'MAIN');
    keys.push(stdioKey);

    // Every accepted approval reaches DELIVERY_FAILED: written, then refused by the downstream.
    const orderUrl = (key: string) => `${api.url}/orders/${encodeURIComponent(key)}`;
    for (const key of keys) {
      await eventually(`${key} to reach DELIVERY_FAILED`, async () => {
        const view = await send('GET /orders/<key>', orderUrl(key), {
          headers: { authorization: `Bearer ${secrets.STATUS_TOKEN}` },
        });
        if (view.body.includes('"status":"DELIVERY_FAILED"')) return view;
        // Said when the wait times out: a key never taken (404) is not one still being delivered.
        throw new Error(`the last view: ${view.status} ${view.body.slice(0, 300)}`);
      });
    }
    // The status door refuses without its token, and with a wrong one: searched like every answer.
    await send('GET /orders/<key> without a token', orderUrl(keys[0] as string));
    await send('GET /orders/<key> with a wrong token', orderUrl(keys[0] as string), {
      headers: { authorization: `Bearer ${probe('wrong-status-token')}` },
    });
    // The MCP status tool tells the same view.
    const told = await client.callTool({ name: 'get_order_status', arguments: { idempotencyKey: stdioKey } });
    statusOverMcp = JSON.stringify(told);
    answers.push({ request: 'orders-mcp get_order_status', status: 0, headers: {}, body: statusOverMcp });
    await send('GET /healthz', `${api.url}/healthz`);
    await send('GET /readyz', `${api.url}/readyz`);
    await send('worker GET /readyz', `http://127.0.0.1:${workerProbes}/readyz`);
    await send('GET /nowhere', `${api.url}/nowhere?token=${secrets.MCP_TOKEN}`);
    metricsText = await Promise.all(
      [apiMetrics, workerMetrics].map(async (port) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text()),
    );

    // Stopping flushes every span the processes still hold.
    await client.close();
    await Promise.all([api.kill('SIGTERM'), worker.kill('SIGTERM')]);
  });

  after(async () => {
    // A start that failed half-way leaves orders-mcp running: closed here, or the file never exits.
    await client?.close();
    await api?.kill();
    await worker?.kill();
    await receiver?.close();
    await feishu?.close();
    await dingtalk?.close();
    await wecom?.close();
    await new Promise((resolve) => downstream?.close(resolve));
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    await admin.end();
  });

  const logs = (): Output[] => [
    { source: 'the API log', text: api.output() },
    { source: 'the worker log', text: worker.output() },
    { source: 'the orders-mcp log', text: mcpStderr.join('') },
  ];
  const spans = (): Output[] =>
    receiver.spans().map((span) => ({ source: `span ${span.serviceName} ${span.name}`, text: JSON.stringify(span) }));
  const httpAnswers = (): Output[] =>
    answers.map((answer) => ({
      source: `the answer to ${answer.request} (${answer.status})`,
      text: JSON.stringify(answer),
    }));

  it('every approval went through and every refusal was refused: the outputs searched are the real ones', () => {
    const statuses = answers.map((answer) => `${answer.request} ${answer.status}`);
    assert.ok(
      statuses.some((status) => /^webhook 20[012]$/.test(status)),
      statuses.join(', '),
    );
    for (const expected of [
      'webhook 401',
      'feishu callback 200',
      'dingtalk callback 200',
      'wecom URL check 200',
      'wecom callback 200',
    ]) {
      assert.ok(statuses.includes(expected), `${expected} among ${statuses.join(', ')}`);
    }
    assert.ok(
      statuses.filter((status) => /^(feishu|dingtalk|wecom) callback 4/.test(status)).length === 3,
      statuses.join(),
    );
    assert.deepEqual(
      statuses.filter((status) => status.startsWith('/mcp')),
      ['/mcp 200', '/mcp 200', '/mcp 200', '/mcp 401', '/mcp 403'],
      'the new token, the one it replaces and the operator token are served, a wrong token and a foreign origin refused',
    );
    assert.equal(keys.length, 9);
    assert.ok(downstreamPosts >= keys.length, 'the downstream was called for every order');
    // The access tokens WeCom's reader was given travel in its URLs' queries: the outputs below
    // must not show them either. The refused one was refreshed: two at least.
    const wecomTokens = wecom.issuedTokens();
    assert.ok(wecomTokens.length >= 2, `WeCom access tokens issued: ${wecomTokens.length}`);
    for (const [index, token] of wecomTokens.entries()) secrets[`WeCom access token ${index + 1}`] = token;
    // So do the tickets of the DingTalk Stream's endpoint answers, one per connection opened.
    const tickets = dingtalk.stream.issuedTickets();
    assert.ok(tickets.length >= 2, `DingTalk Stream tickets issued: ${tickets.length}`);
    for (const [index, ticket] of tickets.entries()) secrets[`DingTalk Stream ticket ${index + 1}`] = ticket;
    // Each endpoint discovery of the long connection handed out a URL with a ticket and an access key.
    const feishuTickets = feishu.longConnection.issuedTickets();
    assert.ok(feishu.longConnection.issuedUrls().length >= 2, 'the connection was opened twice');
    for (const [index, ticket] of feishuTickets.entries())
      secrets[`Feishu long-connection credential ${index + 1}`] = ticket;
    assert.ok(metricsText.every((text) => text.includes('# TYPE')));
  });

  it('no log line of the API, the worker or orders-mcp carries a secret, and the worker names its downstream redacted', () => {
    assert.deepEqual(leaks(secrets, logs()), []);
    // The SDK logs the long connection's URL at debug: the line is there, without its ticket.
    assert.match(api.output(), /ws url: ws:\/\/127\.0\.0\.1:\d+\/ws\/v2\?[^"]*ticket=REDACTED/);
    assert.ok(worker.output().includes(redactUrl(downstreamUrl)), 'the start-up log shows the downstream');
    assert.match(redactUrl(downstreamUrl), /\/hook\?code=REDACTED&tenant=REDACTED$/);
  });

  it('no span attribute, event or status of any process carries a secret; url.full shows the downstream redacted', () => {
    const services = new Set(receiver.spans().map((span) => span.serviceName));
    assert.deepEqual([...services].sort(), ['orders-api', 'orders-mcp', 'orders-worker']);
    const posts = receiver.spans().filter((span) => span.name === 'POST');
    assert.ok(posts.length >= keys.length, 'a POST span per order at least');
    for (const post of posts) assert.equal(post.attributes['url.full'], redactUrl(downstreamUrl));
    assert.ok(
      receiver.spans().some((span) => span.events.some((event) => event.name === 'exception')),
      'failed spans recorded their exception',
    );
    assert.deepEqual(leaks(secrets, spans()), []);
  });

  it('no HTTP answer, refusals and order views included, carries a secret in its body or headers', () => {
    assert.deepEqual(leaks(secrets, httpAnswers()), []);
  });

  it("a status answer tells the downstream's failure by code and sentence, never its body, over HTTP and MCP", async () => {
    const views = answers.filter((answer) => answer.request === 'GET /orders/<key>' && answer.status === 200);
    const failed = views.filter((view) => view.body.includes('"status":"DELIVERY_FAILED"'));
    assert.equal(failed.length, keys.length, 'each key was read once it had failed');
    const expected = TABLE.find((row) => row.errorClass === 'DownstreamUnavailable')?.told;
    for (const view of failed) {
      assert.deepEqual((JSON.parse(view.body) as { lastError?: unknown }).lastError, expected, view.body);
    }
    assert.match(statusOverMcp, /"code":"downstream-unavailable"/);
    for (const { source, text } of [
      ...failed.map((view) => ({ source: 'GET /orders/<key>', text: view.body })),
      { source: 'get_order_status', text: statusOverMcp },
    ]) {
      for (const internal of DOWNSTREAM_INTERNAL_PARTS)
        assert.ok(!text.includes(internal), `${source} repeats ${internal}`);
    }
    // The raw text is the operator's: the key's record keeps it for `orders-cli status`.
    const { rows } = await admin.query<{ last_error: string }>(
      'SELECT last_error FROM idempotency_record WHERE idempotent_key = $1',
      [keys[0]],
    );
    assert.ok(rows[0]?.last_error.includes(DOWNSTREAM_INTERNALS), rows[0]?.last_error);
  });

  it('GET /orders without STATUS_TOKEN, or with a wrong one, is refused with the one answer of the door', () => {
    const refusals = answers.filter((answer) => /^GET \/orders\/<key> with(out)? a/.test(answer.request));
    assert.deepEqual(
      refusals.map((answer) => answer.status),
      [401, 401],
    );
    assert.equal(new Set(refusals.map((answer) => answer.body)).size, 1);
    assert.equal(refusals[0]?.headers['www-authenticate'], 'Bearer realm="orders"');
  });

  it('the /metrics text of the API and the worker carries no secret', () => {
    assert.deepEqual(
      leaks(
        secrets,
        metricsText.map((text, index) => ({ source: `/metrics of ${index === 0 ? 'the API' : 'the worker'}`, text })),
      ),
      [],
    );
  });

  it('the same search finds the query token in the downstream span as it was before redaction', () => {
    const post = receiver.spans().find((span) => span.name === 'POST');
    assert.ok(post);
    const unredacted = { ...post, attributes: { ...post.attributes, 'url.full': downstreamUrl } };
    assert.deepEqual(leaks(secrets, [{ source: 'the unredacted span', text: JSON.stringify(unredacted) }]), [
      'the DOWNSTREAM_URL query token in the unredacted span',
    ]);
  });
});

describe('the public status answer', () => {
  const STATUS_TOKEN = probe('status-token');
  const MCP_TOKEN = probe('mcp-token');
  const authorized = { authorization: `Bearer ${STATUS_TOKEN}` };
  /** What the database's refusal of one write says: its host, its address, the form's values. */
  const DATABASE_INTERNAL_PARTS = ['db-primary-3.corp.internal', '10.66.12.7', 'CUST-PRIVATE-7', 'ECONNREFUSED'];
  let service: TestService;

  before(async () => {
    service = await startTestService({
      config: loadConfig(
        testEnv({
          STATUS_TOKEN,
          MCP_TOKEN,
          RETRY_MAX_ATTEMPTS: '2',
          RETRY_INITIAL_INTERVAL_MS: '100',
          RETRY_MAX_INTERVAL_MS: '200',
          LOG_LEVEL: 'silent',
        }),
      ),
      activities: (real) => ({
        ...real,
        async writeOrder(input: OrderWorkflowInput) {
          if (!input.approvalNo.startsWith('LEAKDB')) return real.writeOrder(input);
          const [host, address, customer] = DATABASE_INTERNAL_PARTS;
          const refused = Object.assign(
            new Error(`connect ECONNREFUSED ${address}:5432 (${host}) while writing the order of ${customer}`),
            { code: 'ECONNREFUSED' },
          );
          throw toActivityFailure(refused, Context.current().info.attempt, input.policy);
        },
      }),
    });
  });
  after(() => service?.stop());

  /** A key whose record says it failed with `lastError`, as a workflow leaves it waiting for a decision. */
  async function keyFailedWith(lastError: string): Promise<string> {
    const approvalNo = uniqueApprovalNo('LEAKROW');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    await claimRecord(service.prisma, {
      idempotencyKey: key,
      approvalNo,
      operation: 'MAIN',
      fingerprint: 'f'.repeat(64),
      request: null,
      workflowId: `order-${key}`,
      source: 'webhook',
    });
    await service.prisma.idempotencyRecord.update({
      where: { idempotentKey: key },
      data: { status: 'COMPENSATING', attempts: 1, lastError },
    });
    return key;
  }

  it("a write the database refuses with its host, its address and the form's values is told by code and sentence, over HTTP and MCP", async () => {
    const approvalNo = uniqueApprovalNo('LEAKDB');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    assert.equal(
      (await postApproval(service, approval(approvalNo, await createSku(service.prisma, 10)))).statusCode,
      202,
    );

    await statusReaches(service, key, 'COMPENSATING', authorized);
    const answer = await getOrder(service, key, authorized);
    const overMcp = await service.app.inject(
      mcpRequest(MCP_TOKEN, 'tools/call', { name: 'get_order_status', arguments: { idempotencyKey: key } }),
    );

    const connectionLost = TABLE.find((row) => row.errorClass === 'ConnectionLost')?.told;
    assert.deepEqual(answer.json<OrderView>().lastError, connectionLost);
    assert.match(overMcp.body, /"lastError":\{"code":"connection-lost","message":"[^"]+"\}/);
    for (const [source, text] of [
      ['GET /orders/<key>', answer.body],
      ['get_order_status', overMcp.body],
    ] as const) {
      for (const part of DATABASE_INTERNAL_PARTS) assert.ok(!text.includes(part), `${source} repeats ${part}`);
    }
    // The operator still reads it whole (`orders-cli status` reads this view).
    const operatorView = await readOrderStatus(service, key);
    assert.match(operatorView?.lastError ?? '', /^ConnectionLost: connect ECONNREFUSED 10\.66\.12\.7:5432/);
  });

  it("for every row of the classification table the answer is the row's code and sentence, never the recorded message", async () => {
    const anyRaw: RawError = { text: 'connect ECONNREFUSED 192.0.2.1:5432', parts: ['192.0.2.1', 'ECONNREFUSED'] };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...TOLD_TYPES), rawErrorText, async ([type, told], raw) => {
        const key = await keyFailedWith(`${type}: ${raw.text}`);
        const answer = await getOrder(service, key, authorized);
        assert.equal(answer.statusCode, 200, answer.body);
        assert.deepEqual(answer.json<OrderView>().lastError, told, type);
        for (const part of raw.parts) assert.ok(!answer.body.includes(part), `${type}: the answer repeats ${part}`);
      }),
      // Every row once as an example, then generated rows and texts.
      { examples: TOLD_TYPES.map((row) => [row, anyRaw]), numRuns: 30 },
    );
  });

  it('GET /orders answers one refusal to a missing, wrong or malformed STATUS_TOKEN, whatever the key, and serves the right one', async () => {
    const known = await keyFailedWith('InsufficientStock: insufficient stock for SKU-1');
    const keys = fc.constantFrom(known, idempotencyKeyFor(uniqueApprovalNo('LEAKNONE'), 'MAIN'), 'not-a-key');
    const token = fc.stringMatching(/^[\x21-\x7e]{1,64}$/).filter((value) => value !== STATUS_TOKEN);
    const authorization = fc.oneof(
      fc.constant(undefined),
      token.map((value) => `Bearer ${value}`),
      fc.constantFrom(
        `Basic ${STATUS_TOKEN}`,
        STATUS_TOKEN,
        `Bearer ${STATUS_TOKEN}x`,
        'Bearer ',
        `Token ${STATUS_TOKEN}`,
      ),
      token,
    );
    const refusals = new Set<string>();
    await fc.assert(
      fc.asyncProperty(keys, authorization, async (key, header) => {
        const answer = await getOrder(service, key, header === undefined ? {} : { authorization: header });
        assert.equal(answer.statusCode, 401, `${header} for ${key}: ${answer.body}`);
        assert.equal(answer.headers['www-authenticate'], 'Bearer realm="orders"');
        refusals.add(`${String(answer.headers['content-type'])} ${answer.body}`);
      }),
      { numRuns: 60 },
    );
    assert.equal(refusals.size, 1, [...refusals].join('\n'));

    // The refusals were the token's doing: the same requests with it are answered for the key.
    assert.equal((await getOrder(service, known, authorized)).statusCode, 200);
    assert.equal((await getOrder(service, known, { authorization: `bearer ${STATUS_TOKEN}` })).statusCode, 200);
    assert.equal((await getOrder(service, 'not-a-key', authorized)).statusCode, 400);
    assert.equal(
      (await getOrder(service, idempotencyKeyFor(uniqueApprovalNo('LEAKNONE'), 'MAIN'), authorized)).statusCode,
      404,
    );
  });
});
