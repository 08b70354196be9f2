// WeCom's decision cards against the fake WeCom (a real HTTP server on 127.0.0.1 that issues access
// tokens and keeps the app's template cards by task id): a card is sent once per send key, also when
// the first answer came after the client gave up; a decided card has every member's buttons
// replaced with the outcome, once, with the send's response code; a card WeCom no longer takes an
// update of is left as it is. No Temporal, no database.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { cardDecisionsFor, type DecisionCard } from '../../domain/decision-cards.js';
import { cardSendKey } from '../../domain-node/decision-card-keys.js';
import type { PostedCard } from '../../vendors/decision-cards.js';
import { WECOM_RESPONSE_CODE_TTL_MS, wecomDecisionCards } from '../../vendors/wecom/decision-cards.js';
import { type FakeWeCom, startFakeWeCom } from '../../tools/harness/fake-wecom.js';

const AGENT_ID = 1000017;
const MEMBERS = ['zhangsan', 'lisi'];
const OUTCOME = { decision: 'abandon', decidedBy: 'card:wecom:zhangsan', decidedAt: '2026-12-06T12:07:00.000Z' };

const card = (idempotencyKey: string): DecisionCard => ({
  idempotencyKey,
  episode: 'compensating-mxbjwu80',
  waitingIn: 'COMPENSATING',
  customerId: 'CUST-WC-1',
  amount: '99.90 CNY',
  cause: { code: 'insufficient-stock', sentence: 'A line of the order asks for more stock than is available.' },
  waitingSince: '2026-12-06T11:00:00.000Z',
  decisions: cardDecisionsFor(['resubmit', 'abandon']),
});

describe('WeCom decision cards against the fake WeCom', () => {
  let wecom: FakeWeCom;
  before(async () => {
    wecom = await startFakeWeCom();
  });
  after(async () => {
    await wecom?.close();
  });

  const senderFor = (options: { timeoutMs?: number; now?: () => number } = {}) =>
    wecomDecisionCards({
      corpId: wecom.corpId,
      agentSecret: wecom.agentSecret,
      baseUrl: wecom.url,
      agentId: AGENT_ID,
      toUsers: MEMBERS,
      ...options,
    });
  const fresh = () => {
    const key = `APPROVAL:WC-${randomBytes(4).toString('hex')}:MAIN`;
    return { key, sendKey: cardSendKey('wecom', key, 'compensating-mxbjwu80') };
  };
  const cardsOf = (sendKey: string) => wecom.cards().filter((sent) => sent.taskId === sendKey);

  it('sends one template card to the members, its task id the send key, and refreshes every copy once', async () => {
    const { key, sendKey } = fresh();
    const sender = senderFor();
    const posted = await sender.send(card(key), sendKey);
    const [sent] = cardsOf(sendKey);
    assert.ok(sent);
    assert.deepEqual([sent.touser, sent.agentid], [MEMBERS, AGENT_ID]);
    assert.equal(posted.updateToken, sent.responseCode, 'the send’s response code kept for the redraw');
    assert.equal(await sender.refresh(posted, card(key), OUTCOME), 'updated');
    const [redrawn] = cardsOf(sendKey);
    assert.deepEqual([redrawn?.replacedFor.all, redrawn?.updates], ['abandon by zhangsan', 1]);
    // The code is spent: a second redraw is not taken, and said so rather than failing.
    assert.equal(await sender.refresh(posted, card(key), OUTCOME), 'not updatable');
    assert.equal(cardsOf(sendKey)[0]?.updates, 1);
  });

  /** A send answered after its client gave up, then retried: one card in the chat. */
  async function checkRetriedSendPostsOnce(): Promise<PostedCard> {
    const { key, sendKey } = fresh();
    const sender = senderFor({ timeoutMs: 300 });
    wecom.answerNextCardSendAfter(1_500);
    await assert.rejects(sender.send(card(key), sendKey), /no answer within 300 ms/);
    const retried = await sender.send(card(key), sendKey, { retried: true });
    assert.equal(
      wecom.cards().filter((sent) => JSON.stringify(sent.card).includes(key)).length,
      1,
      'the retry posted no second card',
    );
    return retried;
  }

  it('a send answered after the client’s timeout, retried with its key: one card, and the retry is read as sent', async () => {
    const retried = await checkRetriedSendPostsOnce();
    // The first answer, and its response code, were lost: the card cannot be redrawn, and is left as it is.
    assert.equal(retried.updateToken, undefined);
    assert.equal(await senderFor().refresh(retried, card('APPROVAL:WC-X:MAIN'), OUTCOME), 'not updatable');
  });

  it('the same check catches a sender whose task id changes between attempts: the retry posts a second card', async () => {
    // The broken variant: the real sender, with a new task id put in each send on the way to WeCom.
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      const address = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (address.includes('/cgi-bin/message/send') && typeof init?.body === 'string') {
        const body = JSON.parse(init.body) as { template_card: Record<string, unknown> };
        body.template_card.task_id = `card-${randomBytes(8).toString('hex')}`;
        return realFetch(input, { ...init, body: JSON.stringify(body) });
      }
      return realFetch(input, init);
    };
    try {
      await assert.rejects(checkRetriedSendPostsOnce(), /the retry posted no second card/);
    } finally {
      globalThis.fetch = realFetch;
    }
  });

  it('a card past its response code’s 72 hours is left as it is, without asking WeCom', async () => {
    const { key, sendKey } = fresh();
    let now = Date.now();
    const sender = senderFor({ now: () => now });
    const posted = await sender.send(card(key), sendKey);
    now += WECOM_RESPONSE_CODE_TTL_MS;
    const updatesBefore = wecom.cardUpdateRequests();
    assert.equal(await sender.refresh(posted, card(key), OUTCOME), 'not updatable');
    assert.equal(wecom.cardUpdateRequests(), updatesBefore, 'no request');
    assert.equal(cardsOf(sendKey)[0]?.updates, 0);
  });

  it('a task id WeCom took before the first attempt is a refusal, not a card: only a retry reads it as sent', async () => {
    const { key, sendKey } = fresh();
    await senderFor().send(card(key), sendKey);
    // Another deployment of the same app, say, took the key: this first attempt posted nothing.
    await assert.rejects(senderFor().send(card(key), sendKey), /errcode 42014/);
    await assert.rejects(senderFor().send(card(key), sendKey, { retried: false }), /errcode 42014/);
  });
});
