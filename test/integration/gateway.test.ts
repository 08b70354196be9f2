// One business request, many deliveries: nginx, run from docs/nginx-gateway.conf, sits in front of
// two API processes and resends a webhook POST to the other instance when the first answers too
// late or dies mid-request; the sender retries on its own on a timeout or a 5xx, with the same
// body. The APIs receive more deliveries than there are approvals, and every approval is still
// exactly one order.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import type { ManagedProcess } from '../../tools/harness/child-process.js';
import { startTcpProxy, type TcpProxy } from '../../tools/harness/tcp-proxy.js';
import {
  findNginx,
  type GatewayLogLine,
  type NginxGateway,
  startNginxGateway,
  webhookReadTimeoutMs,
} from '../../tools/harness/nginx-gateway.js';
import {
  type ApiProcess,
  apiProcess,
  type HttpAnswer,
  processEnv,
  sendApproval,
  workerProcess,
} from '../../tools/harness/processes.js';
import {
  approval,
  type ApprovalBody,
  createSku,
  eventually,
  orderCount,
  startTestService,
  statusReaches,
  stockOf,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const APPROVALS = 50;
/** Senders working at once, as an OA's delivery threads would. */
const LANES = 5;
/** Every fourth approval is delivered twice at once by the OA itself. */
const SENT_TWICE_EVERY = 4;
/** Approvals delivered before the healthy API is killed. */
const BEFORE_THE_KILL = 15;
/** The sender's own HTTP timeout: above one gateway attempt and the slow instance's answer. */
const SENDER_TIMEOUT_MS = 12_000;
const SENDER_PAUSE_MS = 300;
/** How long one approval may take to be accepted through the faults, before the test gives up. */
const SENDER_DEADLINE_MS = 120_000;
const QUANTITY = 2;
const WEBHOOK = '/webhooks/oa/approvals';

const hostPort = (url: string) => new URL(url).host;

/** The attempts that sent the request to an instance (not those whose connection failed first). */
const attemptsThatReachedAnApi = (line: GatewayLogLine) => line.attempts.filter((attempt) => attempt.bytesSent > 0);

/** Requests the gateway sent to a second instance after the first had received them. */
const resentRequests = (lines: GatewayLogLine[]) =>
  lines.filter((line) => line.uri === WEBHOOK && attemptsThatReachedAnApi(line).length > 1);

/** What the sender did: every HTTP request it made, and the answers it got. */
interface SenderFigures {
  requests: number;
  retries: number;
  answers: Map<number, number>;
  inFlight: number;
}

const newSender = (): SenderFigures => ({ requests: 0, retries: 0, answers: new Map(), inFlight: 0 });

/** One delivery as a retrying sender makes it: the same body until a 2xx, a 4xx never resent. */
async function deliverUntilAccepted(
  url: string,
  body: ApprovalBody,
  sender: SenderFigures,
  headers: Record<string, string> = {},
  timeoutMs = SENDER_TIMEOUT_MS,
): Promise<HttpAnswer> {
  const deadline = Date.now() + SENDER_DEADLINE_MS;
  for (;;) {
    sender.requests += 1;
    sender.inFlight += 1;
    const answer = await sendApproval(url, body, { timeoutMs, headers });
    sender.inFlight -= 1;
    sender.answers.set(answer.status, (sender.answers.get(answer.status) ?? 0) + 1);
    if (answer.status >= 200 && answer.status < 300) return answer;
    assert.ok(answer.status === 0 || answer.status >= 500, `a 4xx is never resent: ${JSON.stringify(answer)}`);
    assert.ok(Date.now() < deadline, `${body.approvalNo} was not accepted within ${SENDER_DEADLINE_MS} ms`);
    sender.retries += 1;
    await new Promise((resolve) => setTimeout(resolve, SENDER_PAUSE_MS));
  }
}

describe('a retrying gateway in front of two API instances', () => {
  let service: TestService;
  let apis: [ApiProcess, ApiProcess];
  let worker: ManagedProcess;
  let slow: TcpProxy;
  let gateway: NginxGateway;

  before(async () => {
    findNginx(); // fails the test at once, saying what to install, on a machine without nginx
    service = await startTestService({ inProcessWorker: false });
    const env = processEnv(service.config, { DB_POOL_SIZE: '5', WORKER_MAX_CONCURRENT_ACTIVITIES: '3' });
    apis = [await apiProcess('api-1', env), await apiProcess('api-2', env)];
    worker = workerProcess('worker', env);
    await Promise.all([...apis, worker].map((process) => process.start()));
    // API 1 takes every request at once and answers each only after the gateway gave up on it.
    slow = await startTcpProxy(hostPort(apis[0].url));
    await slow.setMode({ kind: 'delay-replies', ms: webhookReadTimeoutMs() + 2_000 });
    gateway = await startNginxGateway([slow.address, hostPort(apis[1].url)]);
  });
  after(async () => {
    await gateway?.stop();
    await slow?.close();
    await Promise.all([...(apis ?? []), ...(worker ? [worker] : [])].map((process) => process.kill('SIGKILL')));
    await service?.stop();
  });

  it('fifty approvals delivered through a gateway that resends to a slow and a killed instance, and by a sender that resends on its own, are fifty orders', async (t) => {
    const sku = await createSku(service.prisma, 100_000);
    const bodies = Array.from({ length: APPROVALS }, () => approval(uniqueApprovalNo('GATE'), sku));
    const sender = newSender();
    let inFlightAtKill = 0;

    const deliver = (body: ApprovalBody) => deliverUntilAccepted(gateway.url, body, sender);

    /** Delivers approvals `from` to `to` (excluded), LANES at a time. */
    const deliverAll = async (from: number, to: number) => {
      let next = from;
      const lane = async () => {
        for (let i = next++; i < to; i = next++) {
          const body = bodies[i] as ApprovalBody;
          await Promise.all(i % SENT_TWICE_EVERY === 0 ? [deliver(body), deliver(body)] : [deliver(body)]);
        }
      };
      await Promise.all(Array.from({ length: LANES }, lane));
    };
    // First API 1 is slow and API 2 answers: the gateway gives up on API 1's deliveries and
    // resends them to API 2. Then API 2 is killed while deliveries are in flight, and started
    // again: for a while no instance answers in time, and the gateway says so with 502/504.
    await deliverAll(0, BEFORE_THE_KILL);
    const rest = deliverAll(BEFORE_THE_KILL, APPROVALS);
    await eventually('deliveries in flight', () => Promise.resolve(sender.inFlight > 0 ? true : undefined));
    inFlightAtKill = sender.inFlight;
    await apis[1].kill('SIGKILL');
    await apis[1].start();
    await rest;

    // Every order of this test holds its SKU: an order written under any other key than the one
    // the sent approval makes is counted too.
    const ordersOfTheSku = () =>
      service.prisma.orderMain.findMany({ where: { lines: { some: { sku } } }, select: { approvalNo: true } });
    const written = await eventually('every approval to be written', async () => {
      const rows = await ordersOfTheSku();
      return rows.length >= APPROVALS ? rows : undefined;
    });
    const sent = new Set(bodies.map((body) => body.approvalNo));
    const ordersOf = (approvalNo: string) => written.filter((row) => row.approvalNo === approvalNo).length;
    const doubled = [...sent].filter((approvalNo) => ordersOf(approvalNo) > 1);
    const missing = [...sent].filter((approvalNo) => ordersOf(approvalNo) === 0);
    const unknown = written.filter((row) => !sent.has(row.approvalNo)).length;

    const webhookLines = gateway.log().filter((line) => line.uri === WEBHOOK);
    const reached = webhookLines.flatMap(attemptsThatReachedAnApi);
    const resent = resentRequests(webhookLines);
    const byApi = (address: string) => reached.filter((attempt) => attempt.addr === address).length;
    const figures = {
      approvals: APPROVALS,
      deliveriesByTheOa: APPROVALS + Math.ceil(APPROVALS / SENT_TWICE_EVERY),
      senderRequests: sender.requests,
      senderRetries: sender.retries,
      senderAnswers: Object.fromEntries([...sender.answers].sort(([a], [b]) => a - b)),
      senderRequestsInFlightAtKill: inFlightAtKill,
      gatewayRequestsLogged: webhookLines.length,
      gatewayResentToTheOtherInstance: resent.length,
      mostAttemptsForOneRequest: Math.max(...webhookLines.map((line) => line.attempts.length)),
      requestsTheApisReceived: reached.length,
      receivedBySlowApi1: byApi(slow.address),
      receivedByApi2: byApi(hostPort(apis[1].url)),
      cutOffByTheKill: reached.filter((attempt) => attempt.addr === hostPort(apis[1].url) && attempt.status === '502')
        .length,
      ordersWritten: written.length,
      approvalsWithMoreThanOneOrder: doubled.length,
      ordersOfNoApprovalSent: unknown,
      approvalsWithoutAnOrder: missing.length,
    };
    for (const [name, value] of Object.entries(figures)) t.diagnostic(`${name}: ${JSON.stringify(value)}`);

    // Amplification happened, or the rest proves nothing.
    assert.ok(resent.length > 0, 'the gateway resent at least one request an instance had received');
    assert.ok(sender.retries > 0, 'the sender resent at least one request on a timeout or a 5xx');
    assert.ok(reached.length > APPROVALS, 'the APIs received more requests than there are approvals');
    // And it changed nothing: one order per approval.
    assert.deepEqual(doubled, [], 'no approval has two orders');
    assert.equal(unknown, 0, 'no order under an approval number that was never sent');
    assert.deepEqual(missing, [], 'no approval is without its order');
    assert.equal(written.length, APPROVALS);
    assert.equal((await stockOf(service.prisma, sku)).reserved, APPROVALS * QUANTITY, 'stock reserved once per order');
    // What the API tells about each key agrees, and once every run has settled nothing more is written.
    for (const body of bodies) {
      await statusReaches(service, idempotencyKeyFor(body.approvalNo, body.operation), 'SUBMITTED');
    }
    assert.equal((await ordersOfTheSku()).length, APPROVALS);
  });

  it('a sender that asks to wait gets its order number through the gateway from an instance that answers after the webhook read timeout', async (t) => {
    // API 2 is gone: the slow API 1 is the only instance, and it answers only after the webhook
    // location's read timeout. The waiting location's longer one lets the answer through.
    await apis[1].kill('SIGKILL');
    const sender = newSender();
    const body = approval(uniqueApprovalNo('GATEW'), await createSku(service.prisma, 10));
    // A sender that asks to wait allows for it: its own timeout sits above the gateway's waiting
    // location's, so a slow machine cannot turn the first delivery into a resend (answered 200).
    const answer = await deliverUntilAccepted(gateway.url, body, sender, { prefer: 'wait=15' }, 35_000);
    t.diagnostic(`sender answers: ${JSON.stringify(Object.fromEntries(sender.answers))}`);
    assert.equal(answer.status, 201, JSON.stringify(answer));
    assert.equal(typeof answer.body.orderNo, 'string');
    assert.equal(await orderCount(service.prisma, idempotencyKeyFor(body.approvalNo, body.operation)), 1);
  });
});
