import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decrypt, getSignature } from '@wecom/crypto';
import type { ConnectorReply, InboundCallback } from '../../../../vendors/connector.js';
import { createDingTalkConnector, type DingTalkSuccess } from '../../../../vendors/dingtalk/connector.js';
import {
  dingtalkApprovalPayload,
  dingtalkCallback,
  dingtalkDecrypt,
  dingtalkSignature,
  randomDingTalkAesKey,
} from '../../../../tools/harness/fake-dingtalk.js';
import { withOneHexDigitChanged } from '../../../../tools/harness/message-crypto-scheme.js';

// The URL-check callback DingTalk's own callback-crypto repository decrypts in its example
// (token, aes_key and corp id as given there).
const VECTOR = {
  token: 'mryue',
  aesKey: 'Yue0EfdN5900c1ce5cf6A152c63DDe1808a60c5ecd7',
  appKey: 'ding6ccabc44d2c8d38b',
  query: { msg_signature: '03044561471240d4a14bb09372dfcfd4fd0e40cb', timestamp: '1608001896814', nonce: 'WL4PK6yA' },
  encrypt:
    '0vJiX6vliEpwG3U45CtXqi+m8PXbQRARJ8p8BbDuD1EMTDf0jKpQ79QS93qEk7XHpP6u+oTTrd15NRPvNvmBKyDCYxxOK+HZeKju4yhELOFchzNukR+t8SB/qk4ROMu3',
};
const vectorRequest = (query: Record<string, string> = VECTOR.query) => ({
  headers: {},
  query,
  rawBody: Buffer.from(JSON.stringify({ encrypt: VECTOR.encrypt })),
});

const TOLERANCE_SECONDS = 300;
/** A connector for the published example, its clock at the example's own timestamp. */
const vectorConnector = (overrides: { token?: string; appKey?: string; nowMs?: number } = {}) =>
  createDingTalkConnector({
    token: overrides.token ?? VECTOR.token,
    aesKey: VECTOR.aesKey,
    appKey: overrides.appKey ?? VECTOR.appKey,
    toleranceSeconds: TOLERANCE_SECONDS,
    now: () => overrides.nowMs ?? Number(VECTOR.query.timestamp),
  });

const OPTIONS = { token: 'tok-42', aesKey: randomDingTalkAesKey(), appKey: 'dingappkey0001' };
const connector = createDingTalkConnector({ ...OPTIONS, toleranceSeconds: TOLERANCE_SECONDS });

/** The refusal's reason: what the route logs (it answers every refusal alike). */
const refusal = (result: InboundCallback) =>
  result.kind === 'refused' ? result.reason : assert.fail(`not refused: ${result.kind}`);

/** The reply decrypts to `success` for the app key and its signature verifies. */
function assertEncryptedSuccess(reply: ConnectorReply, options: { token: string; aesKey: string; appKey: string }) {
  assert.equal(reply.status, 200);
  const body = reply.body as DingTalkSuccess;
  assert.deepEqual(dingtalkDecrypt(options.aesKey, body.encrypt), { message: 'success', key: options.appKey });
  assert.equal(body.msg_signature, dingtalkSignature(options.token, body.timeStamp, body.nonce, body.encrypt));
  assert.match(body.timeStamp, /^\d{13}$/);
  assert.match(body.nonce, /^[A-Za-z0-9]{16}$/);
}

