// No door can be stalled. Bodies built to make a parser or a regular expression backtrack, at the
// body limit, go to every door — the OA webhook (signed and not), Feishu, DingTalk, WeCom's POST
// and its URL check, and `/mcp` — one after another, while a prober asks `/livez` again and again
// over the real socket. Every probe is answered with less than 100 ms of the process's work ahead
// of it: nothing the doors run on a body, before or after its signature, holds the event loop.
// The work is the CPU time of the process's main thread, where the API answers, while the probe
// waited — not the wall clock, which on a loaded machine also counts the time the process was not
// running at all, and not the whole process's, which also counts its collector's and its pool's
// threads; the hostile bodies are sent from a thread of their own (the wall-clock figures are
// printed beside it). The broken variant is the WeCom connector
// that parsed the body with a backtracking expression before it checked the signature: the same
// probe sees `/livez` wait for seconds behind one unsigned body of a quarter of the limit.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import type { Connector } from '../../vendors/connector.js';
import { connectorsFromConfig } from '../../vendors/registry.js';
import { buildApp, MAX_BODY_BYTES } from '../../edges/http/app.js';
import { MCP_PATH } from '../../edges/http/routes/mcp.js';
import { WEBHOOK_PATH } from '../../edges/http/openapi.js';
import { randomDingTalkAesKey, startFakeDingTalk, type FakeDingTalk } from '../../tools/harness/fake-dingtalk.js';
import { startFakeFeishu, type FakeFeishu } from '../../tools/harness/fake-feishu.js';
import { randomWeComAesKey, startFakeWeCom, type FakeWeCom } from '../../tools/harness/fake-wecom.js';
import { backtrackingXmlChildren } from '../../tools/harness/backtracking-parsers.js';
import { filled, mainThreadCpuMs } from '../../tools/harness/hostile-input.js';
import { startTestService, testConfig, type TestService } from '../../tools/harness/service.js';
import { signedHeaders } from '../../tools/harness/signed-webhook.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** How late `/livez` may answer while the doors read hostile bodies. */
const LIVEZ_BUDGET_MS = 100;
const MCP_TOKEN = 'stall-mcp-token-0123456789abcdef';

