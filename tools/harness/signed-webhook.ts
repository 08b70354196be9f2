// The OA webhook's headers for a body, signed as the OA signs it (domain-node/signature.ts): the
// service's own HMAC scheme or Standard Webhooks, with the secret the test services hold by default.
import { randomBytes } from 'node:crypto';
import { signBody, signStandard } from '../../domain-node/signature.js';

export const TEST_WEBHOOK_SECRET = 'test-webhook-secret-0123456789';

/** The webhook's headers for `body`, signed at `timestamp` (now unless given): a resend is signed again. */
export function signedHeaders(body: string, secret = TEST_WEBHOOK_SECRET, timestamp = Math.floor(Date.now() / 1000)) {
  const ts = String(timestamp);
  return { 'content-type': 'application/json', 'x-oa-timestamp': ts, 'x-oa-signature': signBody(secret, ts, body) };
}

/** The same, signed the Standard Webhooks way (WEBHOOK_SIGNATURE_SCHEME=standard). */
export function standardSignedHeaders(
  body: string,
  secret = TEST_WEBHOOK_SECRET,
  id = `msg_${randomBytes(8).toString('hex')}`,
  timestamp = Math.floor(Date.now() / 1000),
) {
  const ts = String(timestamp);
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': ts,
    'webhook-signature': signStandard(secret, id, ts, body),
  };
}
