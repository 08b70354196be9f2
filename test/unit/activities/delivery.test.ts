// The delivery activity in a mocked activity context, against a real local HTTP server standing in
// for the downstream: what it sends, and how each kind of answer becomes the failure Temporal acts
// on (retried or not, and when). Only answers that end before the record is touched are here: the
// acknowledged delivery records DELIVERED in the database, which test/integration/delivery.test.ts
// proves, as it does `recordDeliveryOutcome`.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type LogEntry } from '@temporalio/worker';
import { buildOrderCreatedEvent, createDeliveryActivities } from '../../../activities/delivery.js';
import type { DownstreamConfig } from '../../../activities/settings.js';
import { BrokerUnroutableError } from '../../../domain/errors.js';
import { eventIdFor } from '../../../domain-node/order-event.js';
import { EVENT_HEADERS, verifySignature } from '../../../domain-node/signature.js';
import type { OrderEventPublisher } from '../../../services/broker/order-event-publisher.js';
import { noProductMetrics } from '../../../services/metrics/product-metrics.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import { testOrder, testPolicy, writtenResult } from '../../../tools/harness/workflow-tests.js';

const SECRET = 'downstream-secret-for-unit-tests';

/** What the downstream received. */
interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** How the downstream answers the next request: a status and headers, or no answer at all. */
type Answer = { status: number; headers?: Record<string, string> } | 'never';

/**
 * The database is not reached on any path of this file: every answer here fails the attempt before
 * the status is recorded. Handed a value that throws on use, so a path that did reach it would end
 * in another failure than the one asserted.
 */
const NO_DATABASE = new Proxy(
  {},
  {
    get: () => {
      throw new Error('the database was reached');
    },
  },
) as PrismaClient;

/** Every line the activity logged, kept rather than printed: failures are the point here. */
const logged: LogEntry[] = [];
const activityContext = (attempt = 1) =>
  new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('TRACE', (entry) => logged.push(entry)) });

