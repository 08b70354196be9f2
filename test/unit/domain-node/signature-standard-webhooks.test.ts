// The Standard Webhooks scheme of domain-node/signature.ts: the published test vector of the
// scheme's JavaScript library, agreement with that library in both directions, tampering, secret
// rotation, and the webhook's answer to a request signed in the scheme it does not take.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import {
  eventSignatureHeaders,
  EVENT_HEADERS,
  signBody,
  signStandard,
  standardSecretProblem,
  standardSignatureHeaders,
  verifySignature,
  verifyStandardSignature,
  verifyStandardSignatureOfAnyAge,
  verifyWebhookSignature,
} from '../../../domain-node/signature.js';

// The library's own sign test: a whsec_ secret, a message id, a timestamp and a body.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: '1614265330',
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const checkVector = (overrides: Partial<Parameters<typeof verifyStandardSignature>[0]> = {}) =>
  verifyStandardSignature({
    secret: VECTOR.secret,
    idHeader: VECTOR.id,
    timestampHeader: VECTOR.timestamp,
    signatureHeader: VECTOR.signature,
    rawBody: Buffer.from(VECTOR.body),
    toleranceSeconds: 300,
    nowSeconds: Number(VECTOR.timestamp),
    ...overrides,
  });

/** A secret as an operator may write it: plain (its UTF-8 bytes) or `whsec_<base64>`. */
const anySecret = fc.oneof(
  fc.string({ minLength: 16, maxLength: 64, unit: 'grapheme' }).filter((secret) => !secret.startsWith('whsec_')),
  fc.uint8Array({ minLength: 16, maxLength: 64 }).map((key) => 'whsec_' + Buffer.from(key).toString('base64')),
);
/** Ids the way senders make them: printable ASCII without a dot. */
const anyId = fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/);

/** The library's verifier for a secret of ours (a plain secret is handed over as its UTF-8 bytes). */
function libraryVerifier(secret: string): Webhook {
  return secret.startsWith('whsec_')
    ? new Webhook(secret)
    : new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' });
}

/** `text` with the byte at `index` (modulo its length) changed by a non-zero `delta`. */
function oneByteChanged(text: Buffer, index: number, delta: number): Buffer {
  const changed = Buffer.from(text);
  const at = index % changed.length;
  changed[at] = ((changed[at] ?? 0) + delta) % 256;
  return changed;
}

describe('Standard Webhooks signature', () => {
  it('signs the published test vector exactly', () => {
    assert.equal(signStandard(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body), VECTOR.signature);
    assert.deepEqual(checkVector(), { ok: true });
  });

  it('accepts a header listing several signatures when one v1 entry matches, and passes over other versions', () => {
    const other = 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
    const header = [other, 'v1a,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', VECTOR.signature, other].join(' ');
    assert.deepEqual(checkVector({ signatureHeader: header }), { ok: true });
    assert.equal(checkVector({ signatureHeader: `${other} v1a,${VECTOR.signature.slice(3)}` }).ok, false);
  });

  it('refuses missing headers, a stale timestamp, an id with a dot, and names the header', () => {
    const reasons = [
      checkVector({ idHeader: undefined }),
      checkVector({ timestampHeader: undefined }),
      checkVector({ signatureHeader: undefined }),
      checkVector({ nowSeconds: Number(VECTOR.timestamp) + 301 }),
      checkVector({ idHeader: 'msg.1' }),
    ].map((check) => (check.ok ? 'accepted' : check.reason));
    assert.deepEqual(
      reasons.map((reason) => /webhook-(id|timestamp|signature)/.exec(reason)?.[0]),
      ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'webhook-timestamp', 'webhook-id'],
      reasons.join('; '),
    );
  });

  it('round trip: what we sign, we and the standardwebhooks library verify, for any body and secret', () => {
    fc.assert(
      fc.property(anySecret, anyId, fc.string({ unit: 'grapheme' }), (secret, id, body) => {
        const timestamp = String(Math.floor(Date.now() / 1000));
        const signature = signStandard(secret, id, timestamp, body);
        const ours = verifyStandardSignature({
          secret,
          idHeader: id,
          timestampHeader: timestamp,
          signatureHeader: signature,
          rawBody: Buffer.from(body),
          toleranceSeconds: 300,
        });
        assert.deepEqual(ours, { ok: true });
        libraryVerifier(secret).verify(
          body,
          { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature },
          { jsonParse: false },
        );
      }),
    );
  });

  it('what the standardwebhooks library signs, we verify', () => {
    fc.assert(
      fc.property(anySecret, anyId, fc.string({ unit: 'grapheme' }), (secret, id, body) => {
        const now = Math.floor(Date.now() / 1000);
        const signature = libraryVerifier(secret).sign(id, new Date(now * 1000), body);
        const check = verifyStandardSignature({
          secret,
          idHeader: id,
          timestampHeader: String(now),
          signatureHeader: signature,
          rawBody: Buffer.from(body),
          toleranceSeconds: 300,
          nowSeconds: now,
        });
        assert.deepEqual(check, { ok: true });
      }),
    );
  });

  it('refuses any single-byte change of the body, id, timestamp or signature', () => {
    const now = 1_800_000_000;
    const part = fc.constantFrom('body', 'id', 'timestamp', 'signature');
    fc.assert(
      fc.property(
        anySecret,
        anyId,
        fc.uint8Array({ minLength: 1, maxLength: 300 }),
        part,
        fc.nat(),
        // Small changes too: a digit of the timestamp that stays a digit, inside the tolerance.
        fc.oneof(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 255 })),
        (secret, id, bodyBytes, changed, index, delta) => {
          const body = Buffer.from(bodyBytes);
          const timestamp = String(now);
          const sent = { body, id: Buffer.from(id), timestamp: Buffer.from(timestamp) };
          const signature = Buffer.from(signStandard(secret, id, timestamp, body));
          const received = {
            ...sent,
            signature,
            [changed]: oneByteChanged({ ...sent, signature }[changed], index, delta),
          };
          const check = verifyStandardSignature({
            secret,
            idHeader: received.id.toString('latin1'),
            timestampHeader: received.timestamp.toString('latin1'),
            signatureHeader: received.signature.toString('latin1'),
            rawBody: received.body,
            toleranceSeconds: 300,
            nowSeconds: now,
          });
          assert.equal(check.ok, false, `a change of the ${changed} was accepted`);
        },
      ),
      // The last digit of the timestamp, one second later: only the signature can tell.
      {
        examples: [
          ['whsec_' + Buffer.alloc(24, 1).toString('base64'), 'msg_1', new Uint8Array([123]), 'timestamp', 9, 1],
        ],
      },
    );
  });

  it('knows a whsec_ secret that is not base64, or too short, as unusable', () => {
    assert.match(standardSecretProblem('whsec_not*base64*at*all!') ?? '', /base64/);
    assert.match(standardSecretProblem('whsec_' + Buffer.alloc(8).toString('base64')) ?? '', /16 bytes/);
    assert.equal(standardSecretProblem(VECTOR.secret), undefined);
    assert.equal(standardSecretProblem('whsec-like but plain secret'), undefined);
  });
});

