// Feishu's decision card as JSON, checked against the message card structure Feishu documents, and
// the settings that turn the cards on (FEISHU_DECISION_CHAT_ID, FEISHU_OPERATOR_OPEN_IDS) with
// their refusals. The cards against a fake Feishu: test/integration/feishu-decision-cards.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import type { DecisionCard } from '../../../../vendors/decision-cards.js';
import { clipText, waitedFor } from '../../../../vendors/card-text.js';
import { CARD_TEXT_LIMITS, type FeishuCardJson, feishuCardJson } from '../../../../vendors/feishu/decision-cards.js';
import { feishu } from '../../../../vendors/feishu/index.js';
import { type FeishuConfig, feishuFrom, feishuSettings } from '../../../../vendors/feishu/settings.js';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { cardTemplates, CARD_TEMPLATES_DIR } from '../../../../tools/scripts/write-card-templates.js';

const NOW = Date.parse('2026-12-06T12:05:00.000Z');

const CARD: DecisionCard = {
  idempotencyKey: 'order-2026-0042',
  episode: 'ep-3',
  waitingIn: 'DELIVERY_FAILED',
  customerId: 'CUST-FS-1',
  amount: '1280.50 CNY',
  cause: { code: 'DOWNSTREAM_REFUSED', sentence: 'The ERP refused the order.' },
  waitingSince: '2026-12-06T10:00:00.000Z',
  workflowUrl: 'https://temporal.example/namespaces/orders/workflows/order-2026-0042',
  decisions: [
    { decision: 'redeliver', label: 'Redeliver' },
    { decision: 'abandon', label: 'Abandon', confirm: 'Abandon order-2026-0042? The order is not delivered.' },
  ],
};

// The documented structure of a message card (card JSON 1.0), and of its components:
//  - card JSON 1.0 structure (config with update_multi, header, elements):
//    https://open.feishu.cn/document/uAjLw4CM/ukzMukzMukzM/feishu-cards/card-json-structure
//  - the button (tag, text, type default/primary/danger, value, confirm with title and text), in
//    the interactive module (`"tag": "action"`, `actions`):
//    https://open.feishu.cn/document/common-capabilities/message-card/add-card-interaction/interactive-components/button
//  - updating a sent card, which requires `"update_multi": true` before and after, and a request
//    body of at most 30 KB: https://open.feishu.cn/document/uAjLw4CM/ukTMukTMukTM/reference/im-v1/message/patch
const CARD_KEYS = new Set(['config', 'card_link', 'i18n_elements', 'header', 'elements', 'fallback']);
const TEMPLATES = new Set([
  'blue',
  'wathet',
  'turquoise',
  'green',
  'yellow',
  'orange',
  'red',
  'carmine',
  'violet',
  'purple',
  'indigo',
  'grey',
  'default',
]);
const BUTTON_TYPES = new Set(['default', 'primary', 'danger']);

/** The problems of `card` against the documented structure; none when it holds. */
function documentedShapeProblems(card: unknown): string[] {
  const problems: string[] = [];
  const object = (value: unknown): value is Record<string, unknown> =>
    value !== null && typeof value === 'object' && !Array.isArray(value);
  const text = (value: unknown, where: string, tags = ['plain_text', 'lark_md']) => {
    if (!object(value) || !tags.includes(value.tag as string) || typeof value.content !== 'string') {
      problems.push(`${where}: not a text object (${tags.join(' or ')}, content)`);
    }
  };
  if (!object(card)) return ['the card is not an object'];
  for (const key of Object.keys(card)) if (!CARD_KEYS.has(key)) problems.push(`unknown top-level field ${key}`);
  if (!object(card.config) || card.config.update_multi !== true) problems.push('config.update_multi is not true');
  if (!object(card.header)) problems.push('no header');
  else {
    text(card.header.title, 'header.title', ['plain_text', 'lark_md']);
    if (!TEMPLATES.has(card.header.template as string)) problems.push('header.template is not a documented colour');
  }
  if (!Array.isArray(card.elements)) return [...problems, 'elements is not an array'];
  card.elements.forEach((element: unknown, index) => {
    const where = `elements[${index}]`;
    if (!object(element)) return void problems.push(`${where}: not an object`);
    switch (element.tag) {
      case 'hr':
        return;
      case 'div':
        if (element.text === undefined && element.fields === undefined)
          problems.push(`${where}: div without text or fields`);
        if (element.text !== undefined) text(element.text, `${where}.text`);
        if (element.fields !== undefined) {
          if (!Array.isArray(element.fields)) return void problems.push(`${where}.fields: not an array`);
          element.fields.forEach((field: unknown, at) => {
            if (!object(field) || typeof field.is_short !== 'boolean')
              problems.push(`${where}.fields[${at}]: no is_short`);
            else text(field.text, `${where}.fields[${at}].text`);
          });
        }
        return;
      case 'action':
        if (!Array.isArray(element.actions) || element.actions.length === 0) {
          return void problems.push(`${where}: action without actions`);
        }
        element.actions.forEach((button: unknown, at) => {
          const here = `${where}.actions[${at}]`;
          if (!object(button) || button.tag !== 'button') return void problems.push(`${here}: not a button`);
          text(button.text, `${here}.text`);
          if (!BUTTON_TYPES.has(button.type as string)) problems.push(`${here}.type is not documented`);
          if (!object(button.value)) problems.push(`${here}.value is not an object`);
          if (button.confirm !== undefined) {
            if (!object(button.confirm)) problems.push(`${here}.confirm is not an object`);
            else {
              text(button.confirm.title, `${here}.confirm.title`, ['plain_text']);
              text(button.confirm.text, `${here}.confirm.text`, ['plain_text']);
            }
          }
        });
        return;
      default:
        problems.push(`${where}: tag ${String(element.tag)} is not one this card uses`);
    }
  });
  return problems;
}

