// The Prometheus endpoints of the real API and worker processes (METRICS_PORT): after a first
// delivery, a redelivery, a conflict and a bad signature, the product's counters say so — next to
// the SDK's own worker metrics; the waiting keys' gauge follows a key into COMPENSATING and out of
// it; the API's DingTalk Stream shows in the connection gauge, down while its gateway is away; a
// workflow task that fails is counted by the SDK; and every metric the alert rules and the
// dashboard under deploy/ query is one the endpoints export — the series that appear only at a
// first failure or with a connection included, since the tests before make them for real.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import { networkInterfaces } from 'node:os';
import { freePort, isPortOpen } from '../../tools/harness/ports.js';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { decideCompensation } from '../../submission/operator-decisions/compensation.js';
import { dashboardQueries, rules } from '../../tools/harness/deploy-queries.js';
import {
  dingtalkSettings,
  type FakeDingTalk,
  randomDingTalkAesKey,
  startFakeDingTalk,
} from '../../tools/harness/fake-dingtalk.js';
import { metricNamesIn } from '../../tools/harness/promql-names.js';
import { type FakeFeishu, startFakeFeishu } from '../../tools/harness/fake-feishu.js';
import { type ApiProcess, apiProcess, processEnv, sendApproval, workerProcess } from '../../tools/harness/processes.js';
import {
  approval,
  createSku,
  eventually,
  startTestService,
  statusReaches,
  type TestService,
  uniqueApprovalNo,
  until,
} from '../../tools/harness/service.js';

const MAPPING = fileURLToPath(new URL('../../examples/oa-form-mapping.json', import.meta.url));

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match || line.startsWith('#')) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      if (key !== undefined && value !== undefined) labels[key] = value;
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((sample) => sample.name === name)
    .filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
    .reduce((sum, sample) => sum + sample.value, 0);
}

async function scrapeText(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  assert.equal(response.status, 200);
  return response.text();
}

async function scrape(port: number): Promise<Sample[]> {
  return parseExposition(await scrapeText(port));
}

/** The families' types of an exposition (`# TYPE name histogram`). */
function familyTypes(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name ?? '', type ?? '']));
}

/**
 * Whether a query's metric name is on an endpoint: a sample of that name; `_bucket`, `_sum` and
 * `_count` only of a family the endpoint types a histogram.
 */
function exported(name: string, samples: Set<string>, types: Map<string, string>): boolean {
  const histogram = /^(.+)_(bucket|sum|count)$/.exec(name);
  if (histogram) return types.get(histogram[1] ?? '') === 'histogram' && samples.has(name);
  return samples.has(name) && types.get(name) !== 'histogram';
}

