// DingTalk's decision cards against the fake DingTalk (a real HTTP server on 127.0.0.1 that issues
// access tokens and keeps the app's cards by outTrackId): a card is created and delivered once per
// send key, also when the first answer came after the client gave up; a key taken before the first
// attempt, or a card not delivered, is a refusal; a decided card is redrawn by its outTrackId with
// its variables merged. No Temporal, no database.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { cardDecisionsFor, type DecisionCard } from '../../domain/decision-cards.js';
import { cardSendKey } from '../../domain-node/decision-card-keys.js';
import { dingtalkDecisionCards } from '../../vendors/dingtalk/decision-cards.js';
import { type FakeDingTalk, startFakeDingTalk } from '../../tools/harness/fake-dingtalk.js';

const DECISIONS = {
  templateId: 'a1b2c3d4-0000-4000-8000-abcdefabcdef.schema',
  openSpaceId: 'dtv1.card//IM_GROUP.cidFakeGroup01==',
  spaceType: 'IM_GROUP' as const,
};
const OUTCOME = { decision: 'abandon', decidedBy: 'card:dingtalk:manager01', decidedAt: '2026-12-06T12:07:00.000Z' };

const card = (idempotencyKey: string): DecisionCard => ({
  idempotencyKey,
  episode: 'compensating-mxbjwu80',
  waitingIn: 'COMPENSATING',
  customerId: 'CUST-DT-1',
  amount: '99.90 CNY',
  cause: { code: 'insufficient-stock', sentence: 'A line of the order asks for more stock than is available.' },
  waitingSince: '2026-12-06T11:00:00.000Z',
  decisions: cardDecisionsFor(['resubmit', 'abandon']),
});

describe('DingTalk decision cards against the fake DingTalk', () => {
  let dingtalk: FakeDingTalk;
  before(async () => {
    dingtalk = await startFakeDingTalk();
  });
  after(async () => {
    await dingtalk?.close();
  });

  const senderFor = (options: { timeoutMs?: number } = {}) =>
    dingtalkDecisionCards({
      appKey: dingtalk.appKey,
      appSecret: dingtalk.appSecret,
      baseUrl: dingtalk.url,
      decisions: DECISIONS,
      ...options,
    });
  const fresh = () => {
    const key = `APPROVAL:DT-${randomBytes(4).toString('hex')}:MAIN`;
    return { key, sendKey: cardSendKey('dingtalk', key, 'compensating-mxbjwu80') };
  };
  const cardsFor = (key: string) => dingtalk.cards.cards().filter((each) => each.createdWith.idempotencyKey === key);

  it('creates one card in the group under the send key, its clicks to come over the Stream, and redraws it decided', async () => {
    const { key, sendKey } = fresh();
    const sender = senderFor();
    const posted = await sender.send(card(key), sendKey);
    assert.equal(posted.messageId, sendKey);
    const [created] = cardsFor(key);
    assert.ok(created);
    assert.deepEqual(
      [created.outTrackId, created.templateId, created.openSpaceId, created.callbackType],
      [sendKey, DECISIONS.templateId, DECISIONS.openSpaceId, 'STREAM'],
    );
    assert.equal(await sender.refresh(posted, card(key), OUTCOME), 'updated');
    const [redrawn] = cardsFor(key);
    assert.deepEqual([redrawn?.data.status, redrawn?.data.buttons, redrawn?.updates], ['decided', '[]', 1]);
    assert.match(redrawn?.data.outcome ?? '', /^abandon by card:dingtalk:manager01/);
    assert.equal(redrawn?.data.customerId, 'CUST-DT-1', 'the other variables kept');
  });

  /** A create answered after its client gave up, then retried: one card. */
  async function checkRetriedSendCreatesOnce(): Promise<void> {
    const { key, sendKey } = fresh();
    const sender = senderFor({ timeoutMs: 300 });
    dingtalk.cards.answerNextCreateAfter(1_500);
    await assert.rejects(sender.send(card(key), sendKey), /no answer within 300 ms/);
    const retried = await sender.send(card(key), sendKey, { retried: true });
    assert.equal(cardsFor(key).length, 1, 'the retry created no second card');
    // The card is addressed by its outTrackId: redrawn although the first answer was lost.
    assert.equal(await sender.refresh(retried, card(key), OUTCOME), 'updated');
  }

  it('a send answered after the client’s timeout, retried with its key: one card, redrawn by its key', async () => {
    await checkRetriedSendCreatesOnce();
  });

  it('the same check catches a sender whose outTrackId changes between attempts: the retry creates a second card', async () => {
    // The broken variant: the real sender, with a new outTrackId put in each create on the way to DingTalk.
    const realFetch = globalThis.fetch;
    globalThis.fetch = (input, init) => {
      const address = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (address.includes('/v1.0/card/instances/createAndDeliver') && typeof init?.body === 'string') {
        const body = JSON.parse(init.body) as Record<string, unknown>;
        body.outTrackId = `card-${randomBytes(8).toString('hex')}`;
        return realFetch(input, { ...init, body: JSON.stringify(body) });
      }
      return realFetch(input, init);
    };
    try {
      await assert.rejects(checkRetriedSendCreatesOnce(), /the retry created no second card/);
    } finally {
      globalThis.fetch = realFetch;
    }
  });

  it('an outTrackId taken before the first attempt is a refusal; only a retry reads it as its card', async () => {
    const { key, sendKey } = fresh();
    await senderFor().send(card(key), sendKey);
    await assert.rejects(senderFor().send(card(key), sendKey), /param\.cardAlreadyExist/);
  });

  it('a card created but not delivered (the robot not in the group) is said, and a card DingTalk does not know is not redrawn', async () => {
    const { key, sendKey } = fresh();
    dingtalk.cards.failNextDelivery();
    await assert.rejects(senderFor().send(card(key), sendKey), /created, but not delivered to its open space/);
    const unknown = fresh();
    assert.equal(
      await senderFor().refresh({ messageId: unknown.sendKey }, card(unknown.key), OUTCOME),
      'not updatable',
    );
  });
});
