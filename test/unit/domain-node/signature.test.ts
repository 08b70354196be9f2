import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { signBody, verifySignature } from '../../../domain-node/signature.js';

const secret = 'test-secret-0123456789';
const body = Buffer.from('{"approvalNo":"AP-1"}');
const now = 1_800_000_000;
const check = (overrides: Partial<Parameters<typeof verifySignature>[0]>) =>
  verifySignature({
    secret,
    timestampHeader: String(now),
    signatureHeader: signBody(secret, String(now), body),
    rawBody: body,
    toleranceSeconds: 300,
    nowSeconds: now,
    ...overrides,
  });

describe('webhook signature', () => {
  it('accepts the HMAC of "<timestamp>.<raw body>"', () => {
    assert.deepEqual(check({}), { ok: true });
  });

  it('refuses a body changed after signing', () => {
    assert.equal(check({ rawBody: Buffer.from('{"approvalNo":"AP-2"}') }).ok, false);
  });

  it('refuses a signature made with another secret', () => {
    assert.equal(check({ signatureHeader: signBody('another-secret-0123', String(now), body) }).ok, false);
  });

  it('refuses a timestamp more than five minutes off, in either direction', () => {
    for (const skew of [-301, 301]) {
      const timestamp = String(now + skew);
      const result = check({ timestampHeader: timestamp, signatureHeader: signBody(secret, timestamp, body) });
      assert.equal(result.ok, false);
    }
  });

  it('refuses missing headers with a reason naming the header', () => {
    const missingSignature = check({ signatureHeader: undefined });
    assert.equal(missingSignature.ok, false);
    assert.match(missingSignature.ok ? '' : missingSignature.reason, /X-OA-Signature/);
  });
});
