// The decision cards' activities in a mocked activity context, the database and Temporal stood in
// for: a card tells the classified cause of every waiting state (never the recorded error's words),
// a scan starts one card workflow per vendor and episode and asks Temporal nothing for the episodes
// it already knows, and each post and redraw is counted by its vendor and result. What the cards do
// against a real stack and the fake Feishu is proven by test/integration/decision-cards.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createDecisionCardActivities, type decisionCardDatabase } from '../../../activities/decision-cards.js';
import type { CardOutcome, DecisionCard } from '../../../domain/decision-cards.js';
import type { OaVendor } from '../../../domain/oa-approval.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import { noProductMetrics, type ProductMetrics } from '../../../services/metrics/product-metrics.js';
import type { AwaitingDecision, AwaitingStatus } from '../../../submission/operator-decisions/awaiting.js';
import type { DecisionCardSender, PostedCard } from '../../../vendors/decision-cards.js';
import type { DecisionCardInput } from '../../../workflows/definitions.js';

const DATABASE = { database: 'the cards' } as unknown as PrismaClient;

/** A key waiting in `status`, its recorded reason carrying words no outsider may read. */
function waiting(status: AwaitingStatus, key: string, reason: string): AwaitingDecision {
  return {
    idempotencyKey: key,
    workflowId: `order-${key}`,
    approvalNo: key,
    operation: 'MAIN',
    customerId: 'CUST-1',
    currency: 'CNY',
    totalAmount: '21.00',
    reason,
    attempts: 1,
    waitingSince: '2026-12-06T08:00:00.000Z',
    status,
    nextActions: status === 'DELIVERY_FAILED' ? ['redeliver', 'mark-handled'] : ['resubmit', 'abandon'],
  };
}

const WAITING = [
  waiting('COMPENSATING', 'APPROVAL:A-1:MAIN', 'InsufficientStock: SKU-9 has 1 of 2 at warehouse secret-wh'),
  waiting('KEY_SOURCE_CONFLICT', 'APPROVAL:A-2:MAIN', 'feishu refused: held by webhook (caller 10.0.0.7)'),
  waiting('RECEIVED', 'APPROVAL:A-3:MAIN', 'TemporalUnavailable: connect ECONNREFUSED 10.0.0.8:7233'),
  waiting('DELIVERY_FAILED', 'APPROVAL:A-4:MAIN', 'DownstreamRejected: 422 from https://erp.internal/orders'),
];

/** A Temporal client whose start records what it was asked; `existing` ids answer "already started". */
function temporalStub(existing: ReadonlySet<string> = new Set()) {
  const starts: { workflowId: string; input: DecisionCardInput }[] = [];
  const client = {
    workflow: {
      start: (_type: string, options: { workflowId: string; args: [DecisionCardInput] }) => {
        starts.push({ workflowId: options.workflowId, input: options.args[0] });
        if (existing.has(options.workflowId)) {
          return Promise.reject(new WorkflowExecutionAlreadyStartedError('started', options.workflowId, 'card'));
        }
        return Promise.resolve({ workflowId: options.workflowId });
      },
    },
  } as unknown as Client;
  return { client, starts };
}

const database: typeof decisionCardDatabase = {
  listOrdersAwaitingDecision: (prisma) => {
    assert.equal(prisma, DATABASE);
    return Promise.resolve(WAITING);
  },
  episodeOutcome: () => Promise.resolve(undefined),
};

const POSTED: PostedCard = { messageId: 'om_1' };

function counting() {
  const steps: string[] = [];
  const metrics: ProductMetrics = {
    ...noProductMetrics(),
    decisionCardStep: (vendor, step) => steps.push(`${vendor} ${step}`),
    decisionCardStepsAtZero: (vendors) => steps.push(...vendors.map((vendor) => `${vendor} at 0`)),
  };
  return { steps, metrics };
}

function activitiesWith(options: {
  temporal: Client;
  senders: ReadonlyMap<OaVendor, DecisionCardSender>;
  metrics?: ProductMetrics;
  temporalUi?: { url: string; namespace: string };
}) {
  return createDecisionCardActivities({
    prisma: DATABASE,
    temporal: options.temporal,
    taskQueue: 'cards',
    senders: options.senders,
    metrics: options.metrics ?? noProductMetrics(),
    temporalUi: options.temporalUi,
    database,
  });
}

const sender = (send: DecisionCardSender['send'] = () => Promise.resolve(POSTED)): DecisionCardSender => ({
  send,
  refresh: () => Promise.resolve('updated' as const),
});

