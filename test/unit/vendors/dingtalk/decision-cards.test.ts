// DingTalk's decision card as the variables its template is given (strings of at most 1 KB, the
// buttons a JSON list whose actions read back), a click read from a card callback's data, the
// answer that locks the card, and the settings that turn the cards on, with their refusals.
// Against a fake DingTalk: test/integration/dingtalk-decision-cards.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { SAMPLE_CARD, SAMPLE_NOW } from '../../../../tools/scripts/write-card-templates.js';
import { cardSendKey } from '../../../../domain-node/decision-card-keys.js';
import { buttonKeyOf, buttonOfKey } from '../../../../vendors/decision-cards.js';
import {
  DINGTALK_CARD_VALUE_MAX_BYTES,
  dingtalkCardClickOf,
  dingtalkCardData,
  dingtalkClickAnswer,
} from '../../../../vendors/dingtalk/decision-cards.js';
import { dingtalkConnectorSettings, dingtalkSettings } from '../../../../vendors/dingtalk/settings.js';
import { dingtalkCardClick } from '../../../../tools/harness/fake-dingtalk-cards.js';

const CARD = SAMPLE_CARD;
const NOW = SAMPLE_NOW;
const OUTCOME = { decision: 'abandon', decidedBy: 'card:dingtalk:manager01', decidedAt: '2026-12-06T08:43:00.000Z' };

describe('DingTalk decision cards', () => {
  it('gives the template strings of at most 1 KB, and buttons whose actions read back as their decisions', () => {
    const data = dingtalkCardData(CARD, { now: NOW });
    for (const value of Object.values(data)) {
      assert.equal(typeof value, 'string');
      assert.ok(Buffer.byteLength(value) <= DINGTALK_CARD_VALUE_MAX_BYTES);
    }
    assert.equal(data.status, 'waiting');
    assert.equal(data.waiting, '42 min (since 2026-12-06T08:00:00.000Z)');
    const buttons = JSON.parse(data.buttons as string) as { action: string; confirm: string; style: string }[];
    assert.deepEqual(
      buttons.map((button) => buttonOfKey(button.action)),
      ['resubmit', 'abandon'].map((decision) => ({
        decision,
        episode: CARD.episode,
        idempotencyKey: CARD.idempotencyKey,
      })),
    );
    assert.match(buttons[1]?.confirm ?? '', /Abandon this order\?/);
    assert.equal(buttons[1]?.style, 'danger');
  });

  it('drawn decided: no buttons, what became of it', () => {
    const data = dingtalkCardData(CARD, { now: NOW, outcome: OUTCOME });
    assert.deepEqual([data.status, data.buttons], ['decided', '[]']);
    assert.equal(data.outcome, 'abandon by card:dingtalk:manager01 at 2026-12-06T08:43:00.000Z');
    assert.equal(dingtalkCardData({ ...CARD, workflowUrl: 'javascript:alert(1)' }, { now: NOW }).workflowUrl, '');
  });

  it('reads a click from the callback’s data, and takes nothing else for one', () => {
    const action = buttonKeyOf(CARD, 'abandon');
    const outTrackId = cardSendKey('dingtalk', CARD.idempotencyKey, CARD.episode);
    const data = JSON.stringify(dingtalkCardClick({ outTrackId, userId: 'manager01', action }));
    assert.deepEqual(dingtalkCardClickOf(data, 'msg-1'), {
      kind: 'click',
      click: {
        vendor: 'dingtalk',
        eventId: 'msg-1',
        userId: 'manager01',
        idempotencyKey: CARD.idempotencyKey,
        episode: CARD.episode,
        decision: 'abandon',
      },
    });
    const unusable = [
      'not json',
      '[]',
      JSON.stringify({ ...dingtalkCardClick({ outTrackId, userId: '', action }) }),
      JSON.stringify(dingtalkCardClick({ outTrackId, userId: 'u', action: 'abandon' })),
      JSON.stringify({ userId: 'u', content: '{"cardPrivateData":' }),
      JSON.stringify(dingtalkCardClick({ outTrackId, userId: 'u', action: `${action}\nX` })),
      // A button of this card's key, clicked on another card (another episode's, another key's).
      JSON.stringify(
        dingtalkCardClick({ outTrackId: cardSendKey('dingtalk', CARD.idempotencyKey, 'x-1'), userId: 'u', action }),
      ),
    ];
    for (const each of unusable) assert.equal(dingtalkCardClickOf(each, 'msg-1').kind, 'unusable', each);
  });

  it('answers a click that locks the card for everyone, and one that does not on the clicker’s copy alone', () => {
    const locked = dingtalkClickAnswer({ tone: 'success', text: 'Done: abandon', lockedAs: 'abandon by x at y' });
    assert.deepEqual(locked.cardData, {
      cardParamMap: { status: 'locked', buttons: '[]', outcome: 'abandon by x at y' },
    });
    assert.deepEqual(locked.userPrivateData, { cardParamMap: { clickAnswer: 'Done: abandon', clickTone: 'success' } });
    const refused = dingtalkClickAnswer({
      tone: 'error',
      text: 'Only the operators named for these cards can decide from them',
    });
    assert.equal(refused.cardData, undefined, 'the card as it is for everyone');
    assert.deepEqual(refused.cardUpdateOptions, { updateCardDataByKey: true, updatePrivateDataByKey: true });
  });
});

