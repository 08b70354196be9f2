import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { InboundCallback, InboundRequest } from '../../edges/connectors/connector.js';
import { createFeishuConnector } from '../../edges/connectors/feishu.js';
import { feishuApprovalPayload, feishuCallback } from '../../tools/harness/fake-feishu.js';

const ENCRYPT_KEY = 'test key';
const TOKEN = 'verification-token-1';
const connector = createFeishuConnector({ encryptKey: ENCRYPT_KEY, verificationToken: TOKEN });
const plainConnector = createFeishuConnector({ encryptKey: undefined, verificationToken: TOKEN });

const request = (body: string, headers: Record<string, string> = {}): InboundRequest => ({
  headers,
  query: {},
  rawBody: Buffer.from(body, 'utf8'),
});
const refusal = (result: InboundCallback) =>
  result.kind === 'refused' ? result : assert.fail(`not refused: ${result.kind}`);

describe('Feishu connector', () => {
  it("decrypts Feishu's documented vector (Encrypt Key 'test key' → 'hello world') and refuses it as no event", () => {
    // The documented ciphertext decrypts to the bare text "hello world": the connector gets that
    // far (it does not say "does not decrypt") and then refuses a body that is not a JSON event.
    const body = '{"encrypt":"P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}';
    assert.match(refusal(connector.read(request(body))).reason, /decrypted body is not a JSON object/);
    const otherKey = createFeishuConnector({ encryptKey: 'other key', verificationToken: TOKEN });
    assert.match(refusal(otherKey.read(request(body))).reason, /does not decrypt/);
  });

  it('checks X-Lark-Signature against a vector worked out by hand from the documented formula', () => {
    // sha256("1700000000" + "nonce-1" + "test key" + body), computed with sha256sum.
    const body = '{"encrypt":"P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk="}';
    const signature = '002a272a435d056759149cce18e88064ff320d38d91a09432445c344c4296949';
    const headers = { 'X-Lark-Request-Timestamp': '1700000000', 'X-Lark-Request-Nonce': 'nonce-1' };
    const good = refusal(connector.read(request(body, { ...headers, 'X-Lark-Signature': signature })));
    assert.equal(good.status, 400, 'the signature passed; only the decrypted text is refused');
    const bad = refusal(connector.read(request(body, { ...headers, 'X-Lark-Signature': signature.replace('0', '1') })));
    assert.equal(bad.status, 401);
    assert.match(bad.reason, /X-Lark-Signature does not match/);
  });

  it('answers the URL check with its challenge, encrypted or plain, and refuses a wrong token', () => {
    const payload = { type: 'url_verification', challenge: 'ajls384kdjx98XX' };
    for (const [reader, encryptKey] of [
      [connector, ENCRYPT_KEY],
      [plainConnector, undefined],
    ] as const) {
      const result = reader.read(feishuCallback(payload, { encryptKey, token: TOKEN }));
      assert.deepEqual(result, { kind: 'challenge', reply: { status: 200, body: { challenge: 'ajls384kdjx98XX' } } });
      const wrong = refusal(reader.read(feishuCallback(payload, { encryptKey, token: 'not-the-token' })));
      assert.equal(wrong.status, 401);
      assert.match(wrong.reason, /verification token/);
    }
  });

  it('refuses a plain body when an Encrypt Key is configured, and a ciphertext when none is', () => {
    const payload = feishuApprovalPayload({ instanceCode: 'I-1', status: 'APPROVED' });
    assert.equal(refusal(connector.read(feishuCallback(payload, { token: TOKEN }))).status, 401);
    assert.equal(
      refusal(plainConnector.read(feishuCallback(payload, { token: TOKEN, encryptKey: ENCRYPT_KEY }))).status,
      400,
    );
    assert.equal(refusal(connector.read(request('not json'))).status, 400);
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
    assert.equal(refusal(connector.read(feishuCallback(v2, { encryptKey: ENCRYPT_KEY, token: 'wrong' }))).status, 401);
  });

  it('refuses an approval event without its instance code or uuid', () => {
    const payload = feishuApprovalPayload({ instanceCode: 'I-3', status: 'APPROVED' });
    delete (payload.event as Record<string, unknown>).instance_code;
    assert.equal(
      refusal(connector.read(feishuCallback(payload, { encryptKey: ENCRYPT_KEY, token: TOKEN }))).status,
      400,
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