describe('secret rotation', () => {
  const current = 'whsec_' + Buffer.from('the-current-secret-key-bytes').toString('base64');
  const previous = 'the-previous-secret-0123456789';
  const stranger = 'a-secret-nobody-holds-0123456789';
  const now = 1_800_000_000;
  const body = Buffer.from('{"type":"order.created"}');

  function receivedWith(secrets: { secret: string; previousSecret?: string }) {
    const headers = eventSignatureHeaders(secrets, 'evt_1', String(now), body);
    /** Whether a receiver holding only `secret` verifies each scheme. */
    return (secret: string) => ({
      standard: verifyStandardSignature({
        secret,
        idHeader: headers['webhook-id'],
        timestampHeader: headers['webhook-timestamp'],
        signatureHeader: headers['webhook-signature'],
        rawBody: body,
        toleranceSeconds: 300,
        nowSeconds: now,
      }).ok,
      event: verifySignature({
        secret,
        timestampHeader: headers['x-event-timestamp'],
        signatureHeader: headers['x-event-signature'],
        rawBody: body,
        toleranceSeconds: 300,
        nowSeconds: now,
        headers: EVENT_HEADERS,
      }).ok,
    });
  }

  it('an event signed during a rotation verifies with either secret, in both schemes, and not with a third', () => {
    const verifiedBy = receivedWith({ secret: current, previousSecret: previous });
    assert.deepEqual(verifiedBy(current), { standard: true, event: true });
    assert.deepEqual(verifiedBy(previous), { standard: true, event: true });
    assert.deepEqual(verifiedBy(stranger), { standard: false, event: false });
  });

  it('once the rotation is over, a receiver still holding the previous secret refuses the event', () => {
    const verifiedBy = receivedWith({ secret: current });
    assert.deepEqual(verifiedBy(current), { standard: true, event: true });
    assert.deepEqual(verifiedBy(previous), { standard: false, event: false });
  });

  it('the webhook accepts a signature by the previous secret only while it is configured', () => {
    const timestamp = String(now);
    const signedBy = (secret: string) => signBody(secret, timestamp, body);
    const check = (signature: string, previousSecret?: string) =>
      verifyWebhookSignature({
        scheme: 'oa',
        secret: current,
        previousSecret,
        header: (name) => ({ 'X-OA-Timestamp': timestamp, 'X-OA-Signature': signature })[name],
        rawBody: body,
        toleranceSeconds: 300,
        nowSeconds: now,
      }).ok;
    assert.deepEqual([check(signedBy(current), previous), check(signedBy(previous), previous)], [true, true]);
    assert.deepEqual([check(signedBy(current)), check(signedBy(previous))], [true, false]);
  });
});