describe('DingTalk connector', () => {
  it("@wecom/crypto verifies and decrypts DingTalk's published example", () => {
    const { msg_signature, timestamp, nonce } = VECTOR.query;
    assert.equal(getSignature(VECTOR.token, timestamp, nonce, VECTOR.encrypt), msg_signature);
    const { message, id } = decrypt(VECTOR.aesKey, VECTOR.encrypt);
    assert.equal(message, '{"EventType":"check_url"}');
    assert.equal(id, VECTOR.appKey);
  });

  it('answers the published check_url callback with success, encrypted and signed', () => {
    const result = vectorConnector().read(vectorRequest());
    assert.equal(result.kind, 'challenge');
    if (result.kind === 'challenge') assertEncryptedSuccess(result.reply, VECTOR);
  });

  it('refuses the published callback for another app key, another token or a missing signature', () => {
    assert.match(refusal(vectorConnector({ appKey: 'dingother' }).read(vectorRequest())), /another app key/);
    const otherToken = vectorConnector({ token: 'nope' });
    assert.match(refusal(otherToken.read(vectorRequest())), /msg_signature does not match/);
    assert.match(refusal(otherToken.read(vectorRequest({ timestamp: '1', nonce: 'n' }))), /missing msg_signature/);
  });

  it('refuses the published callback replayed outside WEBHOOK_TOLERANCE_SECONDS (timestamp in milliseconds), behind or ahead', () => {
    const sentMs = Number(VECTOR.query.timestamp);
    for (const offsetMs of [-(TOLERANCE_SECONDS * 1000) - 1, TOLERANCE_SECONDS * 1000 + 1, 86_400_000]) {
      const reason = refusal(vectorConnector({ nowMs: sentMs - offsetMs }).read(vectorRequest()));
      assert.match(reason, /timestamp is more than 300 seconds off/, `sent ${offsetMs} ms away from now`);
    }
    for (const offsetMs of [-(TOLERANCE_SECONDS * 1000), TOLERANCE_SECONDS * 1000]) {
      assert.equal(vectorConnector({ nowMs: sentMs - offsetMs }).read(vectorRequest()).kind, 'challenge');
    }
  });

  it('refuses a malformed aes_key when created, not at the first callback', () => {
    assert.throws(
      () => createDingTalkConnector({ ...OPTIONS, aesKey: 'short', toleranceSeconds: TOLERANCE_SECONDS }),
      /43 characters/,
    );
  });

  it('acknowledges an authentic bpms_instance_change without a processInstanceId as unusable, with the reason', () => {
    const payload = dingtalkApprovalPayload({ processInstanceId: 'P-0', type: 'finish', result: 'agree' });
    delete payload.processInstanceId;
    const read = connector.read(dingtalkCallback(payload, OPTIONS));
    assert.equal(read.kind, 'unusable');
    if (read.kind !== 'unusable') return;
    assert.equal(read.reason, 'bpms_instance_change without a processInstanceId');
    assertEncryptedSuccess(read.ack, OPTIONS);
  });

  it('maps bpms_instance_change by type and result', () => {
    const cases: Array<[string, string | undefined, string]> = [
      ['start', undefined, 'PENDING'],
      ['finish', 'agree', 'APPROVED'],
      ['finish', 'refuse', 'REJECTED'],
      ['finish', 'redirect', 'OTHER'],
      ['terminate', undefined, 'CANCELED'],
      ['delete', undefined, 'DELETED'],
      ['comment', undefined, 'OTHER'],
    ];
    for (const [type, result, status] of cases) {
      const read = connector.read(
        dingtalkCallback(
          dingtalkApprovalPayload({ processInstanceId: 'P-1', type, result, eventId: `E-${type}` }),
          OPTIONS,
        ),
      );
      assert.equal(read.kind, 'event', `${type}/${result}`);
      if (read.kind !== 'event') continue;
      assert.deepEqual(read.event, {
        vendor: 'dingtalk',
        eventId: `E-${type}`,
        eventType: 'bpms_instance_change',
        instanceId: 'P-1',
        status,
        definitionCode: 'PROC-FAKE',
      });
      assertEncryptedSuccess(read.ack, OPTIONS);
    }
  });

  it('names a delivery without EventId by the digest of its plaintext: the same delivery, the same id', () => {
    const payload = dingtalkApprovalPayload({ processInstanceId: 'P-2', type: 'finish', result: 'agree' });
    const first = connector.read(dingtalkCallback(payload, OPTIONS));
    const again = connector.read(dingtalkCallback(payload, OPTIONS));
    const other = connector.read(dingtalkCallback({ ...payload, finishTime: 1 }, OPTIONS));
    assert.ok(first.kind === 'event' && again.kind === 'event' && other.kind === 'event');
    assert.match(first.event.eventId, /^sha256:[0-9a-f]{64}$/);
    assert.equal(again.event.eventId, first.event.eventId);
    assert.notEqual(other.event.eventId, first.event.eventId);
  });

  it('acknowledges other events with the encrypted success, without reading them as approvals', () => {
    const result = connector.read(
      dingtalkCallback({ EventType: 'bpms_task_change', processInstanceId: 'P-3' }, OPTIONS),
    );
    assert.equal(result.kind, 'other');
    if (result.kind === 'other') {
      assert.equal(result.eventType, 'bpms_task_change');
      assertEncryptedSuccess(result.ack, OPTIONS);
    }
  });

  const types = fc.constantFrom(
    ['finish', 'agree', 'APPROVED'],
    ['finish', 'refuse', 'REJECTED'],
    ['terminate', undefined, 'CANCELED'],
    ['start', undefined, 'PENDING'],
  );

  it('reads back any approval event the builder makes as the same event', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        types,
        (instanceId, eventId, [type, result, status]) => {
          const read = connector.read(
            dingtalkCallback(
              dingtalkApprovalPayload({ processInstanceId: instanceId, type, result, eventId }),
              OPTIONS,
            ),
          );
          assert.equal(read.kind, 'event');
          if (read.kind !== 'event') return;
          assert.deepEqual(read.event, {
            vendor: 'dingtalk',
            eventId,
            eventType: 'bpms_instance_change',
            instanceId,
            status,
            definitionCode: 'PROC-FAKE',
          });
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses any single-byte change of the body or of msg_signature', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        types,
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        fc.boolean(),
        (instanceId, [type, result], at, flip, inSignature) => {
          const built = dingtalkCallback(
            dingtalkApprovalPayload({ processInstanceId: instanceId, type, result }),
            OPTIONS,
          );
          if (inSignature) {
            built.query.msg_signature = withOneHexDigitChanged(built.query.msg_signature ?? '', at, flip);
          } else {
            const body = Buffer.from(built.rawBody);
            const i = at % body.length;
            body[i] = (body[i] ?? 0) ^ flip;
            built.rawBody = body;
          }
          assert.equal(connector.read(built).kind, 'refused');
        },
      ),
      { numRuns: 300 },
    );
  });
});
