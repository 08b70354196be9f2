// WeCom's decision card as a template card, checked against what WeCom documents for a
// button-interaction card; a button's key read back whatever the key and episode; a click read
// from its callback and answered with an encrypted `update_button` reply the clicker's WeCom can
// open; and the settings that turn the cards on, with their refusals. Against a fake WeCom:
// test/integration/wecom-decision-cards.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { z } from 'zod';
import { waitingEpisode } from '../../../../domain-node/decision-card-keys.js';
import { SAMPLE_CARD, SAMPLE_NOW } from '../../../../tools/scripts/write-card-templates.js';
import { createWeComConnector } from '../../../../vendors/wecom/connector.js';
import { buttonKeyOf, buttonOfKey } from '../../../../vendors/decision-cards.js';
import { WECOM_TEXT_LIMITS, wecomCardJson } from '../../../../vendors/wecom/decision-cards.js';
import { wecomConnectorSettings, wecomSettings } from '../../../../vendors/wecom/settings.js';
import {
  openWeComReply,
  randomWeComAesKey,
  wecomCallback,
  wecomCardClickXml,
} from '../../../../tools/harness/fake-wecom.js';

const CARD = SAMPLE_CARD;
const NOW = SAMPLE_NOW;

describe('WeCom decision cards', () => {
  it('draws a button-interaction card WeCom takes: a title within 36 characters, its task id, one keyed button per decision', () => {
    const json = wecomCardJson(CARD, 'card-0123', { now: NOW });
    assert.equal(json.card_type, 'button_interaction');
    assert.equal(json.task_id, 'card-0123');
    const title = json.main_title as { title: string; desc: string };
    assert.ok(Array.from(title.title).length <= 36);
    assert.equal(title.desc, CARD.idempotencyKey);
    const buttons = json.button_list as { text: string; key: string; style: number }[];
    assert.deepEqual(
      buttons.map((button) => buttonOfKey(button.key)?.decision),
      ['resubmit', 'abandon'],
    );
    assert.ok(buttons.every((button) => Array.from(button.text).length <= WECOM_TEXT_LIMITS.button));
    const lines = json.horizontal_content_list as { keyname: string; value: string }[];
    assert.ok(lines.length <= 6, 'WeCom shows six lines at most');
    assert.ok(lines.some((line) => line.keyname === 'Waiting' && line.value === '42 min'));
    assert.ok(lines.every((line) => Array.from(line.value).length <= WECOM_TEXT_LIMITS.value));
    // No confirmation dialog in WeCom: what the two irreversible buttons do is said on the card.
    assert.match((json.quote_area as { quote_text: string }).quote_text, /Abandon this order\?/);
    assert.match(String(json.sub_title_text), /insufficient-stock/);
  });

  it('a link only to an http(s) workflow address', () => {
    const json = wecomCardJson({ ...CARD, workflowUrl: 'javascript:alert(1)' }, 'card-1', { now: NOW });
    assert.equal(json.card_action, undefined);
    assert.ok(!JSON.stringify(json).includes('javascript'));
  });

  it("reads back every button's key: whatever the approval number and the episode's moment", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/),
        fc.constantFrom('MAIN', 'SUPPLEMENT'),
        fc.constantFrom('COMPENSATING', 'DELIVERY_FAILED', 'KEY_SOURCE_CONFLICT'),
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        fc.constantFrom('resubmit', 'abandon', 'redeliver', 'mark-handled', 'recompensate', 'clear-conflict'),
        (approvalNo, kind, state, at, decision) => {
          const button = {
            idempotencyKey: `APPROVAL:${approvalNo}:${kind}`,
            episode: waitingEpisode(state, new Date(at).toISOString()),
          };
          assert.deepEqual(buttonOfKey(buttonKeyOf(button, decision)), { decision, ...button });
        },
      ),
    );
    for (const hostile of [
      'abandon',
      '',
      'abandon:compensating-1:APPROVAL:PO-1:MAIN\nX-Injected: 1',
      'abandon:COMPENSATING-1:APPROVAL:PO-1:MAIN',
      `abandon:compensating-1:APPROVAL:${'A'.repeat(300)}:MAIN`,
      'abandon:compensating-1:anything at all',
    ]) {
      assert.equal(buttonOfKey(hostile), undefined, JSON.stringify(hostile));
    }
  });
});