/** Every text content of a card, with its tag. */
function textsOf(json: FeishuCardJson): { tag: string; content: string }[] {
  const texts: { tag: string; content: string }[] = [];
  const walk = (value: unknown) => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (value === null || typeof value !== 'object') return;
    const record = value as Record<string, unknown>;
    if (typeof record.tag === 'string' && typeof record.content === 'string') {
      texts.push({ tag: record.tag, content: record.content });
    }
    Object.values(record).forEach(walk);
  };
  walk(json);
  return texts;
}

const buttonsOf = (json: FeishuCardJson) =>
  json.elements
    .filter((element) => element.tag === 'action')
    .flatMap((element) => element.actions as Record<string, unknown>[]);

describe('the Feishu decision card', () => {
  it('holds to the documented message card structure, waiting and decided', () => {
    const waiting = feishuCardJson(CARD, { now: NOW });
    const decided = feishuCardJson(CARD, {
      now: NOW,
      outcome: { decision: 'redeliver', decidedBy: 'ou_a1b2c3', decidedAt: '2026-12-06T12:10:00.000Z' },
    });
    assert.deepEqual(documentedShapeProblems(waiting), []);
    assert.deepEqual(documentedShapeProblems(decided), []);
    assert.deepEqual(documentedShapeProblems(JSON.parse(JSON.stringify(waiting))), [], 'and so does its JSON text');
  });

  it('the shape check finds a card Feishu would refuse or could not redraw (its broken variants)', () => {
    const waiting = feishuCardJson(CARD, { now: NOW });
    const notShared = { ...waiting, config: { enable_forward: false } };
    assert.deepEqual(documentedShapeProblems(notShared), ['config.update_multi is not true']);
    const stringValue = structuredClone(waiting);
    (buttonsOf(stringValue)[0] as Record<string, unknown>).value = 'redeliver';
    assert.match(documentedShapeProblems(stringValue).join('\n'), /actions\[0\]\.value is not an object/);
    const markdownConfirm = structuredClone(waiting);
    (buttonsOf(markdownConfirm)[1] as { confirm: { text: { tag: string } } }).confirm.text.tag = 'lark_md';
    assert.match(documentedShapeProblems(markdownConfirm).join('\n'), /confirm\.text: not a text object/);
  });

  it('shows the key, the state, the customer, the amount, the cause, the wait and the workflow, and a button per decision', () => {
    const json = feishuCardJson(CARD, { now: NOW });
    const shown = textsOf(json)
      .map((text) => text.content)
      .join('\n');
    for (const expected of [
      'Waiting for a decision: order-2026-0042',
      'Key: order-2026-0042',
      'Waits in: DELIVERY_FAILED',
      'Customer: CUST-FS-1',
      'Amount: 1280.50 CNY',
      'Waiting: 2 h 5 min (since 2026-12-06T10:00:00.000Z)',
      'Cause: DOWNSTREAM_REFUSED — The ERP refused the order.',
      '[Open its workflow](https://temporal.example/namespaces/orders/workflows/order-2026-0042)',
    ]) {
      assert.ok(shown.includes(expected), `the card shows ${expected}`);
    }
    assert.deepEqual(
      buttonsOf(json).map((button) => [(button.text as { content: string }).content, button.value, button.confirm]),
      [
        ['Redeliver', { idempotencyKey: 'order-2026-0042', episode: 'ep-3', decision: 'redeliver' }, undefined],
        [
          'Abandon',
          { idempotencyKey: 'order-2026-0042', episode: 'ep-3', decision: 'abandon' },
          {
            title: { tag: 'plain_text', content: 'Abandon' },
            text: { tag: 'plain_text', content: 'Abandon order-2026-0042? The order is not delivered.' },
          },
        ],
      ],
    );
    assert.equal(json.config.update_multi, true);
  });

  it('decided: no button, and who took which decision when', () => {
    const json = feishuCardJson(CARD, {
      now: NOW,
      outcome: { decision: 'abandon', decidedBy: 'ou_a1b2c3', decidedAt: '2026-12-06T12:10:00.000Z' },
    });
    assert.deepEqual(buttonsOf(json), []);
    assert.ok(json.elements.every((element) => element.tag !== 'action'));
    const shown = textsOf(json).map((text) => text.content);
    assert.ok(shown.includes('abandon by ou_a1b2c3 at 2026-12-06T12:10:00.000Z'));
    assert.equal(json.header.title.content, 'Decided: order-2026-0042');
    assert.equal(json.config.update_multi, true, 'still shared: a later redraw stays possible');
  });

  it('shows what a card carries as plain text: a mention or a link in a customer id stays text', () => {
    const hostile: DecisionCard = {
      ...CARD,
      customerId: '<at id=all></at> [click](https://evil.example)',
      decisions: [{ decision: 'resubmit', label: '**Resubmit** <at id=all></at>' }],
    };
    const json = feishuCardJson(hostile, { now: NOW });
    const markdown = textsOf(json).filter((text) => text.tag !== 'plain_text');
    assert.deepEqual(
      markdown.map((text) => text.content),
      ['[Open its workflow](https://temporal.example/namespaces/orders/workflows/order-2026-0042)'],
      'the workflow link is the only Lark Markdown',
    );
  });

  it('escapes the workflow link and leaves out one that is not http(s)', () => {
    const link = (workflowUrl: string | undefined) =>
      textsOf(feishuCardJson({ ...CARD, workflowUrl }, { now: NOW })).find((text) => text.tag === 'lark_md')?.content;
    assert.equal(
      link('https://temporal.example/wf/a)(b [x]'),
      '[Open its workflow](https://temporal.example/wf/a%29%28b%20[x])',
    );
    assert.equal(link('javascript:alert(1)'), undefined);
    assert.equal(link('not a url'), undefined);
    assert.equal(link(undefined), undefined);
  });

  it('cuts every text to its limit', () => {
    const long = 'x'.repeat(5_000);
    const json = feishuCardJson(
      {
        ...CARD,
        idempotencyKey: long,
        customerId: long,
        cause: { code: 'C', sentence: long },
        decisions: [{ decision: 'abandon', label: long, confirm: long }],
      },
      { now: NOW },
    );
    const longest = Math.max(...Object.values(CARD_TEXT_LIMITS));
    for (const text of textsOf(json)) assert.ok(Array.from(text.content).length <= longest, text.content.slice(0, 40));
    assert.equal(Array.from(json.header.title.content).length, CARD_TEXT_LIMITS.title);
    assert.equal(clipText('abcdef', 4), 'abc…');
    assert.equal(clipText('abcd', 4), 'abcd');
    assert.equal(clipText('😀😀😀😀😀', 3), '😀😀…', 'by characters, not UTF-16 units');
  });

  it('says how long a key has waited', () => {
    const since = '2026-12-06T12:00:00.000Z';
    const at = (minutes: number) => Date.parse(since) + minutes * 60_000;
    assert.equal(waitedFor(since, at(0.5)), 'under a minute');
    assert.equal(waitedFor(since, at(12)), '12 min');
    assert.equal(waitedFor(since, at(125)), '2 h 5 min');
    assert.equal(waitedFor(since, at(3 * 1440 + 250)), '3 d 4 h');
    assert.equal(waitedFor('yesterday', at(1)), undefined);
  });
});