describe('the delivery activity', () => {
  let server: Server;
  let url: string;
  const received: Received[] = [];
  let answer: Answer = { status: 200 };
  const held: ServerResponse[] = [];

  before(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        received.push({ headers: request.headers, body });
        if (answer === 'never') {
          held.push(response);
          return;
        }
        response.writeHead(answer.status, answer.headers).end('{"error":"no"}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
  });
  after(async () => {
    for (const response of held) response.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  const downstream = (overrides: Partial<DownstreamConfig> = {}): DownstreamConfig => ({
    url,
    secret: SECRET,
    timeoutMs: 5_000,
    ...overrides,
  });

  /** One attempt of `deliverOrderEvent`; resolves with the ApplicationFailure it ended in. */
  async function failedAttempt(
    options: {
      downstream?: DownstreamConfig;
      publisher?: OrderEventPublisher;
      attempt?: number;
      order?: ReturnType<typeof testOrder>;
      targets?: ('http' | 'broker')[];
    } = {},
  ) {
    const order = options.order ?? testOrder({ policy: testPolicy({ initialIntervalMs: 100, maxIntervalMs: 2_000 }) });
    const { deliverOrderEvent } = createDeliveryActivities({
      prisma: NO_DATABASE,
      downstream: 'downstream' in options ? options.downstream : downstream(),
      publisher: options.publisher,
      metrics: noProductMetrics(),
    });
    const environment = activityContext(options.attempt);
    const written = writtenResult(order, { deliveryTargets: options.targets ?? ['http'] });
    const failure = await environment.run(deliverOrderEvent, { order, written }).then(
      () => assert.fail('the attempt must fail'),
      (error: unknown) => error,
    );
    assert.ok(failure instanceof ApplicationFailure, `an ApplicationFailure, not ${String(failure)}`);
    return { failure, order, written };
  }

  it("posts the order.created event with the order's key, a stable event id and a signature the downstream can check, the same bytes on every attempt", async () => {
    received.length = 0;
    answer = { status: 409 };
    const order = testOrder();
    const first = await failedAttempt({ order, attempt: 1 });
    await failedAttempt({ order, attempt: 2 });
    assert.equal(received.length, 2);
    const [sent, again] = received as [Received, Received];
    assert.equal(sent.headers['idempotency-key'], order.idempotencyKey);
    assert.equal(sent.headers['x-event-id'], eventIdFor(order.idempotencyKey));
    assert.equal(sent.headers['content-type'], 'application/json');
    assert.deepEqual(JSON.parse(sent.body), buildOrderCreatedEvent(order, first.written));
    const check = verifySignature({
      secret: SECRET,
      rawBody: Buffer.from(sent.body),
      toleranceSeconds: 300,
      timestampHeader: sent.headers['x-event-timestamp'] as string,
      signatureHeader: sent.headers['x-event-signature'] as string,
      headers: EVENT_HEADERS,
    });
    assert.deepEqual(check, { ok: true });
    assert.equal(again.body, sent.body);
    assert.equal(again.headers['x-event-id'], sent.headers['x-event-id']);
  });

  it('does not retry an answer the downstream will give again: 4xx refused, 401/403 credentials refused', async () => {
    for (const [status, type] of [
      [400, 'DownstreamRejected'],
      [409, 'DownstreamRejected'],
      [401, 'DownstreamAuthFailed'],
      [403, 'DownstreamAuthFailed'],
    ] as const) {
      answer = { status };
      const { failure } = await failedAttempt({ attempt: 2 });
      assert.equal(failure.type, type, `${status}`);
      assert.equal(failure.nonRetryable, true, `${status}`);
      assert.equal(failure.nextRetryDelay, undefined, `${status}`);
      assert.match(failure.message, new RegExp(`^downstream answered ${status}`));
      assert.deepEqual((failure.details?.[0] as { attempt: number }).attempt, 2);
    }
  });

  it("retries a 5xx after a jittered backoff no longer than the policy's maximum interval", async () => {
    answer = { status: 503 };
    for (const attempt of [1, 2, 5]) {
      const { failure } = await failedAttempt({ attempt });
      assert.equal(failure.type, 'DownstreamUnavailable');
      assert.equal(failure.nonRetryable, false);
      const delay = Number(failure.nextRetryDelay);
      assert.ok(delay > 0 && delay <= 2_000, `attempt ${attempt}: ${delay} ms`);
    }
  });

  it("retries a 429 after the Retry-After the downstream asked for, capped at the policy's maximum interval", async () => {
    answer = { status: 429, headers: { 'retry-after': '1' } };
    const asked = await failedAttempt();
    assert.equal(asked.failure.type, 'DownstreamRateLimited');
    assert.equal(Number(asked.failure.nextRetryDelay), 1_000);
    answer = { status: 429, headers: { 'retry-after': '3600' } };
    const capped = await failedAttempt();
    assert.equal(Number(capped.failure.nextRetryDelay), 2_000);
  });

  it('gives up on an attempt the downstream does not answer within its timeout, and retries it', async () => {
    answer = 'never';
    const { failure } = await failedAttempt({ downstream: downstream({ timeoutMs: 200 }) });
    assert.equal(failure.type, 'DownstreamTimeout');
    assert.equal(failure.nonRetryable, false);
    assert.match(failure.message, /did not answer within 200 ms/);
  });

  it('sends nothing when this worker lacks a target the order was written for, and leaves it to a worker that has it', async () => {
    received.length = 0;
    answer = { status: 200 };
    const { failure } = await failedAttempt({ targets: ['http', 'broker'] });
    assert.equal(failure.type, 'DeliveryTargetMissing');
    assert.equal(failure.nonRetryable, false);
    assert.match(failure.message, /this worker has no AMQP_URL/);
    assert.equal(received.length, 0);
  });

  it('refuses every attempt on a worker with neither a downstream nor a broker', async () => {
    const { failure } = await failedAttempt({ downstream: undefined, targets: [] });
    assert.equal(failure.nonRetryable, true);
    assert.match(failure.message, /neither DOWNSTREAM_URL nor AMQP_URL is configured/);
  });

  it('ends an attempt not retried when the broker returned the message, though the HTTP downstream only failed for now', async () => {
    answer = { status: 503 };
    const published: string[] = [];
    const publisher: OrderEventPublisher = {
      exchange: 'orders',
      publish: () => Promise.reject(new BrokerUnroutableError('orders', 'order.created', 312, 'NO_ROUTE')),
      close: async () => {},
    };
    const metrics = { ...noProductMetrics(), brokerPublished: (outcome: string) => published.push(outcome) };
    const order = testOrder();
    const { deliverOrderEvent } = createDeliveryActivities({
      prisma: NO_DATABASE,
      downstream: downstream(),
      publisher,
      metrics,
    });
    const failure = await activityContext()
      .run(deliverOrderEvent, { order, written: writtenResult(order, { deliveryTargets: ['http', 'broker'] }) })
      .catch((error: unknown) => error);
    assert.ok(failure instanceof ApplicationFailure);
    assert.equal(failure.type, 'BrokerUnroutable');
    assert.equal(failure.nonRetryable, true);
    assert.deepEqual(published, ['BrokerUnroutable']);
  });

  it('never writes the signing secret into a log line, whatever the answer', () => {
    assert.ok(logged.length > 0, 'the activity logged');
    const leaked = logged.filter((entry) => JSON.stringify([entry.message, entry.meta]).includes(SECRET));
    assert.deepEqual(leaked, []);
  });
});