describe('a click on a WeCom card, at the callback', () => {
  const crypto = { token: 'wecom-token-7', encodingAesKey: randomWeComAesKey(), corpId: 'wwcorp0001' };
  const connector = createWeComConnector({ ...crypto, toleranceSeconds: 300, decisionOperators: ['zhangsan'] });
  const click = (eventKey: string) =>
    connector.read(
      wecomCallback(
        wecomCardClickXml({
          corpId: crypto.corpId,
          userId: 'zhangsan',
          eventKey,
          taskId: 'card-1',
          responseCode: 'rc-1',
          agentId: 1000017,
        }),
        crypto,
      ),
    );

  it('is read as a click of the user on the button, and answered with an update_button only the app could seal', () => {
    const read = click(buttonKeyOf(CARD, 'abandon'));
    assert.equal(read.kind, 'card-click');
    if (read.kind !== 'card-click') return;
    assert.deepEqual(
      { ...read.click, eventId: undefined },
      {
        vendor: 'wecom',
        eventId: undefined,
        userId: 'zhangsan',
        idempotencyKey: CARD.idempotencyKey,
        episode: CARD.episode,
        decision: 'abandon',
      },
    );
    assert.deepEqual(connector.decisionOperators, new Set(['zhangsan']));
    const outcome = { decision: 'abandon', decidedBy: 'card:wecom:zhangsan', decidedAt: '2026-12-06T08:43:00.000Z' };
    const reply = read.reply({ tone: 'success', text: 'Done: abandon', lockedAs: 'abandon by …', outcome });
    assert.equal(reply.status, 200);
    const plaintext = openWeComReply(String(reply.body), crypto);
    assert.match(plaintext, /<MsgType><!\[CDATA\[update_button\]\]><\/MsgType>/);
    assert.match(plaintext, /<ToUserName><!\[CDATA\[zhangsan\]\]><\/ToUserName>/);
    assert.match(plaintext, /<ReplaceName><!\[CDATA\[abandon by zhangsan\]\]><\/ReplaceName>/);
    // Sealed for another corp, the same reply does not open.
    assert.throws(() => openWeComReply(String(reply.body), { ...crypto, corpId: 'wwother' }));
  });

  it('a click not locking the card (refused, still under way) gets an empty reply: the buttons stay', () => {
    const read = click(buttonKeyOf(CARD, 'abandon'));
    assert.ok(read.kind === 'card-click');
    assert.deepEqual(
      read.reply({ tone: 'error', text: 'Only the operators named for these cards can decide from them' }),
      {
        status: 200,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
        body: '',
      },
    );
    // A locked line with XML's own end of character data in it stays one text in the sealed reply.
    const reply = read.reply({ tone: 'info', text: 'x', lockedAs: 'a]]><b>c' });
    assert.match(
      openWeComReply(String(reply.body), crypto),
      /<ReplaceName><!\[CDATA\[a]]]]><!\[CDATA\[><b>c\]\]><\/ReplaceName>/,
    );
  });

  it('a click whose key is no button of these cards is acknowledged as unusable, nothing taken', () => {
    assert.equal(click('something-else').kind, 'unusable');
  });
});

describe('WeCom decision card settings', () => {
  const on = {
    WECOM_CORP_ID: 'wwcorp',
    WECOM_AGENT_SECRET: 'secret',
    WECOM_TOKEN: 'token',
    WECOM_ENCODING_AES_KEY: randomWeComAesKey(),
  };
  const read = (env: Record<string, string>) => {
    const problems: string[] = [];
    const values = z.object(wecomSettings).parse(env);
    const config = wecomConnectorSettings.from(values, problems, () =>
      wecomConnectorSettings.required.every((name) => env[name] !== undefined),
    );
    return { config, problems };
  };

  it('on with recipients, operators and the app', () => {
    const { config, problems } = read({
      ...on,
      WECOM_AGENT_ID: '1000017',
      WECOM_DECISION_TO_USERS: 'zhangsan, lisi',
      WECOM_OPERATOR_USER_IDS: 'zhangsan',
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(config?.decisions, { agentId: 1000017, toUsers: ['zhangsan', 'lisi'], operators: ['zhangsan'] });
  });

  it('refuses each half-made set-up with what is missing, never repeating a value', () => {
    assert.deepEqual(read({ ...on, WECOM_OPERATOR_USER_IDS: 'zhangsan' }).problems, [
      'WECOM_OPERATOR_USER_IDS: set without WECOM_DECISION_TO_USERS (no card is sent for them to decide from)',
    ]);
    assert.deepEqual(read({ ...on, WECOM_AGENT_ID: '1', WECOM_DECISION_TO_USERS: 'zhangsan' }).problems, [
      'WECOM_OPERATOR_USER_IDS: required with WECOM_DECISION_TO_USERS (the user ids, comma-separated, allowed to decide from a card)',
    ]);
    const { problems } = read({
      ...on,
      WECOM_DECISION_TO_USERS: 'zhangsan',
      WECOM_OPERATOR_USER_IDS: 'secret value!',
    });
    assert.deepEqual(problems, [
      'WECOM_OPERATOR_USER_IDS: entry 1 is not a WeCom user id (1 to 64 letters, digits, ".", "_", "@", "-")',
      "WECOM_AGENT_ID: required with WECOM_DECISION_TO_USERS, a positive whole number (the app's AgentId, as the console shows it)",
    ]);
    assert.ok(!problems.join(' ').includes('secret value'));
    assert.match(
      read({ WECOM_AGENT_ID: '1', WECOM_DECISION_TO_USERS: 'a', WECOM_OPERATOR_USER_IDS: 'a' }).problems.join(' '),
      /requires the WeCom connector on/,
    );
  });
});
