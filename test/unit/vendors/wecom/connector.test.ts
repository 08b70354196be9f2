// The WeCom connector, on its own: WeCom's published URL check, callbacks built by the harness on
// node:crypto as WeCom builds them, and the little XML reader it needs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { InboundCallback } from '../../../../vendors/connector.js';
import { createWeComConnector } from '../../../../vendors/wecom/connector.js';
import { xmlChildren, xmlChildrenOf } from '../../../../vendors/wecom/xml.js';
import {
  randomWeComAesKey,
  wecomApprovalXml,
  wecomCallback,
  wecomEnvelope,
  wecomUrlCheck,
} from '../../../../tools/harness/fake-wecom.js';
import { sealMessage, withOneHexDigitChanged } from '../../../../tools/harness/message-crypto-scheme.js';

// The URL check of WeCom's callback documentation (token, EncodingAESKey and corp id as given there).
const VECTOR = {
  token: 'QDG6eK',
  encodingAesKey: 'jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C',
  corpId: 'wx5823bf96d3bd56c7',
  query: {
    msg_signature: '5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3',
    timestamp: '1409659589',
    nonce: '263014780',
    echostr: 'P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ==',
  },
};
const TOLERANCE_SECONDS = 300;
const vectorConnector = (overrides: { corpId?: string; nowSeconds?: number } = {}) =>
  createWeComConnector({
    token: VECTOR.token,
    encodingAesKey: VECTOR.encodingAesKey,
    corpId: overrides.corpId ?? VECTOR.corpId,
    toleranceSeconds: TOLERANCE_SECONDS,
    now: () => (overrides.nowSeconds ?? Number(VECTOR.query.timestamp)) * 1000,
  });
const vectorRequest = (query: Record<string, string> = VECTOR.query) => ({
  method: 'GET' as const,
  headers: {},
  query,
  rawBody: Buffer.alloc(0),
});

const CRYPTO = { token: 'wecom-token-7', encodingAesKey: randomWeComAesKey(), corpId: 'wwcorp0001' };
const connector = createWeComConnector({ ...CRYPTO, toleranceSeconds: TOLERANCE_SECONDS });
const approvalXml = (spNo: string, spStatus: number) => wecomApprovalXml({ corpId: CRYPTO.corpId, spNo, spStatus });

const refusal = (result: InboundCallback) =>
  result.kind === 'refused' ? result.reason : assert.fail(`not refused: ${result.kind}`);

