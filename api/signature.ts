// The OA webhook signature: `X-OA-Signature: sha256=<hex>` where hex is HMAC-SHA256 with
// WEBHOOK_SECRET over "<X-OA-Timestamp>.<raw body>". The timestamp bounds replays to a window.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function signBody(secret: string, timestamp: string, rawBody: Buffer | string): string {
  return 'sha256=' + createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

export function verifySignature(options: {
  secret: string;
  timestampHeader: string | undefined;
  signatureHeader: string | undefined;
  rawBody: Buffer;
  toleranceSeconds: number;
  nowSeconds?: number;
}): SignatureCheck {
  const { timestampHeader, signatureHeader } = options;
  if (!timestampHeader) return { ok: false, reason: 'missing X-OA-Timestamp header' };
  if (!signatureHeader) return { ok: false, reason: 'missing X-OA-Signature header' };
  if (!/^\d{1,12}$/.test(timestampHeader)) return { ok: false, reason: 'X-OA-Timestamp must be unix seconds' };
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestampHeader)) > options.toleranceSeconds) {
    return { ok: false, reason: `X-OA-Timestamp is more than ${options.toleranceSeconds} seconds off` };
  }
  const expected = Buffer.from(signBody(options.secret, timestampHeader, options.rawBody));
  const given = Buffer.from(signatureHeader);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: 'X-OA-Signature does not match the body' };
  }
  return { ok: true };
}
