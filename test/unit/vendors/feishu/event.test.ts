// What a Feishu event body says, whichever door it came through: a decision card's click
// (`card.action.trigger`) is who clicked and what the button carries; a click without them is
// unusable — acknowledged, nothing decided — and never mistaken for an approval event.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFeishuEvent } from '../../../../vendors/feishu/event.js';

const click = (event: Record<string, unknown>, header: Record<string, unknown> = { event_id: 'evt-1' }) =>
  readFeishuEvent({ schema: '2.0', header: { event_type: 'card.action.trigger', ...header }, event });

const BUTTON = { idempotencyKey: 'APPROVAL:A-1:MAIN', episode: 'compensating-mxc0k6yi', decision: 'abandon' };

describe('a Feishu card click', () => {
  it('is who clicked and what the button carries', () => {
    assert.deepEqual(click({ operator: { open_id: 'ou_alice' }, action: { tag: 'button', value: BUTTON } }), {
      kind: 'card-click',
      click: { vendor: 'feishu', eventId: 'evt-1', userId: 'ou_alice', ...BUTTON },
    });
  });

  it('without its event id, its clicker or a decision card’s button is unusable, never a decision', () => {
    const reasons = [
      click({ operator: { open_id: 'ou_alice' }, action: { value: BUTTON } }, {}),
      click({ action: { value: BUTTON } }),
      click({ operator: { open_id: 'ou_alice' }, action: { value: { action: 'confirm' } } }),
      click({ operator: { open_id: 'ou_alice' } }),
    ].map((read) => read.kind);
    assert.deepEqual(reasons, ['unusable', 'unusable', 'unusable', 'unusable']);
  });

  it('in schema 1.0 is no click: only the 2.0 callback carries one', () => {
    const read = readFeishuEvent({ type: 'card.action.trigger', event: { operator: { open_id: 'ou_a' } } });
    assert.equal(read.kind, 'other');
  });
});