const APP = {
  FEISHU_APP_ID: 'cli_0123456789abcdef',
  FEISHU_APP_SECRET: 'feishu-app-secret-of-its-own',
  FEISHU_ENCRYPT_KEY: 'feishu-encrypt-key-of-its-own',
  FEISHU_VERIFICATION_TOKEN: 'feishu-verification-token',
};

/** Feishu's settings read from `env`: its configuration, and the problems start-up would refuse with. */
function settingsOf(env: Record<string, string>): { config: FeishuConfig | undefined; problems: string[] } {
  const parsed = z.object(feishuSettings).safeParse(env);
  if (!parsed.success) {
    return {
      config: undefined,
      problems: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`),
    };
  }
  const problems: string[] = [];
  // As vendors/settings.ts decides it: on when all four of the callback's settings are there.
  const on = () => Object.keys(APP).every((name) => name in env);
  const config = feishuFrom(parsed.data, problems, on);
  return { config, problems };
}

describe('the decision cards’ settings', () => {
  it('no chat: no cards', () => {
    const { config, problems } = settingsOf(APP);
    assert.deepEqual(problems, []);
    assert.ok(config);
    assert.equal(config.decisions, undefined);
    assert.equal(feishu.decisionCards?.(config, { timeoutMs: 1_000 }), undefined);
  });

  it('a chat and its operators: the cards go there, the operators trimmed and once each', () => {
    const { config, problems } = settingsOf({
      ...APP,
      FEISHU_DECISION_CHAT_ID: 'oc_a0553eda9014c201e6969b478895c230',
      FEISHU_OPERATOR_OPEN_IDS: ' ou_7d8a6e6df7621556ce0d21922b676706, ou_b1,ou_b1,',
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(config?.decisions, {
      chatId: 'oc_a0553eda9014c201e6969b478895c230',
      operators: ['ou_7d8a6e6df7621556ce0d21922b676706', 'ou_b1'],
    });
    assert.ok(config);
    const sender = feishu.decisionCards?.(config, { timeoutMs: 1_000 });
    assert.equal(typeof sender?.send, 'function');
  });

  it('refuses a chat without operators', () => {
    for (const operators of [undefined, '', ' , ']) {
      const { problems } = settingsOf({
        ...APP,
        FEISHU_DECISION_CHAT_ID: 'oc_a0553eda',
        ...(operators === undefined ? {} : { FEISHU_OPERATOR_OPEN_IDS: operators }),
      });
      assert.deepEqual(problems, [
        'FEISHU_OPERATOR_OPEN_IDS: required with FEISHU_DECISION_CHAT_ID (the open ids, comma-separated, allowed to decide from a card)',
      ]);
    }
  });

  it('refuses a malformed chat id, and names a malformed operator by its place, not its value', () => {
    for (const chatId of ['oc_', 'ou_a0553eda', 'a0553eda', 'oc_a0553eda;drop', `oc_${'a'.repeat(65)}`]) {
      const { problems } = settingsOf({ ...APP, FEISHU_DECISION_CHAT_ID: chatId, FEISHU_OPERATOR_OPEN_IDS: 'ou_b1' });
      assert.deepEqual(
        problems,
        ['FEISHU_DECISION_CHAT_ID: must be a Feishu chat id: "oc_" and letters or digits, as Feishu gives it'],
        chatId,
      );
    }
    const { problems } = settingsOf({
      ...APP,
      FEISHU_DECISION_CHAT_ID: 'oc_a0553eda',
      FEISHU_OPERATOR_OPEN_IDS: 'ou_b1,oc_a0553eda,a-secret-put-here',
    });
    assert.deepEqual(problems, [
      'FEISHU_OPERATOR_OPEN_IDS: entry 2 is not a Feishu open id ("ou_" and letters or digits)',
      'FEISHU_OPERATOR_OPEN_IDS: entry 3 is not a Feishu open id ("ou_" and letters or digits)',
    ]);
    assert.ok(!problems.join('\n').includes('a-secret-put-here'));
  });

  it('refuses operators without a chat, and a chat while the Feishu app is off', () => {
    assert.deepEqual(settingsOf({ ...APP, FEISHU_OPERATOR_OPEN_IDS: 'ou_b1' }).problems, [
      'FEISHU_OPERATOR_OPEN_IDS: set without FEISHU_DECISION_CHAT_ID (no card is posted for them to decide from)',
    ]);
    const off = settingsOf({ FEISHU_DECISION_CHAT_ID: 'oc_a0553eda', FEISHU_OPERATOR_OPEN_IDS: 'ou_b1' });
    assert.equal(off.config, undefined);
    assert.match(off.problems.join('\n'), /^FEISHU_DECISION_CHAT_ID: requires the Feishu connector on/);
    const longConnection = settingsOf({
      FEISHU_EVENT_MODE: 'long-connection',
      FEISHU_APP_ID: APP.FEISHU_APP_ID,
      FEISHU_APP_SECRET: APP.FEISHU_APP_SECRET,
      FEISHU_DECISION_CHAT_ID: 'oc_a0553eda',
      FEISHU_OPERATOR_OPEN_IDS: 'ou_b1',
    });
    assert.deepEqual(longConnection.problems, []);
    assert.deepEqual(longConnection.config?.decisions, { chatId: 'oc_a0553eda', operators: ['ou_b1'] });
  });
});

describe('the committed card templates (docs/cards/)', () => {
  it('are what each vendor’s card code draws for the sample key: `npm run cards` rewrites them', () => {
    for (const [name, content] of Object.entries(cardTemplates())) {
      assert.equal(readFileSync(path.join(CARD_TEMPLATES_DIR, name), 'utf8'), content, `docs/cards/${name}`);
    }
  });
});