describe('DingTalk decision card settings', () => {
  const stream = { DINGTALK_APP_KEY: 'dingkey', DINGTALK_APP_SECRET: 'secret', DINGTALK_EVENT_MODE: 'stream' };
  const cards = {
    DINGTALK_DECISION_CARD_TEMPLATE_ID: 'a1b2c3d4-0000-4000-8000-abcdefabcdef.schema',
    DINGTALK_DECISION_OPEN_SPACE_ID: 'dtv1.card//IM_GROUP.cidAbC123+/=',
    DINGTALK_OPERATOR_USER_IDS: 'manager01, manager02',
  };
  const read = (env: Record<string, string>) => {
    const problems: string[] = [];
    const config = dingtalkConnectorSettings.from(z.object(dingtalkSettings).parse(env), problems, () =>
      dingtalkConnectorSettings.required.every((name) => env[name] !== undefined),
    );
    return { config, problems };
  };

  it('on with the Stream, the template, the open space and the operators', () => {
    const { config, problems } = read({ ...stream, ...cards });
    assert.deepEqual(problems, []);
    assert.deepEqual(config?.decisions, {
      templateId: cards.DINGTALK_DECISION_CARD_TEMPLATE_ID,
      openSpaceId: cards.DINGTALK_DECISION_OPEN_SPACE_ID,
      spaceType: 'IM_GROUP',
      operators: ['manager01', 'manager02'],
    });
    assert.equal(read({ ...stream }).config?.decisions, undefined, 'off unless set');
  });

  it('refuses each half-made set-up with what is missing, never repeating a value', () => {
    assert.deepEqual(read({ ...stream, DINGTALK_OPERATOR_USER_IDS: 'manager01' }).problems, [
      'DINGTALK_DECISION_CARD_TEMPLATE_ID, DINGTALK_DECISION_OPEN_SPACE_ID: required for DingTalk decision cards (the template, where the cards go, and the user ids allowed to decide, all three or none)',
    ]);
    assert.deepEqual(read({ ...stream, ...cards, DINGTALK_EVENT_MODE: 'callback' }).problems.slice(0, 1), [
      "DINGTALK_DECISION_CARD_TEMPLATE_ID, DINGTALK_DECISION_OPEN_SPACE_ID, DINGTALK_OPERATOR_USER_IDS: DingTalk decision cards require DINGTALK_EVENT_MODE=stream (a card's clicks come over the Stream connection)",
    ]);
    const { problems } = read({
      ...stream,
      ...cards,
      DINGTALK_DECISION_OPEN_SPACE_ID: 'cid-secret-value',
      DINGTALK_OPERATOR_USER_IDS: 'manager01,not a user!',
    });
    assert.deepEqual(problems, [
      'DINGTALK_DECISION_OPEN_SPACE_ID: is not one open space (dtv1.card//IM_GROUP.<open conversation id> or dtv1.card//IM_ROBOT.<user id>)',
      'DINGTALK_OPERATOR_USER_IDS: entry 2 is not a DingTalk user id (letters, digits, _ or -)',
    ]);
    assert.ok(!problems.join(' ').includes('secret-value'));
  });
});