describe('the signature of a broker message, which has no timestamp window', () => {
  const secret = 'downstream-secret-0123456789';
  const body = Buffer.from('{"type":"order.created","eventId":"evt_1"}');
  const now = Math.floor(Date.now() / 1000);

  const anyAge = (headers: Record<string, string>, rawBody: Buffer = body, secrets = { secret }) =>
    verifyStandardSignatureOfAnyAge({
      ...secrets,
      idHeader: headers['webhook-id'],
      timestampHeader: headers['webhook-timestamp'],
      signatureHeader: headers['webhook-signature'],
      rawBody,
    });

  it('the broker headers are the HTTP event’s Standard Webhooks headers, which the library verifies', () => {
    const timestamp = String(now);
    const broker = standardSignatureHeaders(
      { secret, previousSecret: 'the-old-secret-0123456789' },
      'evt_1',
      timestamp,
      body,
    );
    const http = eventSignatureHeaders(
      { secret, previousSecret: 'the-old-secret-0123456789' },
      'evt_1',
      timestamp,
      body,
    );
    assert.deepEqual(broker, {
      'webhook-id': http['webhook-id'],
      'webhook-timestamp': http['webhook-timestamp'],
      'webhook-signature': http['webhook-signature'],
    });
    assert.equal(broker['webhook-signature'].split(' ').length, 2, 'one entry per secret during a rotation');
    libraryVerifier(secret).verify(body, broker, { jsonParse: false });
  });

  it('a message signed a day ago is accepted without a window, and refused with one', () => {
    const dayOld = standardSignatureHeaders({ secret }, 'evt_1', String(now - 24 * 3600), body);
    assert.deepEqual(anyAge(dayOld), { ok: true });
    const windowed = verifyStandardSignature({
      secret,
      idHeader: dayOld['webhook-id'],
      timestampHeader: dayOld['webhook-timestamp'],
      signatureHeader: dayOld['webhook-signature'],
      rawBody: body,
      toleranceSeconds: 300,
    });
    assert.deepEqual(windowed, { ok: false, reason: 'webhook-timestamp is more than 300 seconds off' });
  });

  it('without a window, the signature still decides: another body, id, timestamp or secret is refused', () => {
    const signed = standardSignatureHeaders({ secret }, 'evt_1', String(now - 3600), body);
    const refusals = [
      anyAge(signed, Buffer.from('{"type":"order.created","eventId":"evt_2"}')),
      anyAge({ ...signed, 'webhook-id': 'evt_2' }),
      anyAge({ ...signed, 'webhook-timestamp': String(now) }),
      anyAge({ ...signed, 'webhook-timestamp': 'yesterday' }),
      anyAge(signed, body, { secret: 'a-secret-nobody-holds-0123456789' }),
      anyAge({ 'webhook-id': 'evt_1', 'webhook-timestamp': String(now) }),
    ].map((check) => (check.ok ? 'accepted' : check.reason));
    assert.deepEqual(refusals, [
      'no webhook-signature entry matches the id, timestamp and body',
      'no webhook-signature entry matches the id, timestamp and body',
      'no webhook-signature entry matches the id, timestamp and body',
      'webhook-timestamp must be unix seconds',
      'no webhook-signature entry matches the id, timestamp and body',
      'missing webhook-signature header',
    ]);
    // A message signed during a rotation verifies with either secret.
    const rotating = standardSignatureHeaders(
      { secret, previousSecret: 'the-old-secret-0123456789' },
      'evt_1',
      '1',
      body,
    );
    assert.deepEqual(anyAge(rotating, body, { secret: 'the-old-secret-0123456789' }), { ok: true });
  });
});

describe('the webhook and the scheme it takes', () => {
  const secret = 'webhook-secret-0123456789';
  const now = 1_800_000_000;
  const body = Buffer.from('{"approvalNo":"AP-1"}');
  const oaSigned = { 'X-OA-Timestamp': String(now), 'X-OA-Signature': signBody(secret, String(now), body) };
  const standardSigned = {
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(now),
    'webhook-signature': signStandard(secret, 'msg_1', String(now), body),
  };
  const check = (scheme: 'oa' | 'standard', headers: Record<string, string>) =>
    verifyWebhookSignature({
      scheme,
      secret,
      header: (name) => headers[name],
      rawBody: body,
      toleranceSeconds: 300,
      nowSeconds: now,
    });

  it('accepts a request signed in the configured scheme', () => {
    assert.deepEqual(check('oa', oaSigned), { ok: true });
    assert.deepEqual(check('standard', standardSigned), { ok: true });
  });

  it('refuses a request signed in the other scheme, naming the headers it expects', () => {
    const toStandard = check('standard', oaSigned);
    assert.equal(toStandard.ok, false);
    assert.match(toStandard.ok ? '' : toStandard.reason, /webhook-id, webhook-timestamp, webhook-signature.*X-OA/);
    const toOa = check('oa', standardSigned);
    assert.equal(toOa.ok, false);
    assert.match(toOa.ok ? '' : toOa.reason, /X-OA-Timestamp and X-OA-Signature.*webhook-/);
  });
});
