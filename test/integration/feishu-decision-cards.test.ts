// Feishu's decision cards against the fake Feishu (a real HTTP server on 127.0.0.1 that issues
// tenant tokens and keeps each chat's messages): a card is posted once per send key, also when the
// first answer came after the client gave up; a decided card is redrawn in place without its
// buttons; and no error names the token or the app secret. No Temporal, no database.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { OaApiError } from '../../domain/errors.js';
import type { DecisionCard, DecisionCardSender } from '../../vendors/decision-cards.js';
import { feishuDecisionCards } from '../../vendors/feishu/decision-cards.js';
import { type FakeFeishu, startFakeFeishu } from '../../tools/harness/fake-feishu.js';
import { FEISHU_FIELD_VALIDATION_FAILED, FEISHU_INVALID_PARAMETER } from '../../tools/harness/fake-feishu-messages.js';

const CHAT = 'oc_a0553eda9014c201e6969b478895c230';
const NOW = Date.parse('2026-12-06T12:05:00.000Z');

const card = (idempotencyKey: string): DecisionCard => ({
  idempotencyKey,
  episode: 'ep-1',
  waitingIn: 'COMPENSATING',
  customerId: 'CUST-FS-1',
  amount: '99.90 CNY',
  cause: { code: 'DOWNSTREAM_UNAVAILABLE', sentence: 'The ERP did not answer.' },
  waitingSince: '2026-12-06T11:00:00.000Z',
  workflowUrl: `https://temporal.example/namespaces/orders/workflows/${idempotencyKey}`,
  decisions: [
    { decision: 'recompensate', label: 'Compensate again' },
    { decision: 'mark-handled', label: 'Mark handled', confirm: 'Mark it handled? Nothing is compensated again.' },
  ],
});

let fake: FakeFeishu;
let keys = 0;
/** A key no other test uses: the fake remembers uuids for the whole file. */
const freshKey = () => `dc-${process.pid}-${(keys += 1)}`;

const senderFor = (options: { timeoutMs?: number; chatId?: string } = {}): DecisionCardSender =>
  feishuDecisionCards({
    appId: fake.appId,
    appSecret: fake.appSecret,
    baseUrl: fake.url,
    chatId: options.chatId ?? CHAT,
    timeoutMs: options.timeoutMs ?? 2_000,
    now: () => NOW,
  });

/** The messages this test posted: those for its own key. */
const messagesFor = (key: string) =>
  fake.messages.messagesIn(CHAT).filter((message) => JSON.stringify(message.sentContent).includes(key));

const textsOf = (content: unknown): string[] => {
  const texts: string[] = [];
  const walk = (value: unknown) => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (value === null || typeof value !== 'object') return;
    const record = value as Record<string, unknown>;
    if (typeof record.content === 'string') texts.push(record.content);
    Object.values(record).forEach(walk);
  };
  walk(content);
  return texts;
};
const buttonsOf = (content: Record<string, unknown>) =>
  (content.elements as Record<string, unknown>[])
    .filter((element) => element.tag === 'action')
    .flatMap((element) => element.actions as Record<string, unknown>[]);

/**
 * The client's timeout of the send that Feishu answers late, and when it answers: the request has a
 * second to arrive even on a loaded machine, and the answer comes well after the client gave up.
 */
const RETRIED_SEND_TIMEOUT_MS = 1_000;
const RETRIED_SEND_ANSWERED_AFTER_MS = 3_000;

/**
 * The send that times out after Feishu created the message, then retried with the same key, as
 * the workflow's retry does: it must leave one message, and the retry must name it.
 */
async function checkRetriedSendPostsOnce(sender: DecisionCardSender): Promise<void> {
  const key = freshKey();
  // The token first, unhurried: the timeout below is about the send alone.
  await sender.send(card(freshKey()), `warm-${key}`);
  fake.messages.scriptSends([{ kind: 'answer-after', ms: RETRIED_SEND_ANSWERED_AFTER_MS }]);
  await assert.rejects(sender.send(card(key), key), (error: unknown) => {
    assert.ok(error instanceof OaApiError);
    assert.equal(error.status, undefined, 'no answer: the caller may retry');
    assert.match(error.message, new RegExp(`no answer within ${RETRIED_SEND_TIMEOUT_MS} ms`));
    return true;
  });
  assert.equal(messagesFor(key).length, 1, 'Feishu posted the card although the client gave up');
  const retried = await sender.send(card(key), key);
  const posted = messagesFor(key);
  assert.equal(posted.length, 1, 'the retry posted no second card');
  assert.equal(retried.messageId, posted[0]?.messageId, 'the retry is answered with the first message');
}