describe('metrics on METRICS_PORT', () => {
  let service: TestService;
  let api: ApiProcess;
  let worker: ManagedProcess;
  // The downstream acknowledges every event, so the delivery series exist.
  let downstream: Server;
  // The API holds a DingTalk Stream to it, so the connection gauge exists.
  let dingtalk: FakeDingTalk;
  // The worker posts decision cards to its chat and receipts to the approvals, so the series of
  // both exist from its start.
  let feishu: FakeFeishu;
  const ports = { api: 0, worker: 0 };

  before(async () => {
    service = await startTestService({ inProcessWorker: false });
    [ports.api, ports.worker] = [await freePort(), await freePort()];
    // No METRICS_HOST: the default is what is tested.
    const env = processEnv(service.config);
    // Sampled every second, so the gauge's test waits seconds, not the default 15.
    const sampled = { METRICS_SAMPLE_INTERVAL_SECONDS: '1' };
    downstream = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve));
    const address = downstream.address();
    const delivery = {
      DOWNSTREAM_URL: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/events`,
      DOWNSTREAM_SECRET: 'metrics-test-downstream-secret-0123456789',
    };
    dingtalk = await startFakeDingTalk();
    const stream = {
      ...dingtalkSettings(dingtalk, { aesKey: randomDingTalkAesKey(), token: 'metrics-test-token' }, MAPPING),
      DINGTALK_EVENT_MODE: 'stream',
    };
    feishu = await startFakeFeishu();
    const cards = {
      OA_FORM_MAPPING: MAPPING,
      FEISHU_APP_ID: feishu.appId,
      FEISHU_APP_SECRET: feishu.appSecret,
      FEISHU_ENCRYPT_KEY: 'metrics-test-feishu-encrypt-key',
      FEISHU_VERIFICATION_TOKEN: 'metrics-test-feishu-token',
      FEISHU_API_BASE_URL: feishu.url,
      FEISHU_DECISION_CHAT_ID: 'oc_metricstest',
      FEISHU_OPERATOR_OPEN_IDS: 'ou_metricstest',
      FEISHU_RECEIPT_USER_ID: 'ou_metricsreceipts',
    };
    api = await apiProcess('api-metrics', { ...env, ...sampled, ...stream, METRICS_PORT: String(ports.api) });
    worker = workerProcess('worker-metrics', {
      ...env,
      ...sampled,
      ...delivery,
      ...cards,
      METRICS_PORT: String(ports.worker),
    });
    await Promise.all([api.start(), worker.start()]);
    await until('the API connected to the DingTalk Stream', () => dingtalk.stream.openConnections() === 1);
  });
  after(async () => {
    await Promise.all([api.kill('SIGTERM'), worker.kill('SIGTERM')]);
    await new Promise((resolve) => downstream.close(resolve));
    await dingtalk.close();
    await feishu.close();
    await service.stop();
  });

  it('serves the metrics on 127.0.0.1 only, by default', async (t) => {
    assert.equal(await isPortOpen(ports.api, '127.0.0.1'), true, "the API's reachable on loopback");
    assert.equal(await isPortOpen(ports.worker, '127.0.0.1'), true, "the worker's reachable on loopback");
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((address) => address && address.family === 'IPv4' && !address.internal);
    if (!outside) {
      t.skip('this machine has loopback only: no other address to try');
      return;
    }
    assert.equal(await isPortOpen(ports.api, outside.address), false, `not reachable on ${outside.address}`);
    assert.equal(await isPortOpen(ports.worker, outside.address), false, `not reachable on ${outside.address}`);
  });

  it('counts webhooks by outcome, duplicates absorbed, orders written and the end-to-end latency', async () => {
    const approvalNo = uniqueApprovalNo('METRIC');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const sku = await createSku(service.prisma, 10);
    const body = approval(approvalNo, sku);
    assert.equal((await sendApproval(api.url, body)).status, 202);
    assert.equal((await sendApproval(api.url, body)).status, 200);
    const changed = approval(approvalNo, sku, { order: { ...body.order, customerId: 'CUST-OTHER' } });
    assert.equal((await sendApproval(api.url, changed)).status, 422);
    const unsigned = await fetch(`${api.url}/webhooks/oa/approvals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(unsigned.status, 401);
    await statusReaches(service, key, 'DELIVERED');

    const fromApi = await scrape(ports.api);
    assert.equal(total(fromApi, 'orders_webhooks_total', { outcome: 'accepted' }), 1);
    assert.equal(total(fromApi, 'orders_webhooks_total', { outcome: 'duplicate' }), 1);
    assert.equal(total(fromApi, 'orders_webhooks_total', { outcome: 'conflict' }), 1);
    assert.equal(total(fromApi, 'orders_webhooks_total', { outcome: 'refused', reason: 'invalid-signature' }), 1);
    assert.equal(total(fromApi, 'orders_duplicates_absorbed_total', { at: 'edge' }), 1);

    const fromWorker = await eventually('the worker to export the written order', async () => {
      const samples = await scrape(ports.worker);
      return total(samples, 'orders_written_total') >= 1 ? samples : undefined;
    });
    assert.equal(total(fromWorker, 'orders_written_total'), 1);
    assert.equal(total(fromWorker, 'orders_end_to_end_latency_seconds_count'), 1);
    assert.ok(total(fromWorker, 'orders_end_to_end_latency_seconds_sum') > 0, 'a latency in seconds, above 0');
    const buckets = fromWorker.filter((sample) => sample.name === 'orders_end_to_end_latency_seconds_bucket');
    assert.ok(
      buckets.some((sample) => sample.labels.le === '0.1'),
      `the buckets are in seconds: ${buckets.map((sample) => sample.labels.le).join(' ')}`,
    );
    // The start's latency: the one accepted delivery, answered without a wait.
    assert.equal(total(fromApi, 'orders_webhook_start_seconds_count'), 1);
    // The SDK's own worker metrics share the endpoint; the write is a local activity.
    assert.ok(fromWorker.some((sample) => sample.name.startsWith('temporal_local_activity_execution_latency_seconds')));
  });

  it('samples the waiting keys: a key in COMPENSATING counts 1, and 0 once an operator decided', async () => {
    const waiting = (samples: Sample[], status: string) =>
      samples.find((sample) => sample.name === 'orders_keys' && sample.labels.status === status)?.value;
    // Every waiting status is reported, at 0 when no key waits in it; the API alone does not report.
    const first = await eventually('the worker to sample the keys', async () => {
      const samples = await scrape(ports.worker);
      return waiting(samples, 'COMPENSATING') === undefined ? undefined : samples;
    });
    for (const status of ['RECEIVED', 'COMPENSATING', 'DELIVERY_FAILED', 'FAILED']) {
      assert.equal(typeof waiting(first, status), 'number', `orders_keys{status="${status}"} is exported`);
    }
    assert.equal(waiting(first, 'COMPENSATING'), 0);
    assert.equal(waiting(await scrape(ports.api), 'COMPENSATING'), undefined, 'only the worker reports the keys');

    const approvalNo = uniqueApprovalNo('METRIC-WAIT');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    const sku = await createSku(service.prisma, 0); // no stock: the write fails for good
    assert.equal((await sendApproval(api.url, approval(approvalNo, sku))).status, 202);
    await statusReaches(service, key, 'COMPENSATING');
    await eventually('orders_keys{status="COMPENSATING"} to be 1', async () =>
      waiting(await scrape(ports.worker), 'COMPENSATING') === 1 ? true : undefined,
    );

    await decideCompensation(service.temporal, { idempotencyKey: key, decision: 'abandon', decidedBy: 'metrics-test' });
    await statusReaches(service, key, 'COMPENSATED');
    await eventually('orders_keys{status="COMPENSATING"} to be 0 again', async () =>
      waiting(await scrape(ports.worker), 'COMPENSATING') === 0 ? true : undefined,
    );
    // The compensation is counted as one whose class fails for good, not as attempts run out.
    const after = await scrape(ports.worker);
    assert.equal(total(after, 'orders_compensations_total', { reason: 'InsufficientStock', retryable: 'false' }), 1);
  });

  it("counts the API's answers by route pattern and status class: never a key or a stranger's path in a label, each route's 5xx from 0", async () => {
    const secret = `NEVER-A-LABEL-${Date.now()}`;
    await (await fetch(`${api.url}/orders/${encodeURIComponent(`APPROVAL:${secret}:MAIN`)}`)).arrayBuffer();
    await (await fetch(`${api.url}/${secret}`)).arrayBuffer();
    // An answer is counted once it has been sent, which may be after the client read it.
    const samples = await eventually('the API to count both answers', async () => {
      const answers = (await scrape(ports.api)).filter((sample) => sample.name === 'orders_http_requests_total');
      const counted = (route: string) =>
        total(answers, 'orders_http_requests_total', { route, status_class: '4xx' }) >= 1;
      return counted('/orders/:key') && counted('unmatched') ? answers : undefined;
    });
    assert.ok(samples.every((sample) => !Object.values(sample.labels).some((value) => value.includes(secret))));
    assert.ok(
      samples.every((sample) => /^[1-5]xx$/.test(sample.labels.status_class ?? '')),
      'five status classes at most',
    );
    const webhook = samples.filter(
      (sample) => sample.labels.route === '/webhooks/oa/approvals' && sample.labels.status_class === '5xx',
    );
    assert.equal(webhook.length, 1, "the webhook route's 5xx series exists before its first server error");
  });

  it("exports each process's resident memory and the 503 refusals at 0 before the first one", async () => {
    const [fromApi, fromWorker] = [await scrape(ports.api), await scrape(ports.worker)];
    for (const samples of [fromApi, fromWorker]) {
      assert.ok(total(samples, 'orders_process_resident_memory_bytes') > 10_000_000, 'a resident set of megabytes');
    }
    for (const reason of ['overloaded', 'temporal-unavailable']) {
      const refused = fromApi.filter(
        (sample) =>
          sample.name === 'orders_webhooks_total' &&
          sample.labels.outcome === 'refused' &&
          sample.labels.reason === reason,
      );
      assert.deepEqual(
        refused.map((sample) => sample.value),
        [0],
        `orders_webhooks_total{outcome="refused",reason="${reason}"} at 0`,
      );
    }
  });
  it('exports the deliveries refused as another door’s at 0 for every door, and counts one for the door refused', async () => {
    const doors = ['webhook', 'mcp', 'feishu', 'dingtalk', 'wecom'];
    const refused = (samples: Sample[]) =>
      Object.fromEntries(
        doors.map((door) => [
          door,
          samples.find((sample) => sample.name === 'orders_key_source_conflicts_total' && sample.labels.door === door)
            ?.value,
        ]),
      );
    assert.deepEqual(refused(await scrape(ports.api)), Object.fromEntries(doors.map((door) => [door, 0])));
    // A WeCom approval claimed its key; the webhook then sends an approval numbered like it.
    const approvalNo = uniqueApprovalNo('METRIC-SRC');
    const key = idempotencyKeyFor(approvalNo, 'MAIN');
    await service.prisma.idempotencyRecord.create({
      data: {
        idempotentKey: key,
        approvalNo,
        operation: 'MAIN',
        workflowId: `order-${key}`,
        status: 'RECEIVED',
        source: 'wecom',
      },
    });
    const sku = await createSku(service.prisma, 10);
    assert.equal((await sendApproval(api.url, approval(approvalNo, sku))).status, 422);
    assert.deepEqual(refused(await scrape(ports.api)), { webhook: 1, mcp: 0, feishu: 0, dingtalk: 0, wecom: 0 });
  });
  it('exports an OA event connection’s state: 1 while up, 0 while its gateway is away, 1 once back', async () => {
    const connection = async () =>
      (await scrape(ports.api)).find(
        (sample) => sample.name === 'orders_oa_connection_up' && sample.labels.vendor === 'dingtalk',
      )?.value;
    await eventually('orders_oa_connection_up{vendor="dingtalk"} at 1', async () =>
      (await connection()) === 1 ? true : undefined,
    );
    dingtalk.stream.stop();
    await eventually('orders_oa_connection_up{vendor="dingtalk"} at 0', async () =>
      (await connection()) === 0 ? true : undefined,
    );
    dingtalk.stream.start();
    await eventually('orders_oa_connection_up{vendor="dingtalk"} at 1 again', async () =>
      (await connection()) === 1 ? true : undefined,
    );
  });

  it('counts a workflow task that fails, by its reason and workflow type, as the SDK exports it', async () => {
    // A type the worker's bundle does not export: its first task fails (WorkflowError), as a task of
    // code that throws does, and the server gives it again.
    const workflowType = 'metricsTestUnknownWorkflow';
    const handle = await service.temporal.workflow.start(workflowType, {
      taskQueue: service.config.temporal.taskQueue,
      workflowId: `metrics-failing-task-${randomUUID()}`,
    });
    try {
      const failed = await eventually('the worker to count the failed workflow task', async () => {
        const count = total(await scrape(ports.worker), 'temporal_workflow_task_execution_failed_total', {
          failure_reason: 'WorkflowError',
          workflow_type: workflowType,
        });
        return count >= 1 ? count : undefined;
      });
      assert.ok(failed >= 1, `${failed} failures counted`);
    } finally {
      await handle.terminate('the metrics test saw its workflow task fail');
    }
  });

  // After an order (delivered), a refusal, a compensation, a connection and a failed workflow task,
  // the tests above: the series exist.
  it('exports every metric the alert rules and the dashboard query', async () => {
    const [fromApi, fromWorker] = [await scrapeText(ports.api), await scrapeText(ports.worker)];
    const samples = new Set(parseExposition(`${fromApi}\n${fromWorker}`).map((sample) => sample.name));
    const types = new Map([...familyTypes(fromApi), ...familyTypes(fromWorker)]);
    const queries = [
      ...rules().map((rule) => ({ where: `rule ${rule.alert ?? rule.record}`, expr: rule.expr })),
      ...dashboardQueries().map(({ panel, expr }) => ({ where: `panel "${panel}"`, expr })),
    ];
    const read = queries.flatMap(({ where, expr }) => metricNamesIn(expr).map((name) => ({ where, name })));
    // `up` is Prometheus's own; a name with a colon is a recording rule, checked against the rules file.
    const fromService = read.filter(({ name }) => name !== 'up' && !name.includes(':'));
    assert.ok(fromService.length >= 15, `the names read: ${fromService.map(({ name }) => name).join(' ')}`);
    const missing = fromService
      .filter(({ name }) => !exported(name, samples, types))
      .map(({ where, name }) => `${name} (${where})`);
    assert.deepEqual([...new Set(missing)], [], 'queried but on neither endpoint');
  });
});