type App = ReturnType<typeof buildApp>;
interface Hostile {
  door: string;
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** The bodies that cost a backtracking reader the most, each at `size` characters. */
function hostileBodies(size: number): string[] {
  return [
    filled(size, 'a', '<'),
    filled(size, '<a'),
    filled(size, 'a', '<xml><Encrypt>'),
    filled(size, 'a', '<xml><Encrypt><![CDATA['),
    filled(size, '&amp'),
    filled(size, 'a.'),
    filled(size, '1://'),
    filled(size, '['),
    filled(size, '{"a":'),
    filled(size, '"\\u00'),
  ];
}

/** Every door, each with every hostile body (the URL check's query is bounded by the header limit). */
function hostileRequests(size: number): Hostile[] {
  const requests: Hostile[] = [];
  const xml = { 'content-type': 'text/xml' };
  const json = { 'content-type': 'application/json' };
  const sealedQuery = 'msg_signature=0000&timestamp=1&nonce=1';
  for (const body of hostileBodies(size)) {
    requests.push(
      { door: 'webhook, unsigned', method: 'POST', url: WEBHOOK_PATH, headers: json, body },
      { door: 'webhook, signed', method: 'POST', url: WEBHOOK_PATH, headers: signedHeaders(body), body },
      { door: 'feishu', method: 'POST', url: '/webhooks/feishu', headers: json, body },
      { door: 'dingtalk', method: 'POST', url: `/webhooks/dingtalk?${sealedQuery}`, headers: json, body },
      { door: 'wecom', method: 'POST', url: `/webhooks/wecom?${sealedQuery}`, headers: xml, body },
      { door: 'mcp', method: 'POST', url: MCP_PATH, headers: { ...json, authorization: 'Bearer wrong' }, body },
    );
  }
  for (const unit of ['a', '<a', 'a.', '%3Ca']) {
    const echostr = filled(8 * 1024, unit);
    requests.push({
      door: 'wecom URL check',
      method: 'GET',
      url: `/webhooks/wecom?${sealedQuery}&echostr=${echostr}`,
      headers: {},
    });
  }
  return requests;
}

/**
 * Sends `requests` one after another to `base` while probing `/livez` back to back; answers the
 * probes' round trips and the statuses the doors gave.
 */
/**
 * Sends `requests` one after another from a thread of its own, so that building and sending 64
 * bodies of 255 KiB is not counted as the API's work: what the probes measure is the main thread
 * alone, where the API answers.
 */
const SENDER = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const statuses = [];
  for (const request of workerData.requests) {
    const answer = await fetch(workerData.base + request.url, {
      method: request.method,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body }),
    });
    await answer.arrayBuffer();
    statuses.push(answer.status);
  }
  parentPort.postMessage(statuses);
})();
`;

async function probeWhileSending(
  base: string,
  requests: Hostile[],
): Promise<{ probesMs: number[]; probesCpuMs: number[]; statuses: Set<number> }> {
  const probesMs: number[] = [];
  const probesCpuMs: number[] = [];
  const sender = new Worker(SENDER, { eval: true, workerData: { base, requests } });
  const sent = new Promise<number[]>((resolve, reject) => {
    sender.once('message', resolve);
    sender.once('error', reject);
  });
  let sending = true;
  const prober = (async () => {
    while (sending) {
      const started = performance.now();
      const cpuBefore = mainThreadCpuMs();
      const answer = await fetch(`${base}/livez`);
      await answer.arrayBuffer();

      probesMs.push(performance.now() - started);
      probesCpuMs.push(mainThreadCpuMs() - cpuBefore);
      assert.equal(answer.status, 200);
    }
  })();
  try {
    return { probesMs, probesCpuMs, statuses: new Set(await sent) };
  } finally {
    sending = false;
    await prober;
    await sender.terminate();
  }
}

describe('no door can be stalled by a body built against its parser', () => {
  let service: TestService;
  let feishu: FakeFeishu;
  let dingtalk: FakeDingTalk;
  let wecom: FakeWeCom;
  const apps: App[] = [];

  before(async () => {
    [feishu, dingtalk, wecom] = await Promise.all([startFakeFeishu(), startFakeDingTalk(), startFakeWeCom()]);
    service = await startTestService({
      config: testConfig({
        OA_FORM_MAPPING: path.join(ROOT, 'examples/oa-form-mapping.json'),
        MCP_TOKEN,
        FEISHU_APP_ID: feishu.appId,
        FEISHU_APP_SECRET: feishu.appSecret,
        FEISHU_ENCRYPT_KEY: 'stall-feishu-encrypt-key-0123456789',
        FEISHU_VERIFICATION_TOKEN: 'stall-feishu-verification-token',
        FEISHU_API_BASE_URL: feishu.url,
        DINGTALK_APP_KEY: dingtalk.appKey,
        DINGTALK_APP_SECRET: dingtalk.appSecret,
        DINGTALK_AES_KEY: randomDingTalkAesKey(),
        DINGTALK_TOKEN: 'stall-dingtalk-token',
        DINGTALK_API_BASE_URL: dingtalk.url,
        WECOM_CORP_ID: wecom.corpId,
        WECOM_AGENT_SECRET: wecom.agentSecret,
        WECOM_TOKEN: 'stall-wecom-token',
        WECOM_ENCODING_AES_KEY: randomWeComAesKey(),
        WECOM_API_BASE_URL: wecom.url,
      }),
      inProcessWorker: false,
    });
  });
  after(async () => {
    for (const app of apps) await app.close();
    await service.stop();
    await Promise.all([feishu.close(), dingtalk.close(), wecom.close()]);
  });

  /** The API on a real port, with these connectors. */
  async function listening(connectors: Partial<Record<string, Connector>>): Promise<string> {
    const app = buildApp({ config: service.config, prisma: service.prisma, temporal: service.temporal, connectors });
    apps.push(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    assert.ok(address && typeof address === 'object');
    return `http://127.0.0.1:${address.port}`;
  }

  it(`/livez waits behind under ${LIVEZ_BUDGET_MS} ms of work while every door reads hostile bodies at the body limit`, async (t) => {
    const base = await listening(connectorsFromConfig(service.config));
    const requests = hostileRequests(MAX_BODY_BYTES - 1024);
    const { probesMs, probesCpuMs, statuses } = await probeWhileSending(base, requests);
    // Every door refused or rejected what it was sent, and nothing was accepted.
    assert.deepEqual(
      [...statuses].filter((status) => status < 400),
      [],
    );
    assert.ok(probesMs.length >= requests.length / 4, `only ${probesMs.length} probes went out`);
    const [slowest, mostWork] = [Math.max(...probesMs), Math.max(...probesCpuMs)];
    t.diagnostic(
      `${requests.length} hostile requests, ${probesMs.length} probes: slowest ${slowest.toFixed(1)} ms, ` +
        `at most ${mostWork.toFixed(1)} ms of work ahead of one`,
    );
    assert.ok(mostWork < LIVEZ_BUDGET_MS, `a /livez waited behind ${mostWork.toFixed(0)} ms of work`);
  });

  it('the check finds a WeCom connector that parses the body with a backtracking expression before the signature', async (t) => {
    const genuine = connectorsFromConfig(service.config);
    const wecomConnector = genuine.wecom;
    assert.ok(wecomConnector);
    const parsesFirst: Connector = {
      ...wecomConnector,
      read: (request) => {
        backtrackingXmlChildren(request.rawBody.toString('utf8'));
        return wecomConnector.read(request);
      },
    };
    const base = await listening({ ...genuine, wecom: parsesFirst });
    const oneBody = hostileRequests(MAX_BODY_BYTES / 4).find(
      (request) => request.door === 'wecom' && request.body?.startsWith('<aa') === true,
    );
    assert.ok(oneBody);
    const { probesMs, probesCpuMs } = await probeWhileSending(base, [oneBody]);
    const [slowest, mostWork] = [Math.max(...probesMs), Math.max(...probesCpuMs)];
    t.diagnostic(
      `one body of ${MAX_BODY_BYTES / 4} characters: slowest probe ${slowest.toFixed(0)} ms, ` +
        `${mostWork.toFixed(0)} ms of work ahead of it`,
    );
    assert.ok(mostWork > LIVEZ_BUDGET_MS, `the most work ahead of a /livez was ${mostWork.toFixed(0)} ms`);
  });
});
