// The names of a waiting episode and of its card's post: an episode is the state and the moment the
// key began to wait in it; a send key is within every vendor's bound (Feishu's uuid: 50 characters)
// and its alphabet, and differs for every vendor, key and episode.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { cardSendKey, waitingEpisode } from '../../../domain-node/decision-card-keys.js';

describe('the keys of a decision card', () => {
  it('an episode is the state and when it began; the same waiting gives the same episode, a new one another', () => {
    const since = '2026-12-06T10:00:00.000Z';
    assert.equal(waitingEpisode('DELIVERY_FAILED', since), waitingEpisode('DELIVERY_FAILED', since));
    assert.match(waitingEpisode('DELIVERY_FAILED', since), /^delivery-failed-[0-9a-z]+$/);
    assert.notEqual(waitingEpisode('COMPENSATING', since), waitingEpisode('COMPENSATING', '2026-12-06T10:00:00.001Z'));
    assert.throws(() => waitingEpisode('COMPENSATING', 'yesterday'), /not a time/);
  });

  it('a send key fits every vendor, and two cards never share one (generated)', () => {
    const part = fc.string({ minLength: 1, maxLength: 80 });
    // Parts that run into each other when joined (`a` + `b\nc`, `a\nb` + `c`) are two cards too.
    assert.notEqual(cardSendKey('feishu', 'a', 'b\nc'), cardSendKey('feishu', 'a\nb', 'c'));
    fc.assert(
      fc.property(fc.tuple(part, part, part), fc.tuple(part, part, part), (a, b) => {
        const [keyA, keyB] = [cardSendKey(...a), cardSendKey(...b)];
        assert.match(keyA, /^card-[0-9a-f]{40}$/);
        assert.ok(keyA.length <= 50);
        if (a.some((value, index) => value !== b[index])) assert.notEqual(keyA, keyB);
      }),
    );
  });
});
