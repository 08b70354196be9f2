// The decision card workflow's decisions, with its activities stood in for: it posts its card once,
// under the send key it was given, also when the post fails before it succeeds; it looks until the
// key no longer waits in its episode, then redraws the card with what became of the key; the scan
// starts the cards. What a post sends is the vendor's (test/unit/vendors/), which keys wait is the
// awaiting list's (test/integration/decision-cards.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { CardOutcome, DecisionCard } from '../../../domain/decision-cards.js';
import { decisionCardScanWorkflow, decisionCardWorkflow } from '../../../workflows/decision-card-workflows.js';
import type { DecisionCardInput } from '../../../workflows/definitions.js';
import {
  standIns,
  startWorkflowTestEnvironment,
  type WorkflowTestEnvironment,
} from '../../../tools/harness/workflow-tests.js';

const CARD: DecisionCard = {
  idempotencyKey: 'APPROVAL:AP-2026-0001:MAIN',
  episode: 'compensating-mxbz4vlk',
  waitingIn: 'COMPENSATING',
  customerId: 'CUST-1',
  amount: '120.0000 CNY',
  cause: { code: 'STOCK_INSUFFICIENT', sentence: 'Not enough stock for a line of the order.' },
  waitingSince: '2026-12-06T10:00:00.000Z',
  decisions: [
    { decision: 'resubmit', label: 'Resubmit' },
    { decision: 'abandon', label: 'Abandon' },
  ],
};
const INPUT: DecisionCardInput = { vendor: 'feishu', card: CARD, sendKey: 'card-0123456789abcdef', lookEveryMs: 50 };
const DECIDED: CardOutcome = { decision: 'abandon', decidedBy: 'cli:alice', decidedAt: '2026-12-06T10:05:00.000Z' };

describe('the decision card workflows', () => {
  let testEnv: WorkflowTestEnvironment;
  before(async () => {
    testEnv = await startWorkflowTestEnvironment();
  });
  after(async () => {
    await testEnv?.teardown();
  });

  const run = (activities: Parameters<WorkflowTestEnvironment['withWorker']>[0], input = INPUT) =>
    testEnv.withWorker(activities, (taskQueue) =>
      testEnv.env.client.workflow.execute(decisionCardWorkflow, {
        taskQueue,
        workflowId: `card-test-${Math.random().toString(36).slice(2)}`,
        args: [input],
      }),
    );

  it('posts the card once, looks until the key no longer waits, then redraws it with the outcome', async () => {
    let looks = 0;
    const steps = standIns({
      sendDecisionCard: () => ({ messageId: 'om_1' }),
      decisionCardState: () => (++looks < 3 ? { waiting: true } : { waiting: false, outcome: DECIDED }),
      refreshDecisionCard: () => undefined,
    });
    const result = await run(steps.activities);
    assert.deepEqual(result, { messageId: 'om_1', outcome: DECIDED });
    assert.deepEqual(steps.names(), [
      'sendDecisionCard',
      'decisionCardState',
      'decisionCardState',
      'decisionCardState',
      'refreshDecisionCard',
    ]);
    assert.deepEqual(steps.inputsOf('refreshDecisionCard'), [
      { vendor: 'feishu', posted: { messageId: 'om_1' }, card: CARD, outcome: DECIDED },
    ]);
  });

  it('retries a post that failed with the same send key, and posts no card besides the one that went through', async () => {
    let tries = 0;
    const steps = standIns({
      sendDecisionCard: () => {
        tries += 1;
        // Retried at once: the failure names its own next delay, as a classified one may.
        if (tries < 3) {
          throw ApplicationFailure.create({
            message: 'the chat did not answer in time',
            type: 'Timeout',
            nextRetryDelay: 10,
          });
        }
        return { messageId: 'om_2' };
      },
      decisionCardState: () => ({ waiting: false, outcome: DECIDED }),
      refreshDecisionCard: () => undefined,
    });
    const result = await run(steps.activities);
    assert.equal(result.messageId, 'om_2');
    const sendKeys = steps.inputsOf('sendDecisionCard').map((input) => (input as DecisionCardInput).sendKey);
    assert.deepEqual(sendKeys, [INPUT.sendKey, INPUT.sendKey, INPUT.sendKey], 'every attempt under the one key');
    assert.equal(steps.inputsOf('refreshDecisionCard').length, 1);
  });

  it('a key decided before the first look is redrawn at once, after the one post', async () => {
    const steps = standIns({
      sendDecisionCard: () => ({ messageId: 'om_3' }),
      decisionCardState: () => ({ waiting: false, outcome: DECIDED }),
      refreshDecisionCard: () => undefined,
    });
    await run(steps.activities);
    assert.deepEqual(steps.names(), ['sendDecisionCard', 'decisionCardState', 'refreshDecisionCard']);
  });

  it('the scan starts the cards through its one activity and answers its counts', async () => {
    const steps = standIns({ startDecisionCards: () => ({ waiting: 4, started: 2 }) });
    const result = await testEnv.withWorker(steps.activities, (taskQueue) =>
      testEnv.env.client.workflow.execute(decisionCardScanWorkflow, {
        taskQueue,
        workflowId: `card-scan-${Math.random().toString(36).slice(2)}`,
      }),
    );
    assert.deepEqual(result, { waiting: 4, started: 2 });
  });
});