describe('Feishu decision cards against the fake Feishu', () => {
  before(async () => {
    fake = await startFakeFeishu();
  });
  after(async () => {
    await fake.close();
  });
  afterEach(() => {
    fake.messages.scriptSends([]);
  });

  it('posts a card with every field and a button per decision, as a shared interactive message', async () => {
    const key = freshKey();
    const posted = await senderFor().send(card(key), key);
    const [message] = messagesFor(key);
    assert.ok(message);
    assert.equal(message.messageId, posted.messageId);
    assert.equal(message.chatId, CHAT);
    assert.equal(message.uuid, key, 'the send key went as Feishu’s uuid');
    const content = message.content;
    assert.deepEqual(content.config, { update_multi: true, enable_forward: false });
    const shown = textsOf(content).join('\n');
    for (const expected of [
      `Waiting for a decision: ${key}`,
      `Key: ${key}`,
      'Waits in: COMPENSATING',
      'Customer: CUST-FS-1',
      'Amount: 99.90 CNY',
      'Waiting: 1 h 5 min (since 2026-12-06T11:00:00.000Z)',
      'Episode: ep-1',
      'Cause: DOWNSTREAM_UNAVAILABLE — The ERP did not answer.',
      `[Open its workflow](https://temporal.example/namespaces/orders/workflows/${key})`,
    ]) {
      assert.ok(shown.includes(expected), `the posted card shows ${expected}`);
    }
    assert.deepEqual(
      buttonsOf(content).map((button) => [button.value, (button.confirm as { text?: unknown } | undefined)?.text]),
      [
        [{ idempotencyKey: key, episode: 'ep-1', decision: 'recompensate' }, undefined],
        [
          { idempotencyKey: key, episode: 'ep-1', decision: 'mark-handled' },
          { tag: 'plain_text', content: 'Mark it handled? Nothing is compensated again.' },
        ],
      ],
    );
  });

  it('the same send key twice: one message, both answers naming it', async () => {
    const key = freshKey();
    const sender = senderFor();
    const first = await sender.send(card(key), key);
    const second = await sender.send(card(key), key);
    assert.equal(second.messageId, first.messageId);
    assert.equal(messagesFor(key).length, 1);
  });

  it('a send answered after the client’s timeout, retried with its key: one message, and the retry names it', async () => {
    await checkRetriedSendPostsOnce(senderFor({ timeoutMs: RETRIED_SEND_TIMEOUT_MS }));
  });

  it('the same check catches a sender that forgets the uuid: the retried send posts a second card', async () => {
    // The broken variant: the real sender, with `uuid` taken out of its send on the way to Feishu.
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      const address = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (address.includes('/open-apis/im/v1/messages') && typeof init?.body === 'string') {
        const { uuid: _forgotten, ...body } = JSON.parse(init.body) as Record<string, unknown>;
        return realFetch(input, { ...init, body: JSON.stringify(body) });
      }
      return realFetch(input, init);
    };
    try {
      await assert.rejects(
        checkRetriedSendPostsOnce(senderFor({ timeoutMs: RETRIED_SEND_TIMEOUT_MS })),
        (error: unknown) => {
          assert.ok(error instanceof assert.AssertionError);
          assert.match(error.message, /the retry posted no second card/);
          return true;
        },
      );
    } finally {
      globalThis.fetch = realFetch;
    }
  });

  it('refresh redraws the card in place: no buttons, who decided what and when', async () => {
    const key = freshKey();
    const sender = senderFor();
    const posted = await sender.send(card(key), key);
    await sender.refresh(posted, card(key), {
      decision: 'recompensate',
      decidedBy: 'ou_7d8a6e6df7621556ce0d21922b676706',
      decidedAt: '2026-12-06T12:07:00.000Z',
    });
    const [message] = messagesFor(key);
    assert.ok(message);
    assert.equal(messagesFor(key).length, 1, 'redrawn, not posted again');
    assert.equal(message.updates, 1);
    assert.deepEqual(buttonsOf(message.content), []);
    assert.ok(buttonsOf(message.sentContent).length > 0, 'it had its buttons before');
    const shown = textsOf(message.content);
    assert.ok(shown.includes('recompensate by ou_7d8a6e6df7621556ce0d21922b676706 at 2026-12-06T12:07:00.000Z'));
    assert.ok(shown.includes(`Decided: ${key}`));
  });

  it('the fake refuses to redraw a card not sent as shared, as Feishu does', async () => {
    // A card sent without config.update_multi, straight to the fake's API.
    const token = await tokenOf(fake);
    const answer = await fetch(new URL('/open-apis/im/v1/messages?receive_id_type=chat_id', fake.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ receive_id: CHAT, msg_type: 'interactive', content: JSON.stringify({ elements: [] }) }),
    });
    const sent = (await answer.json()) as { code: number; data: { message_id: string } };
    assert.equal(sent.code, 0);
    const key = freshKey();
    await assert.rejects(
      senderFor().refresh({ messageId: sent.data.message_id }, card(key), {
        decision: 'abandon',
        decidedBy: 'ou_b1',
        decidedAt: '2026-12-06T12:07:00.000Z',
      }),
      (error: unknown) => {
        assert.ok(error instanceof OaApiError);
        assert.match(error.message, new RegExp(`HTTP 400, code ${FEISHU_INVALID_PARAMETER} .*update_multi`));
        return true;
      },
    );
  });

  it('refuses a send key over 50 characters before asking Feishu, and takes one of 50', async () => {
    const before = fake.messages.sendRequests();
    const tooLong = 'k'.repeat(51);
    await assert.rejects(
      senderFor().send(card(tooLong), tooLong),
      /the send key has 51 characters; Feishu's uuid takes 1 to 50/,
    );
    assert.equal(fake.messages.sendRequests(), before, 'nothing was sent');
    const longest = `${freshKey()}-`.padEnd(50, 'k');
    await senderFor().send(card(longest), longest);
    assert.equal(messagesFor(longest).length, 1);
  });

  it('refuses a card Feishu would refuse for its size, before asking Feishu', async () => {
    const before = fake.messages.sendRequests();
    const key = freshKey();
    const decisions = Array.from({ length: 400 }, (_, index) => ({
      decision: `decision-${index}`,
      label: `Decision ${index}`,
      confirm: 'Sure?',
    }));
    await assert.rejects(
      senderFor().send({ ...card(key), decisions }, key),
      new RegExp(`feishu decision card for ${key}: \\d+ bytes, above the 28672 a card may have`),
    );
    assert.equal(fake.messages.sendRequests(), before, 'nothing was sent');
  });

  it('the fake refuses a uuid over 50 characters with Feishu’s field validation error', async () => {
    const token = await tokenOf(fake);
    const answer = await fetch(new URL('/open-apis/im/v1/messages?receive_id_type=chat_id', fake.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        receive_id: CHAT,
        msg_type: 'interactive',
        content: JSON.stringify({ config: { update_multi: true }, elements: [] }),
        uuid: 'u'.repeat(51),
      }),
    });
    assert.equal(answer.status, 400);
    const body = (await answer.json()) as { code: number; error: { field_violations: { field: string }[] } };
    assert.equal(body.code, FEISHU_FIELD_VALIDATION_FAILED);
    assert.equal(body.error.field_violations[0]?.field, 'uuid');
  });

  it('takes a fresh token once when Feishu calls the one it holds invalid', async () => {
    const sender = senderFor();
    const first = freshKey();
    await sender.send(card(first), first);
    const tokensBefore = fake.tokenRequests();
    fake.revokeTokens();
    const second = freshKey();
    await sender.send(card(second), second);
    assert.equal(fake.tokenRequests(), tokensBefore + 1);
    assert.equal(messagesFor(second).length, 1);
  });

  it('names the status or Feishu’s code in an error, never the token or the app secret', async () => {
    const errors: Error[] = [];
    const catchOf = async (attempt: Promise<unknown>) => {
      try {
        await attempt;
      } catch (error) {
        errors.push(error as Error);
        return;
      }
      assert.fail('expected the request to fail');
    };
    const key = freshKey();
    fake.messages.scriptSends([{ kind: 'status', status: 500 }]);
    await catchOf(senderFor().send(card(key), key));
    assert.match(errors[0]?.message ?? '', /HTTP 500/);
    await catchOf(senderFor({ chatId: 'not-a-chat' }).send(card(key), key));
    assert.match(errors[1]?.message ?? '', new RegExp(`code ${FEISHU_INVALID_PARAMETER}`));
    const wrongSecret = feishuDecisionCards({
      appId: fake.appId,
      appSecret: 'not-the-app-secret-0123',
      baseUrl: fake.url,
      chatId: CHAT,
      timeoutMs: 2_000,
    });
    await catchOf(wrongSecret.send(card(key), key));
    assert.match(errors[2]?.message ?? '', /token refused: HTTP 400, code 10014/);
    await catchOf(
      senderFor().refresh({ messageId: 'om_unknown' }, card(key), { decision: 'x', decidedBy: 'y', decidedAt: 'z' }),
    );
    const secrets = [...fake.issuedTokens(), fake.appSecret, 'not-the-app-secret-0123'];
    for (const error of errors) {
      for (const secret of secrets) assert.ok(!error.message.includes(secret), `${error.message} shows a secret`);
    }
  });
});

/** A tenant token from the fake, for a request a test makes itself. */
async function tokenOf(feishu: FakeFeishu): Promise<string> {
  const answer = await fetch(new URL('/open-apis/auth/v3/tenant_access_token/internal', feishu.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: feishu.appId, app_secret: feishu.appSecret }),
  });
  return ((await answer.json()) as { tenant_access_token: string }).tenant_access_token;
}