describe('the decision cards’ activities', () => {
  const context = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('WARN') });

  it('tells each waiting state’s cause by its public code and sentence, never the recorded words', async () => {
    const { client, starts } = temporalStub();
    const { startDecisionCards } = activitiesWith({ temporal: client, senders: new Map([['feishu', sender()]]) });
    await context.run(startDecisionCards);
    const causes = starts.map(({ input }) => [input.card.waitingIn, input.card.cause.code]);
    assert.deepEqual(causes, [
      ['COMPENSATING', 'insufficient-stock'],
      ['KEY_SOURCE_CONFLICT', 'key-source-conflict'],
      ['RECEIVED', 'start-unconfirmed'],
      ['DELIVERY_FAILED', 'downstream-rejected'],
    ]);
    const told = JSON.stringify(starts.map(({ input }) => input.card));
    for (const words of ['secret-wh', '10.0.0.7', '10.0.0.8', 'erp.internal', 'SKU-9']) {
      assert.doesNotMatch(told, new RegExp(words.replace('.', '\\.')), `a card tells ${words}`);
    }
  });

  it('links each card to its key’s workflow in the Temporal UI when TEMPORAL_UI_URL is set, and not otherwise', async () => {
    const linked = temporalStub();
    await context.run(
      activitiesWith({
        temporal: linked.client,
        senders: new Map([['feishu', sender()]]),
        temporalUi: { url: 'https://temporal.example.com/ui', namespace: 'orders prod' },
      }).startDecisionCards,
    );
    assert.deepEqual(linked.starts.map(({ input }) => input.card.workflowUrl).slice(0, 2), [
      'https://temporal.example.com/ui/namespaces/orders%20prod/workflows/order-APPROVAL%3AA-1%3AMAIN',
      'https://temporal.example.com/ui/namespaces/orders%20prod/workflows/order-APPROVAL%3AA-2%3AMAIN',
    ]);
    const unlinked = temporalStub();
    await context.run(
      activitiesWith({ temporal: unlinked.client, senders: new Map([['feishu', sender()]]) }).startDecisionCards,
    );
    assert.ok(unlinked.starts.every(({ input }) => input.card.workflowUrl === undefined));
  });

  it('starts one workflow per vendor and episode, and asks Temporal nothing for an episode it knows', async () => {
    const existing = new Set([
      `decision-card-feishu-APPROVAL:A-2:MAIN-key-source-conflict-${Date.parse('2026-12-06T08:00:00.000Z').toString(36)}`,
    ]);
    const { client, starts } = temporalStub(existing);
    const senders = new Map<OaVendor, DecisionCardSender>([
      ['feishu', sender()],
      ['dingtalk', sender()],
    ]);
    const { startDecisionCards } = activitiesWith({ temporal: client, senders });
    // The episode started elsewhere (another worker, an earlier scan) is asked once and not counted.
    assert.deepEqual(await context.run(startDecisionCards), { waiting: 4, started: 7 });
    assert.equal(starts.length, 8);
    assert.equal(new Set(starts.map((start) => start.workflowId)).size, 8, 'one id per vendor and episode');
    // Every episode is known now, the one that existed included: the next scans start nothing and ask nothing.
    assert.deepEqual(await context.run(startDecisionCards), { waiting: 4, started: 0 });
    await context.run(startDecisionCards);
    assert.equal(starts.length, 8);
  });

  it('counts each post, each failed post and each redraw by vendor; a failed post is thrown to be retried', async () => {
    const { client } = temporalStub();
    const { steps, metrics } = counting();
    let fail = true;
    const flaky = sender(() => (fail ? Promise.reject(new Error('connect ECONNRESET')) : Promise.resolve(POSTED)));
    const { sendDecisionCard, refreshDecisionCard } = activitiesWith({
      temporal: client,
      senders: new Map([['feishu', flaky]]),
      metrics,
    });
    const card = { idempotencyKey: 'APPROVAL:A-1:MAIN' } as DecisionCard;
    const input: DecisionCardInput = { vendor: 'feishu', card, sendKey: 'card-1' };
    await assert.rejects(context.run(sendDecisionCard, input), /ECONNRESET/);
    fail = false;
    assert.equal(await context.run(sendDecisionCard, input), POSTED);
    const outcome: CardOutcome = { decision: 'abandon', decidedBy: 'ops', decidedAt: '2026-12-06T09:00:00.000Z' };
    await context.run(refreshDecisionCard, { vendor: 'feishu', posted: POSTED, card, outcome });
    // Exported at 0 from the start, so that the first failure is an increase the alert sees.
    assert.deepEqual(steps, ['feishu at 0', 'feishu send_failed', 'feishu sent', 'feishu updated']);
  });
});
