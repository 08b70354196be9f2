// A decision card offers a button for each decision the awaiting list offers that a click can take,
// in the list's order, a confirmation before each that cannot be undone, and none for advice.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cardDecisionsFor, decisionCardWorkflowId } from '../../../domain/decision-cards.js';

describe('decision cards', () => {
  it('a button per decision a click can take, in order; advice gets none', () => {
    assert.deepEqual(
      cardDecisionsFor(['resubmit', 'abandon']).map((button) => button.decision),
      ['resubmit', 'abandon'],
    );
    assert.deepEqual(
      cardDecisionsFor(['sender-redelivery', 'resubmit']).map((button) => button.decision),
      ['resubmit'],
    );
    assert.deepEqual(cardDecisionsFor(['no-such-decision']), []);
  });

  it('asks before what cannot be undone (abandon, mark handled, clear a conflict), not before a redelivery', () => {
    const confirmed = (decision: string) => cardDecisionsFor([decision])[0]?.confirm !== undefined;
    assert.deepEqual(
      ['abandon', 'mark-handled', 'clear-conflict', 'resubmit', 'redeliver', 'recompensate'].map(confirmed),
      [true, true, true, true, false, false],
    );
  });

  it('names one card workflow per vendor, key and episode', () => {
    const ids = new Set([
      decisionCardWorkflowId('feishu', 'APPROVAL:A:MAIN', 'compensating-1'),
      decisionCardWorkflowId('dingtalk', 'APPROVAL:A:MAIN', 'compensating-1'),
      decisionCardWorkflowId('feishu', 'APPROVAL:A:MAIN', 'compensating-2'),
      decisionCardWorkflowId('feishu', 'APPROVAL:B:MAIN', 'compensating-1'),
    ]);
    assert.equal(ids.size, 4);
  });
});
