import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { InboundCallback, InboundRequest } from '../../../../vendors/connector.js';
import { createFeishuConnector } from '../../../../vendors/feishu/connector.js';
import {
  feishuApprovalPayload,
  feishuApprovalPayloadV2,
  feishuCallback,
  feishuSignatureHeaders,
} from '../../../../tools/harness/fake-feishu.js';

const ENCRYPT_KEY = 'test key';
const TOKEN = 'verification-token-1';
const TOLERANCE_SECONDS = 300;
const connector = createFeishuConnector({
  encryptKey: ENCRYPT_KEY,
  verificationToken: TOKEN,
  toleranceSeconds: TOLERANCE_SECONDS,
});
/** A connector whose clock reads `seconds` (unix): for vectors signed at a fixed time. */
const connectorAt = (seconds: number, encryptKey = ENCRYPT_KEY) =>
  createFeishuConnector({
    encryptKey,
    verificationToken: TOKEN,
    toleranceSeconds: TOLERANCE_SECONDS,
    now: () => seconds * 1000,
  });

const request = (body: string, headers: Record<string, string> = {}): InboundRequest => ({
  headers,
  query: {},
  rawBody: Buffer.from(body, 'utf8'),
});
/** The refusal's reason: what the route logs (it answers every refusal alike). */
const refusal = (result: InboundCallback) =>
  result.kind === 'refused' ? result.reason : assert.fail(`not refused: ${result.kind}`);

// Feishu's documented vector: Encrypt Key 'test key', ciphertext of the bare text "hello world".
const VECTOR_BODY = '{"encrypt":"P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}';
// sha256("1700000000" + "nonce-1" + "test key" + body), computed with sha256sum.
const VECTOR_SIGNATURE = '002a272a435d056759149cce18e88064ff320d38d91a09432445c344c4296949';
const VECTOR_HEADERS = { 'X-Lark-Request-Timestamp': '1700000000', 'X-Lark-Request-Nonce': 'nonce-1' };

