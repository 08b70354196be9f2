// What the explorer's commands act on: the model (what the service promised so far, per key) and
// the real world (the stack, this run's fresh approval numbers, every HTTP answer seen).
import { Client as McpClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { compensationWorkflowIdFor, idempotencyKeyFor, orderWorkflowIdFor } from '../../domain/idempotency-key.js';
import { isReceiptOf } from '../../domain/approval-receipts.js';
import { waitingEpisode } from '../../domain-node/decision-card-keys.js';
import { signBody } from '../../domain-node/signature.js';
import { listOrdersAwaitingDecision } from '../../submission/operator-decisions/awaiting.js';
import { receiptsToPost } from '../../services/db/approval-receipts.js';
import { sleep } from '../harness/time.js';
import {
  CARD_OPERATOR,
  DECISION_CHAT,
  INTAKE_MAX_IN_FLIGHT,
  MCP_TOKEN,
  REFUSED_CUSTOMER,
  SCARCE_SKU,
  SKUS,
  runProgram,
  type Stack,
  TASK_QUEUE,
  WEBHOOK_SECRET,
  WECOM_AES_KEY,
  WECOM_TOKEN,
} from './stack.js';
import {
  wecomApprovalXml,
  wecomCallback,
  wecomMoney,
  wecomNumber,
  wecomTable,
  wecomText,
} from '../harness/fake-wecom.js';
import { dingtalkStreamApproval } from '../harness/fake-dingtalk.js';
import { approvedFeishuInstance, feishuApprovalPayload, feishuCardClickPayload } from '../harness/fake-feishu.js';
import { decidedInTwoWaits, decisionRecorded } from '../harness/decision-records.js';

/** How long Feishu holds a receipt comment's answer: longer than the poster's request timeout (10 s). */
const RECEIPT_ANSWER_LOST_MS = 12_000;

/** One MCP session per stack, opened on first use. */
const mcpSessions = new WeakMap<Stack, Promise<McpClient>>();

export type SlotKind = 'plain' | 'refused' | 'scarce';

/** The keys one run plays with: few, so deliveries, faults and operators meet on the same key. */
export interface Slot {
  approval: string;
  operation: 'MAIN' | 'SUPPLEMENT';
  kind: SlotKind;
}

export const SLOTS: readonly Slot[] = [
  { approval: 'A', operation: 'MAIN', kind: 'plain' },
  { approval: 'A', operation: 'SUPPLEMENT', kind: 'plain' },
  { approval: 'B', operation: 'MAIN', kind: 'refused' },
  { approval: 'C', operation: 'MAIN', kind: 'scarce' },
];

export function slotLabel(slot: number): string {
  const { approval, operation, kind } = SLOTS[slot] as Slot;
  const note = kind === 'refused' ? ' (downstream refuses it)' : kind === 'scarce' ? ' (exceeds stock)' : '';
  return `${approval}:${operation}${note}`;
}

/** What the service promised about one key, as far as the explorer saw. */
export interface KeyModel {
  answers202: number;
  answered2xx: boolean;
  /** An operator's abandon was answered as done. */
  abandoned: boolean;
  /**
   * The latest run of `order-<key>` when the abandon was answered (undefined: none in Temporal).
   * Any other run seen later was started after the abandon: the key was opened again.
   */
  runAtAbandon?: string | undefined;
  /** Its record was purged by the retention purge. */
  purged: boolean;
  /**
   * A start of this key was sent to Temporal and its answer never came back. No exemption: the
   * sender heard no 202 then, so the delivery that later finds the run must be the one 202.
   */
  startAnswerLost: boolean;
  /**
   * An OA connector claimed the key (its record's source is `wecom`, `feishu` or `dingtalk`): the
   * vendor hears 200 (WeCom) or an ack (Feishu's long connection, DingTalk's Stream) by its
   * protocol, so its one first delivery is
   * no 202 the explorer sees, and a webhook or MCP delivery of the same approval is refused as
   * another door's (422), before its form is read and after (docs/architecture.md, decision 38).
   */
  connectorClaimed: boolean;
  /** Its write may have failed for good (it exceeds stock, or met a dead database): an operator may decide. */
  mayCompensate: boolean;
  /**
   * Seen FAILED or COMPENSATED without an order, and no operator has acted on it since: its story
   * ended, and only an operator (resubmit, recompensate) may open it again.
   */
  endedUnwritten: boolean;
}

export interface Model {
  keys: Map<number, KeyModel>;
}

export class InvariantViolation extends Error {
  constructor(
    readonly invariant: string,
    detail: string,
  ) {
    super(`${invariant}: ${detail}`);
    this.name = 'InvariantViolation';
  }
}

export interface Answer {
  status: number;
  contentType: string;
  body: string;
  /** The most of this world's requests that were out at once while this one was. */
  peakInFlight?: number;
}

/** A 503 the API may give without a fault: it shed the delivery, beyond its INTAKE_MAX_IN_FLIGHT. */
const shedBeyondTheCap = (answer: Answer) =>
  answer.status === 503 &&
  answer.body.includes('/problems/overloaded') &&
  (answer.peakInFlight ?? 0) > INTAKE_MAX_IN_FLIGHT;

export const MALFORMED_PRICES = ['12,50', '1e3', '-1', '', ' 1.00'] as const;

export type Payload = { kind: 'right' } | { kind: 'conflicting' } | { kind: 'malformed-price'; unitPrice: string };
const RIGHT_PAYLOAD: Payload = { kind: 'right' };

/** The real side of one fc run: the stack and this run's own approval numbers. */
export class World {
  /** Fault in force right now: 503 is an allowed answer only then, or beyond the intake's cap. */
  temporalFault = false;
  readonly steps: string[] = [];
  /** The requests to the API out now, each with the most that were out at once during its life. */
  private readonly outstanding = new Set<{ peak: number }>();

  constructor(
    readonly stack: Stack,
    readonly prefix: string,
    readonly counts: Map<string, number>,
    readonly cliCommands: ReadonlySet<string>,
  ) {}

  keyOf(slot: number): string {
    const { approval, operation } = SLOTS[slot] as Slot;
    return idempotencyKeyFor(`${this.prefix}${approval}`, operation);
  }

  allKeys(): string[] {
    return SLOTS.map((_, slot) => this.keyOf(slot));
  }

  /** Closes the stack's MCP session, if one was opened. */
  /** Closes the stack's MCP session, if one was opened; the next MCP step opens another. */
  static async closeMcp(stack: Stack): Promise<void> {
    const session = mcpSessions.get(stack);
    mcpSessions.delete(stack);
    if (session) await (await session.catch(() => undefined))?.close();
  }

  /** With EXPLORE_TRACE=1: what each step saw, on stderr. */
  trace(line: string): void {
    if (process.env.EXPLORE_TRACE === '1') process.stderr.write(`  [trace ${this.prefix}] ${line}\n`);
  }

  count(kind: string): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  /** The slot's order as the webhook sends it (the right payload). */
  orderOf(slot: number): { customerId: string; lines: { sku: string; quantity: number; unitPrice: string }[] } {
    return (JSON.parse(this.bodyOf(slot, RIGHT_PAYLOAD)) as { order: ReturnType<World['orderOf']> }).order;
  }

  bodyOf(slot: number, payload: Payload): string {
    const { approval, operation, kind } = SLOTS[slot] as Slot;
    const lines =
      kind === 'scarce'
        ? [{ sku: SCARCE_SKU, quantity: 1000, unitPrice: '1.00' }]
        : kind === 'refused'
          ? [{ sku: SKUS[2] as string, quantity: 1, unitPrice: '7.25' }]
          : [
              { sku: SKUS[0] as string, quantity: 2, unitPrice: '12.50' },
              { sku: SKUS[1] as string, quantity: 1, unitPrice: '3.00' },
            ];
    if (payload.kind === 'conflicting') (lines[0] as { quantity: number }).quantity += 1;
    if (payload.kind === 'malformed-price') (lines[0] as { unitPrice: string }).unitPrice = payload.unitPrice;
    return JSON.stringify({
      approvalNo: `${this.prefix}${approval}`,
      operation,
      approvedAt: '2026-11-29T10:00:00+08:00',
      order: { customerId: kind === 'refused' ? REFUSED_CUSTOMER : 'CUST-EXPLORER', currency: 'CNY', lines },
    });
  }

  /** One signed webhook delivery; the answer is checked against the contract on the spot. */
  async deliver(model: Model, slot: number, payload: Payload): Promise<Answer> {
    const body = this.bodyOf(slot, payload);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const faultAtSend = this.temporalFault;
    const answer = await this.post(`${this.stack.apiUrl}/webhooks/oa/approvals`, slotLabel(slot), {
      headers: {
        'content-type': 'application/json',
        'x-oa-timestamp': timestamp,
        'x-oa-signature': signBody(WEBHOOK_SECRET, timestamp, body),
      },
      body,
    });
    this.trace(`${slotLabel(slot)} ${payload.kind}: ${answer.status} ${answer.body.slice(0, 160)}`);
    this.judge(model, slot, payload, answer, faultAtSend || this.temporalFault);
    return answer;
  }

  /** One POST to the API; no answer at all breaks the first promise. */
  private async post(
    url: string,
    what: string,
    init: { headers: Record<string, string>; body: string | Buffer },
  ): Promise<Answer> {
    const life = { peak: 0 };
    this.outstanding.add(life);
    for (const request of this.outstanding) request.peak = Math.max(request.peak, this.outstanding.size);
    try {
      const response = await fetch(url, { method: 'POST', ...init, signal: AbortSignal.timeout(30_000) });
      const answer: Answer = {
        status: response.status,
        contentType: response.headers.get('content-type') ?? '',
        body: await response.text(),
        peakInFlight: life.peak,
      };
      // Counted, so a run's summary shows the shedding was met at all.
      if (shedBeyondTheCap(answer)) this.count('(a delivery shed beyond the intake cap)');
      return answer;
    } catch (error) {
      throw new InvariantViolation('every delivery gets an answer', `${what}: ${String(error)}`);
    } finally {
      this.outstanding.delete(life);
    }
  }

  /**
   * The same approval through the MCP tool `submit_approved_order`. Its answer maps onto the
   * webhook's: a start is a 202, `duplicate: true` a 200, a tool error a refusal.
   */
  async deliverMcp(model: Model, slot: number): Promise<Answer> {
    let session = mcpSessions.get(this.stack);
    if (!session) {
      session = (async () => {
        const client = new McpClient({ name: 'explorer', version: '1.0.0' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${this.stack.apiUrl}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${MCP_TOKEN}` } },
          }),
        );
        return client;
      })();
      mcpSessions.set(this.stack, session);
    }
    const faultAtSend = this.temporalFault;
    let answer: Answer;
    try {
      const result = (await (
        await session
      ).callTool({
        name: 'submit_approved_order',
        arguments: JSON.parse(this.bodyOf(slot, RIGHT_PAYLOAD)) as Record<string, unknown>,
      })) as { isError?: boolean; content: { text?: string }[]; structuredContent?: { duplicate?: boolean } };
      const text = result.content.map((part) => part.text ?? '').join('\n');
      answer = result.isError
        ? { status: /conflict/i.test(text) ? 422 : 503, contentType: 'application/problem+json', body: text }
        : { status: result.structuredContent?.duplicate ? 200 : 202, contentType: 'application/json', body: text };
    } catch (error) {
      throw new InvariantViolation('every delivery gets an answer', `${slotLabel(slot)} over MCP: ${String(error)}`);
    }
    this.judge(model, slot, RIGHT_PAYLOAD, answer, faultAtSend || this.temporalFault, ' over MCP');
    return answer;
  }

  /**
   * The same approval through the WeCom connector: the form the fake WeCom API answers holds the
   * slot's order, and the callback is signed and encrypted as WeCom sends it. Only MAIN keys: an
   * OA instance is one approval. The answer is WeCom's empty 200, or 503 while Temporal is down.
   */
  async deliverConnector(model: Model, slot: number): Promise<Answer> {
    const { approval } = SLOTS[slot] as Slot;
    const spNo = `${this.prefix}${approval}`;
    const order = this.orderOf(slot);
    this.stack.wecom.register(spNo, {
      spStatus: 2,
      decidedAt: Math.floor(Date.now() / 1000),
      contents: [
        wecomText('Customer ID', order.customerId),
        wecomTable(
          '明细',
          order.lines.map((line) => [
            wecomText('物料编码', line.sku),
            wecomNumber('数量', line.quantity),
            wecomMoney('单价', line.unitPrice),
          ]),
        ),
      ],
    });
    const crypto = { token: WECOM_TOKEN, encodingAesKey: WECOM_AES_KEY, corpId: this.stack.wecom.corpId };
    const callback = wecomCallback(wecomApprovalXml({ corpId: crypto.corpId, spNo, spStatus: 2 }), crypto);
    const faultAtSend = this.temporalFault;
    const answer = await this.post(
      `${this.stack.apiUrl}/webhooks/wecom?${new URLSearchParams(callback.query).toString()}`,
      `${slotLabel(slot)} via WeCom`,
      { headers: callback.headers, body: callback.rawBody },
    );
    this.trace(`${slotLabel(slot)} via WeCom: ${answer.status} ${answer.body.slice(0, 160)}`);
    const where = `${slotLabel(slot)} via WeCom answered ${answer.status} ${answer.body.slice(0, 200)}`;
    if (answer.status === 503 && !(faultAtSend || this.temporalFault || shedBeyondTheCap(answer))) {
      throw new InvariantViolation('503 only while Temporal is unreachable, or beyond the intake cap', where);
    }
    if (answer.status !== 503 && (answer.status !== 200 || answer.body !== '')) {
      throw new InvariantViolation('an authentic WeCom callback is acknowledged with an empty 200', where);
    }
    await this.noteConnectorClaim(model, slot, 'wecom');
    return answer;
  }

  /**
   * The same approval pushed over Feishu's long connection, which the API holds: the form the fake
   * Feishu API answers holds the slot's order. With `loseAck` the connection drops as the ack comes
   * back, and Feishu sends the event again on the next connection. It must be acknowledged 200 in
   * the end — only once the key is claimed, so after a Temporal fault too (the claim needs none).
   */
  async deliverLongConnection(model: Model, slot: number, loseAck: boolean): Promise<void> {
    const { approval } = SLOTS[slot] as Slot;
    const instanceCode = `${this.prefix}${approval}`;
    this.stack.feishu.register(instanceCode, approvedFeishuInstance(this.orderOf(slot)));
    const longConnection = this.stack.feishu.longConnection;
    const where = `${slotLabel(slot)} over Feishu's long connection${loseAck ? ' (its first ack lost)' : ''}`;
    try {
      const pushed = await longConnection.push(feishuApprovalPayload({ instanceCode, status: 'APPROVED' }), {
        loseAck,
      });
      const ack = await longConnection.acknowledged(pushed, 30_000);
      this.trace(`${where}: acked ${ack.code} after ${longConnection.deliveries(pushed)} deliveries`);
    } catch (error) {
      throw new InvariantViolation(
        'an approval pushed over the long connection is acknowledged',
        `${where}: ${String(error)}`,
      );
    }
    await this.noteConnectorClaim(model, slot, 'feishu', {
      promise: 'an approval pushed over the long connection is acknowledged only once claimed',
      where,
    });
  }

  /**
   * The same approval pushed over DingTalk's Stream, which the API holds: the form the fake DingTalk
   * API answers holds the slot's order. With `loseAck` the first acknowledgement is lost with its
   * connection, and DingTalk pushes the event again on the next one. It must be acknowledged
   * SUCCESS in the end — only once the key is claimed, so after a Temporal fault too.
   */
  async deliverStream(model: Model, slot: number, loseAck: boolean): Promise<void> {
    const { approval } = SLOTS[slot] as Slot;
    const processInstanceId = `${this.prefix}${approval}`;
    const order = this.orderOf(slot);
    this.stack.dingtalk.register(processInstanceId, {
      status: 'COMPLETED',
      result: 'agree',
      finishTime: new Date().toISOString(),
      formComponentValues: [
        { name: 'Customer ID', componentType: 'TextField', value: order.customerId },
        {
          name: '明细',
          componentType: 'TableField',
          value: JSON.stringify(
            order.lines.map((line) => ({
              rowValue: [
                { label: '物料编码', value: line.sku },
                { label: '数量', value: String(line.quantity) },
                { label: '单价', value: line.unitPrice },
              ],
            })),
          ),
        },
      ],
    });
    const stream = this.stack.dingtalk.stream;
    const where = `${slotLabel(slot)} over DingTalk's Stream${loseAck ? ' (its first ack lost)' : ''}`;
    if (loseAck) stream.loseNextAck();
    const eventId = stream.push(dingtalkStreamApproval({ processInstanceId, type: 'finish', result: 'agree' }));
    const deadline = Date.now() + 30_000;
    while (!stream.acks(eventId).some((ack) => ack.status === 'SUCCESS')) {
      if (Date.now() > deadline) {
        throw new InvariantViolation(
          'an approval pushed over the Stream is acknowledged SUCCESS',
          `${where}: acks ${JSON.stringify(stream.acks(eventId))} after ${stream.deliveries(eventId)} deliveries`,
        );
      }
      await sleep(50);
    }
    this.trace(`${where}: SUCCESS after ${stream.deliveries(eventId)} deliveries`);
    await this.noteConnectorClaim(model, slot, 'dingtalk', {
      promise: 'an approval pushed over the Stream is acknowledged only once claimed',
      where,
    });
  }

  /**
   * Which door claimed the slot's key: one a connector claimed first holds the connector's own
   * copy of the order, which may end in compensation when its stock is scarce. A door that
   * acknowledges only once claimed passes `unclaimed`, the promise an unclaimed key breaks.
   */
  private async noteConnectorClaim(
    model: Model,
    slot: number,
    source: 'wecom' | 'feishu' | 'dingtalk',
    unclaimed?: { promise: string; where: string },
  ): Promise<void> {
    const record = await this.stack.orders.idempotencyRecord.findUnique({
      where: { idempotentKey: this.keyOf(slot) },
      select: { source: true },
    });
    if (!record && unclaimed) throw new InvariantViolation(unclaimed.promise, unclaimed.where);
    if (record?.source !== source) return;
    const state = keyModel(model, slot);
    state.connectorClaimed = true;
    if (SLOTS[slot]?.kind === 'scarce') state.mayCompensate = true;
  }

  private judge(model: Model, slot: number, payload: Payload, answer: Answer, faultActive: boolean, via = ''): void {
    const where = `${slotLabel(slot)}${via} (${payload.kind}${payload.kind === 'malformed-price' ? ` ${JSON.stringify(payload.unitPrice)}` : ''}) answered ${answer.status} ${answer.body.slice(0, 200)}`;
    if (![200, 202, 400, 422, 503].includes(answer.status)) {
      throw new InvariantViolation('answers are ones the contract lists', where);
    }
    if (answer.status >= 400 && !answer.contentType.startsWith('application/problem+json')) {
      throw new InvariantViolation('errors are problem+json', where);
    }
    if (answer.status === 503 && !faultActive && !shedBeyondTheCap(answer)) {
      throw new InvariantViolation('503 only while Temporal is unreachable, or beyond the intake cap', where);
    }
    if (payload.kind === 'malformed-price' && answer.status !== 400) {
      throw new InvariantViolation('a malformed unitPrice is refused with 400', where);
    }
    const state = keyModel(model, slot);
    // The connector's key belongs to its OA: the webhook's and MCP's copies are refused, whatever
    // the form it read names (decision 38).
    const anotherSourceHolds = answer.status === 422 && state.connectorClaimed;
    if (payload.kind === 'right' && (answer.status === 400 || answer.status === 422) && !anotherSourceHolds) {
      throw new InvariantViolation('the right payload is never refused', where);
    }
    if (payload.kind === 'conflicting' && state.answered2xx && answer.status !== 422) {
      throw new InvariantViolation('a conflicting payload under a known key is refused with 422', where);
    }
    if (payload.kind === 'right' && (answer.status === 200 || answer.status === 202)) {
      state.answered2xx = true;
      if (SLOTS[slot]?.kind === 'scarce') state.mayCompensate = true;
      if (answer.status === 202) state.answers202 += 1;
      if (state.answers202 > 1) throw new InvariantViolation('at most one 202 per key, ever', where);
    }
  }

  /**
   * Ends a Temporal fault: the proxy passes again, and the fault counts as over once the API's own
   * health check reaches Temporal (its channel reconnects with a backoff of its own).
   */
  async endTemporalFault(): Promise<void> {
    await this.stack.temporalProxy.setMode({ kind: 'pass' });
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const health = await fetch(`${this.stack.apiUrl}/healthz`).then(
        (response) => response.json() as Promise<{ temporal?: string }>,
        () => ({ temporal: 'unreachable' }),
      );
      if (health.temporal === 'ok') break;
      await sleep(200);
    }
    this.temporalFault = false;
  }

  /** `orders-cli <args> --json` against the stack: exit code and parsed output. */
  async cli(args: string[]): Promise<{ code: number; data: unknown; stderr: string }> {
    const result = await runProgram(process.execPath, [...this.stack.cliArgs, ...args, '--json'], this.stack.cliEnv);
    let data: unknown;
    try {
      data = JSON.parse(result.stdout);
    } catch {
      data = result.stdout;
    }
    return { code: result.code, data, stderr: result.stderr };
  }

  async statusOf(slot: number): Promise<string | undefined> {
    const record = await this.stack.orders.idempotencyRecord.findUnique({
      where: { idempotentKey: this.keyOf(slot) },
      select: { status: true },
    });
    return record?.status;
  }

  /** Waits (bounded) until the key's record is in one of `statuses`; answers the last one seen. */
  async waitForStatus(slot: number, statuses: string[], timeoutMs: number): Promise<string | undefined> {
    const deadline = Date.now() + timeoutMs;
    let status = await this.statusOf(slot);
    while (!statuses.includes(status ?? '') && Date.now() < deadline) {
      await sleep(250);
      status = await this.statusOf(slot);
    }
    return status;
  }

  /** RUNNING, COMPLETED, FAILED, … of the latest run, or undefined when Temporal knows none. */
  async workflowStatus(workflowId: string): Promise<string | undefined> {
    try {
      return (await this.stack.temporal.workflow.getHandle(workflowId).describe()).status.name;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
  }

  /** The run id of the latest run, or undefined when Temporal knows none. */
  async latestRunId(workflowId: string): Promise<string | undefined> {
    try {
      return (await this.stack.temporal.workflow.getHandle(workflowId).describe()).runId;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    }
  }

  /**
   * The wait a key is in, as the awaiting list says (its state and since when); a key that waits
   * for nobody: the state it is in and since when, the wait of an old card. Undefined: no record.
   */
  async waitOf(slot: number): Promise<{ state: string; since: string } | undefined> {
    const key = this.keyOf(slot);
    const [waiting] = await listOrdersAwaitingDecision(this.stack.orders, 10, { idempotencyKey: key });
    if (waiting) return { state: waiting.status, since: waiting.waitingSince };
    const record = await this.stack.orders.idempotencyRecord.findUnique({ where: { idempotentKey: key } });
    return record ? { state: record.status, since: record.updatedAt.toISOString() } : undefined;
  }

  /** A click on the Feishu card of the key's `wait`, by its operator, over the long connection: the toast it is answered with. */
  async clickCard(slot: number, wait: { state: string; since: string }, decision: string): Promise<{ toast: string }> {
    const longConnection = this.stack.feishu.longConnection;
    const button = { idempotencyKey: this.keyOf(slot), episode: waitingEpisode(wait.state, wait.since), decision };
    const pushed = await longConnection.push(
      feishuCardClickPayload({
        appId: this.stack.feishu.appId,
        openId: CARD_OPERATOR,
        button,
        chatId: DECISION_CHAT,
        messageId: `om_${this.prefix}`,
      }),
    );
    try {
      const ack = await longConnection.acknowledged(pushed, 30_000);
      const toast = (ack.data as { toast?: { content?: unknown } } | undefined)?.toast?.content;
      return { toast: typeof toast === 'string' ? toast : '' };
    } catch (error) {
      throw new InvariantViolation(
        'a click on a decision card is answered',
        `${slotLabel(slot)}'s card ${decision}: ${String(error)}`,
      );
    }
  }

  /** Whether the card's operator's decision on the key's `wait` is recorded, looked for up to 20 s. */
  cardDecided(slot: number, wait: { since: string }): Promise<boolean> {
    return decisionRecorded(this.stack.orders, this.keyOf(slot), new Date(wait.since), `card:feishu:${CARD_OPERATOR}`);
  }

  /** Whether the key's waits since `wait` were decided once by the card's operator and once by someone else, each its own wait. */
  decidedInTwoWaits(slot: number, wait: { since: string }): Promise<boolean> {
    return decidedInTwoWaits(
      this.stack.orders,
      this.keyOf(slot),
      new Date(wait.since),
      (by) => !by.startsWith('card:'),
    );
  }

  /** Runs the receipts' scan once, on the worker's task queue; a scan Temporal did not finish is left to the next. */
  async scanReceipts(): Promise<void> {
    try {
      const scanned: unknown = await this.stack.temporal.workflow.execute('approvalReceiptScanWorkflow', {
        taskQueue: TASK_QUEUE,
        workflowId: `receipt-scan-${this.prefix}-${this.steps.length}`,
        workflowExecutionTimeout: '60 seconds',
      });
      this.trace(`receipts' scan: ${JSON.stringify(scanned)}; receipts ${JSON.stringify([...this.receiptsPerKey()])}`);
    } catch (error) {
      this.trace(`receipts' scan: ${String(error)}`);
    }
  }

  /**
   * Runs the receipts' scan with Feishu creating the run's receipt comment but answering it only
   * after the poster's request timed out (the post landed, its answer lost), then waits — bounded —
   * until that receipt's fate is settled: its retry, ten seconds on, found the comment (or, with
   * the look broken, posted another) and its record is written.
   */
  async scanReceiptsAnswerLost(): Promise<void> {
    const comments = this.stack.feishu.comments;
    // A Feishu order of the run whose receipt is due, as the scan will find it — waited for while a
    // Feishu key of the run is still being written (slow on a loaded machine). None: the scan posts
    // nothing, and the step does nothing.
    const due = Date.now() + 30_000;
    let instanceId: string | undefined;
    while (Date.now() < due) {
      const pending = await receiptsToPost(this.stack.orders, {
        vendors: ['feishu'],
        since: new Date(Date.now() - 3_600_000),
        limit: 1_000,
      });
      // The run's own receipt: one left due by an earlier run or exploration takes no fault.
      instanceId = pending.find((receipt) => receipt.instanceId.startsWith(this.prefix))?.instanceId;
      if (instanceId) break;
      const writing = await this.stack.orders.idempotencyRecord.count({
        where: { approvalNo: { startsWith: this.prefix }, source: 'feishu', status: 'RECEIVED' },
      });
      if (writing === 0) break;
      await sleep(300);
    }
    if (!instanceId) {
      await this.scanReceipts();
      return;
    }
    const lost = instanceId;
    comments.scriptPosts([{ kind: 'answer-after', ms: RECEIPT_ANSWER_LOST_MS, instanceId: lost }]);
    try {
      await this.scanReceipts();
      const posted = Date.now() + 15_000;
      while (comments.commentsOn(lost).length === 0 && Date.now() < posted) await sleep(200);
      if (comments.commentsOn(lost).length === 0) return;
      const settled = Date.now() + 60_000;
      while (Date.now() < settled) {
        const keys = [...this.receiptsPerKey()].filter(([, count]) => count > 0).map(([key]) => key);
        const recorded = await this.stack.orders.approvalReceipt.count({ where: { idempotentKey: { in: keys } } });
        if (recorded === keys.length) break;
        await sleep(500);
      }
      this.trace(`receipts after the lost answer: ${JSON.stringify([...this.receiptsPerKey()])}`);
    } finally {
      comments.scriptPosts([]);
    }
  }

  /**
   * How many receipts each key of the run has in the vendors: comments on its Feishu and DingTalk
   * instances, and the WeCom applicant's messages, that carry the key's receipt.
   */
  receiptsPerKey(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const [slot, { approval }] of SLOTS.entries()) {
      const key = this.keyOf(slot);
      const instance = `${this.prefix}${approval}`;
      const texts = [
        ...this.stack.feishu.comments.commentsOn(instance).map((comment) => comment.text),
        ...this.stack.dingtalk.commentsOn(instance).map((comment) => comment.text),
        ...this.stack.wecom.messagesTo('applicant-1').map((message) => message.content),
      ];
      counts.set(key, texts.filter((text) => isReceiptOf(text, key)).length);
    }
    return counts;
  }

  orderWorkflow(slot: number): string {
    return orderWorkflowIdFor(this.keyOf(slot));
  }

  compensationWorkflow(slot: number): string {
    return compensationWorkflowIdFor(this.keyOf(slot));
  }
}

export function keyModel(model: Model, slot: number): KeyModel {
  let state = model.keys.get(slot);
  if (!state) {
    state = {
      answers202: 0,
      answered2xx: false,
      abandoned: false,
      purged: false,
      startAnswerLost: false,
      connectorClaimed: false,
      mayCompensate: false,
      endedUnwritten: false,
    };
    model.keys.set(slot, state);
  }
  return state;
}