describe('WeCom connector', () => {
  it("answers WeCom's published URL check with the echostr's plaintext, as text", () => {
    const result = vectorConnector().read(vectorRequest());
    assert.equal(result.kind, 'challenge');
    if (result.kind !== 'challenge') return;
    assert.deepEqual(result.reply, {
      status: 200,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body: '1616140317555161061',
    });
  });

  it('refuses the published URL check for another corp id, with another signature, replayed, or unsigned', () => {
    assert.match(refusal(vectorConnector({ corpId: 'wwother' }).read(vectorRequest())), /another corp id/);
    const forged = { ...VECTOR.query, msg_signature: '0'.repeat(40) };
    assert.match(refusal(vectorConnector().read(vectorRequest(forged))), /msg_signature does not match/);
    const sent = Number(VECTOR.query.timestamp);
    for (const offset of [-(TOLERANCE_SECONDS + 1), TOLERANCE_SECONDS + 1]) {
      const reason = refusal(vectorConnector({ nowSeconds: sent - offset }).read(vectorRequest()));
      assert.match(reason, /timestamp is more than 300 seconds off/);
    }
    assert.equal(vectorConnector({ nowSeconds: sent + TOLERANCE_SECONDS }).read(vectorRequest()).kind, 'challenge');
    const { msg_signature: _dropped, ...unsigned } = VECTOR.query;
    assert.match(refusal(vectorConnector().read(vectorRequest(unsigned))), /missing msg_signature/);
  });

  it('checks the signature before it decrypts: a mis-signed ciphertext of garbage is refused for its signature', () => {
    const request = wecomCallback('', CRYPTO, { ciphertext: 'bm90IGEgY2lwaGVydGV4dA==' });
    request.query.msg_signature = 'f'.repeat(40);
    assert.match(refusal(connector.read(request)), /msg_signature does not match/);
    // Signed, the same garbage reaches the decryption, and is refused there.
    assert.match(
      refusal(connector.read(wecomCallback('', CRYPTO, { ciphertext: 'bm90IGEgY2lwaGVydGV4dA==' }))),
      /does not decrypt with the configured EncodingAESKey/,
    );
  });

  it('refuses a malformed EncodingAESKey when created', () => {
    assert.throws(
      () => createWeComConnector({ ...CRYPTO, encodingAesKey: 'short', toleranceSeconds: TOLERANCE_SECONDS }),
      /43 characters/,
    );
  });

  it('maps sys_approval_change by SpStatus, TemplateId as the definition', () => {
    const cases: Array<[number, string]> = [
      [1, 'PENDING'],
      [2, 'APPROVED'],
      [3, 'REJECTED'],
      [4, 'CANCELED'],
      [6, 'REVOKED'],
      [7, 'DELETED'],
      [10, 'OTHER'],
    ];
    for (const [spStatus, status] of cases) {
      const read = connector.read(wecomCallback(approvalXml('202612010001', spStatus), CRYPTO));
      assert.equal(read.kind, 'event', String(spStatus));
      if (read.kind !== 'event') continue;
      assert.deepEqual(
        { ...read.event, eventId: 'x' },
        {
          vendor: 'wecom',
          eventId: 'x',
          eventType: 'sys_approval_change',
          instanceId: '202612010001',
          status,
          definitionCode: 'TEMPLATE-FAKE',
        },
      );
      assert.deepEqual(read.ack, { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: '' });
    }
  });

  it('names a delivery by the digest of its plaintext: a resent callback has the same id, another event another', () => {
    const message = approvalXml('202612010002', 2);
    const first = connector.read(wecomCallback(message, CRYPTO));
    const again = connector.read(wecomCallback(message, CRYPTO));
    const other = connector.read(wecomCallback(approvalXml('202612010002', 6), CRYPTO));
    assert.ok(first.kind === 'event' && again.kind === 'event' && other.kind === 'event');
    assert.match(first.event.eventId, /^sha256:[0-9a-f]{64}$/);
    assert.equal(again.event.eventId, first.event.eventId);
    assert.notEqual(other.event.eventId, first.event.eventId);
  });

  it('acknowledges other events, and an approval event without SpNo as unusable', () => {
    const other = connector.read(
      wecomCallback(
        `<xml><ToUserName><![CDATA[${CRYPTO.corpId}]]></ToUserName><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[change_contact]]></Event></xml>`,
        CRYPTO,
      ),
    );
    assert.deepEqual(other.kind === 'other' && other.eventType, 'change_contact');
    const unusable = connector.read(
      wecomCallback(approvalXml('202612010003', 2).replace('<SpNo>202612010003</SpNo>', ''), CRYPTO),
    );
    assert.deepEqual(
      unusable.kind === 'unusable' && unusable.reason,
      'sys_approval_change without an ApprovalInfo.SpNo',
    );
  });

  it('refuses an authentic ciphertext whose plaintext is no XML, and an envelope without Encrypt', () => {
    assert.match(refusal(connector.read(wecomCallback('{"not":"xml"}', CRYPTO))), /not an XML message/);
    const envelope = wecomCallback(approvalXml('202612010004', 2), CRYPTO);
    envelope.rawBody = Buffer.from('<xml><ToUserName>x</ToUserName></xml>');
    assert.match(refusal(connector.read(envelope)), /no ciphertext/);
  });

  it('reads back any approval the builder makes as the same instance and status', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{1,20}$/), fc.constantFrom(1, 2, 3, 4, 6, 7), (spNo, spStatus) => {
        const read = connector.read(wecomCallback(approvalXml(spNo, spStatus), CRYPTO));
        assert.ok(read.kind === 'event');
        assert.equal(read.event.instanceId, spNo);
      }),
      { numRuns: 100 },
    );
  });

  it('refuses any single-byte change of the ciphertext or of msg_signature', () => {
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 255 }), fc.boolean(), (at, flip, inSignature) => {
        const ciphertext = sealMessage(CRYPTO.encodingAesKey, approvalXml('202612010005', 2), CRYPTO.corpId);
        const built = wecomCallback('', CRYPTO, { ciphertext });
        if (inSignature) {
          built.query.msg_signature = withOneHexDigitChanged(built.query.msg_signature ?? '', at, flip);
        } else {
          const bytes = Buffer.from(ciphertext);
          const i = at % bytes.length;
          bytes[i] = (bytes[i] ?? 0) ^ flip;
          built.rawBody = Buffer.from(wecomEnvelope(bytes.toString('latin1'), CRYPTO.corpId), 'latin1');
        }
        assert.equal(connector.read(built).kind, 'refused');
      }),
      { numRuns: 300 },
    );
  });

  it('answers a URL check only with an echo: a plaintext of markup, white space or over 128 characters is refused', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ minLength: 129, maxLength: 400 }).filter((text) => !text.includes('\0')),
          fc.tuple(fc.string({ maxLength: 60 }), fc.string({ maxLength: 60 })).map(([a, b]) => `${a}<${b}`),
          fc
            .tuple(fc.string({ maxLength: 60 }), fc.constantFrom(' ', '\n', '\t', '\u00e9'))
            .map(([a, b]) => `x${a}${b}`),
          fc.constant(''),
        ),
        (plaintext) => {
          const reason = refusal(connector.read(wecomUrlCheck(plaintext, CRYPTO)));
          assert.match(reason, /not an echo|longer than any echo/);
        },
      ),
      { numRuns: 200 },
    );
    for (const echo of ['1', '5927782489442352469', 'x'.repeat(128)]) {
      const read = connector.read(wecomUrlCheck(echo, CRYPTO));
      assert.equal(read.kind === 'challenge' && read.reply.body, echo);
    }
  });

  it('refuses a genuine event replayed as a URL check before decrypting it: its echostr is longer than an echo', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{12,20}$/), fc.constantFrom(1, 2, 3, 4, 6, 7, 10), (spNo, spStatus) => {
        const event = wecomCallback(approvalXml(spNo, spStatus), CRYPTO);
        const encrypt = xmlChildren(event.rawBody.toString('utf8'))?.get('Encrypt');
        assert.ok(encrypt);
        const replayed = {
          ...event,
          method: 'GET' as const,
          query: { ...event.query, echostr: encrypt },
          rawBody: Buffer.alloc(0),
        };
        assert.match(refusal(connector.read(replayed)), /longer than any echo/);
      }),
      { numRuns: 50 },
    );
  });

  it('searches the signed body for its Encrypt alone: a valid ciphertext in any envelope is read, a missing one refused', () => {
    const ciphertext = sealMessage(CRYPTO.encodingAesKey, approvalXml('202612040001', 2), CRYPTO.corpId);
    const genuine = wecomCallback(approvalXml('202612040001', 2), CRYPTO, { ciphertext });
    const withEnvelope = (body: string) => ({ ...genuine, rawBody: Buffer.from(body, 'utf8') });
    assert.equal(connector.read(withEnvelope(`<xml><Encrypt><![CDATA[${ciphertext}]]></Encrypt></xml>`)).kind, 'event');
    assert.equal(connector.read(withEnvelope(`<Encrypt>${ciphertext}</Encrypt>`)).kind, 'event');
    assert.match(refusal(connector.read(withEnvelope(`<xml><encrypt>${ciphertext}</encrypt></xml>`))), /no ciphertext/);
    assert.match(refusal(connector.read(withEnvelope(`<xml><Encrypt>${ciphertext}</xml>`))), /no ciphertext/);
  });

  it('a URL check built by the harness is answered with its echo', () => {
    const read = connector.read(wecomUrlCheck('echo-42', CRYPTO));
    assert.deepEqual(read.kind === 'challenge' && read.reply.body, 'echo-42');
  });
});

describe('the XML of WeCom callbacks', () => {
  it('reads the direct children of the root, CDATA unwrapped, entities decoded, nested elements as XML', () => {
    const read = xmlChildren(
      '<?xml version="1.0"?><xml><A><![CDATA[a<b]]></A><B>1 &amp; 2</B><C><D>d</D><E/></C><A>second</A></xml>',
    );
    assert.deepEqual(read && Object.fromEntries(read), { A: 'a<b', B: '1 & 2', C: '<D>d</D><E/>' });
    assert.deepEqual(Object.fromEntries(xmlChildrenOf('<D>d</D><E/>') ?? []), { D: 'd', E: '' });
  });

  it('is undefined for anything that is not one balanced element', () => {
    for (const text of [
      '',
      'hello',
      '<xml>',
      '<a></b>',
      '<a/><b/>',
      '<a>x</a>y',
      '<a><b>1</a></b>',
      '<a><</a>',
      '{"a":1}',
    ]) {
      assert.equal(xmlChildren(text), undefined, JSON.stringify(text));
    }
  });
});