describe('Feishu connector', () => {
  it("decrypts Feishu's documented vector ('test key' → 'hello world') once signed, and refuses it as no event", () => {
    const signed = request(VECTOR_BODY, { ...VECTOR_HEADERS, 'X-Lark-Signature': VECTOR_SIGNATURE });
    // The signature holds and the text decrypts: the refusal is for what it decrypts to.
    assert.match(refusal(connectorAt(1_700_000_000).read(signed)), /decrypted body is not a JSON object/);
    // With another key the signature itself fails, before anything is decrypted.
    assert.match(refusal(connectorAt(1_700_000_000, 'other key').read(signed)), /X-Lark-Signature does not match/);
  });

  it('checks X-Lark-Signature against a vector worked out by hand from the documented formula', () => {
    const at = connectorAt(1_700_000_000);
    const good = refusal(at.read(request(VECTOR_BODY, { ...VECTOR_HEADERS, 'X-Lark-Signature': VECTOR_SIGNATURE })));
    assert.doesNotMatch(good, /Signature/, 'the signature passed; only the decrypted text is refused');
    const forged = VECTOR_SIGNATURE.replace('0', '1');
    const bad = refusal(at.read(request(VECTOR_BODY, { ...VECTOR_HEADERS, 'X-Lark-Signature': forged })));
    assert.match(bad, /X-Lark-Signature does not match/);
  });

  it('refuses a genuine signature outside WEBHOOK_TOLERANCE_SECONDS, behind or ahead, and takes it inside', () => {
    const headers = { ...VECTOR_HEADERS, 'X-Lark-Signature': VECTOR_SIGNATURE };
    for (const offset of [-TOLERANCE_SECONDS - 1, TOLERANCE_SECONDS + 1, 86_400, -86_400]) {
      const reason = refusal(connectorAt(1_700_000_000 + offset).read(request(VECTOR_BODY, headers)));
      assert.match(reason, /X-Lark-Request-Timestamp is more than 300 seconds off/, `clock off by ${offset} s`);
    }
    for (const offset of [-TOLERANCE_SECONDS, 0, TOLERANCE_SECONDS]) {
      const reason = refusal(connectorAt(1_700_000_000 + offset).read(request(VECTOR_BODY, headers)));
      assert.match(reason, /decrypted body is not a JSON object/, `clock off by ${offset} s: inside the window`);
    }
  });

  it('answers the unsigned URL check with its challenge, and refuses it with a wrong token', () => {
    const payload = { type: 'url_verification', challenge: 'ajls384kdjx98XX' };
    const check = feishuCallback(payload, { encryptKey: ENCRYPT_KEY, token: TOKEN });
    assert.equal(check.headers['x-lark-signature'], undefined, 'Feishu signs no URL check');
    assert.deepEqual(connector.read(check), {
      kind: 'challenge',
      reply: { status: 200, body: { challenge: 'ajls384kdjx98XX' } },
    });
    const wrong = feishuCallback(payload, { encryptKey: ENCRYPT_KEY, token: 'not-the-token' });
    assert.match(refusal(connector.read(wrong)), /verification token/);
  });

  it('refuses every unsigned callback that is not the URL check, however genuine its token and encryption', () => {
    const payload = feishuApprovalPayload({ instanceCode: 'I-1', status: 'APPROVED' });
    const unsigned = feishuCallback(payload, { encryptKey: ENCRYPT_KEY, token: TOKEN, sign: false });
    assert.match(refusal(connector.read(unsigned)), /X-Lark-Signature is missing/);
  });

  it('refuses a plain body and a body that is not JSON, signed or not', () => {
    const payload = feishuApprovalPayload({ instanceCode: 'I-1', status: 'APPROVED' });
    assert.match(refusal(connector.read(feishuCallback(payload, { token: TOKEN }))), /X-Lark-Signature does not match/);
    const plainSigned = feishuCallback(payload, { token: TOKEN, sign: false });
    plainSigned.headers = { ...plainSigned.headers, ...feishuSignatureHeaders(plainSigned.rawBody, ENCRYPT_KEY) };
    assert.match(refusal(connector.read(plainSigned)), /a plain body arrived/);
    assert.match(refusal(connector.read(request('not json'))), /not a JSON object/);
  });

  it('cannot be created without an Encrypt Key: without one Feishu signs nothing', () => {
    assert.throws(
      () => createFeishuConnector({ encryptKey: '', verificationToken: TOKEN, toleranceSeconds: 300 }),
      /Encrypt Key/,
    );
  });

  it('maps each approval status Feishu sends', () => {
    const expected = {
      PENDING: 'PENDING',
      APPROVED: 'APPROVED',
      REJECTED: 'REJECTED',
      CANCELED: 'CANCELED',
      DELETED: 'DELETED',
      REVERTED: 'REVOKED',
      OVERTIME_RECOVER: 'PENDING',
      OVERTIME_CLOSE: 'OTHER',
      SOMETHING_NEW: 'OTHER',
    } as const;
    for (const [status, common] of Object.entries(expected)) {
      const payload = feishuApprovalPayload({ uuid: `u-${status}`, instanceCode: 'I-7', status, approvalCode: 'PO' });
      const result = connector.read(feishuCallback(payload, { encryptKey: ENCRYPT_KEY, token: TOKEN, sign: true }));
      assert.deepEqual(result, {
        kind: 'event',
        event: {
          vendor: 'feishu',
          eventId: `u-${status}`,
          eventType: 'approval_instance',
          instanceId: 'I-7',
          status: common,
          definitionCode: 'PO',
        },
        ack: { status: 200, body: {} },
      });
    }
  });

  it('acknowledges other events (schema 1.0 and 2.0) without reading them as approvals, checking the token of each', () => {
    const task = { ...feishuApprovalPayload({ instanceCode: 'I-2', status: 'PENDING' }) };
    (task.event as Record<string, unknown>).type = 'approval_task';
    assert.deepEqual(connector.read(feishuCallback(task, { encryptKey: ENCRYPT_KEY, token: TOKEN })), {
      kind: 'other',
      eventType: 'approval_task',
      ack: { status: 200, body: {} },
    });
    const v2 = {
      schema: '2.0',
      header: { event_id: 'e-1', event_type: 'im.message.receive_v1', create_time: '1700000000000' },
      event: {},
    };
    assert.equal(connector.read(feishuCallback(v2, { encryptKey: ENCRYPT_KEY, token: TOKEN })).kind, 'other');
    assert.match(
      refusal(connector.read(feishuCallback(v2, { encryptKey: ENCRYPT_KEY, token: 'wrong' }))),
      /verification token/,
    );
  });

  it('reads the schema 2.0 approval event (approval.instance.status_changed_v4) too, its token in the header', () => {
    const v2 = feishuApprovalPayloadV2({
      eventId: 'e-2',
      instanceCode: 'I-20',
      status: 'APPROVED',
      approvalCode: 'PO',
    });
    assert.deepEqual(connector.read(feishuCallback(v2, { encryptKey: ENCRYPT_KEY, token: TOKEN })), {
      kind: 'event',
      event: {
        vendor: 'feishu',
        eventId: 'e-2',
        eventType: 'approval.instance.status_changed_v4',
        instanceId: 'I-20',
        status: 'APPROVED',
        definitionCode: 'PO',
      },
      ack: { status: 200, body: {} },
    });
    assert.match(
      refusal(connector.read(feishuCallback(v2, { encryptKey: ENCRYPT_KEY, token: 'wrong' }))),
      /verification token/,
    );
  });

  it('acknowledges an authentic approval event without its instance code or uuid as unusable, with the reason', () => {
    const noInstance = feishuApprovalPayload({ instanceCode: 'I-3', status: 'APPROVED' });
    delete (noInstance.event as Record<string, unknown>).instance_code;
    assert.deepEqual(connector.read(feishuCallback(noInstance, { encryptKey: ENCRYPT_KEY, token: TOKEN })), {
      kind: 'unusable',
      reason: 'approval_instance event without an instance_code',
      ack: { status: 200, body: {} },
    });
    const noUuid = feishuApprovalPayload({ instanceCode: 'I-3', status: 'APPROVED' });
    delete noUuid.uuid;
    const read = connector.read(feishuCallback(noUuid, { encryptKey: ENCRYPT_KEY, token: TOKEN }));
    assert.deepEqual(
      [read.kind, read.kind === 'unusable' && read.reason],
      ['unusable', 'approval_instance event without a uuid'],
    );
  });

  const statuses = fc.constantFrom('PENDING', 'APPROVED', 'REJECTED', 'CANCELED', 'DELETED');

  it('reads back any approval event the builder makes as the same event', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), statuses, (uuid, instanceCode, status) => {
        const payload = feishuApprovalPayload({ uuid, instanceCode, status, approvalCode: 'PO-APPROVAL' });
        const result = connector.read(feishuCallback(payload, { encryptKey: ENCRYPT_KEY, token: TOKEN, sign: true }));
        assert.equal(result.kind, 'event');
        if (result.kind !== 'event') return;
        assert.deepEqual(result.event, {
          vendor: 'feishu',
          eventId: uuid,
          eventType: 'approval_instance',
          instanceId: instanceCode,
          status,
          definitionCode: 'PO-APPROVAL',
        });
      }),
      { numRuns: 200 },
    );
  });

  it('refuses any single-byte change of a signed body or of its signature', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        statuses,
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        fc.boolean(),
        (instanceCode, status, at, flip, inSignature) => {
          const built = feishuCallback(feishuApprovalPayload({ instanceCode, status }), {
            encryptKey: ENCRYPT_KEY,
            token: TOKEN,
            sign: true,
          });
          if (inSignature) {
            const signature = built.headers['x-lark-signature'] ?? '';
            const i = at % signature.length;
            const other = '0123456789abcdef'.replace(signature[i] ?? '', '')[flip % 15] ?? 'x';
            built.headers['x-lark-signature'] = signature.slice(0, i) + other + signature.slice(i + 1);
          } else {
            const body = Buffer.from(built.rawBody);
            const i = at % body.length;
            body[i] = (body[i] ?? 0) ^ flip;
            built.rawBody = body;
          }
          const result = connector.read(built);
          assert.equal(result.kind, 'refused');
        },
      ),
      { numRuns: 300 },
    );
  });
});
