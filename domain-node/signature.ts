// One signature scheme for every signed hop, so any receiver can verify it the same way:
// `sha256=<hex>` where hex is HMAC-SHA256 with a shared secret over "<timestamp>.<raw body>".
// The OA webhook uses it inbound (X-OA-Timestamp / X-OA-Signature), the order event outbound
// (X-Event-Timestamp / X-Event-Signature). The timestamp bounds replays to a window.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function signBody(secret: string, timestamp: string, rawBody: Buffer | string): string {
  return 'sha256=' + createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

export type SignatureCheck = { ok: true } | { ok: false; reason: string };

export interface SignatureHeaders {
  timestamp: string;
  signature: string;
}

export const OA_HEADERS: SignatureHeaders = { timestamp: 'X-OA-Timestamp', signature: 'X-OA-Signature' };
export const EVENT_HEADERS: SignatureHeaders = { timestamp: 'X-Event-Timestamp', signature: 'X-Event-Signature' };

export function verifySignature(options: {
  secret: string;
  timestampHeader: string | undefined;
  signatureHeader: string | undefined;
  rawBody: Buffer;
  toleranceSeconds: number;
  nowSeconds?: number;
  headers?: SignatureHeaders;
}): SignatureCheck {
  const names = options.headers ?? OA_HEADERS;
  const { timestampHeader, signatureHeader } = options;
  if (!timestampHeader) return { ok: false, reason: `missing ${names.timestamp} header` };
  if (!signatureHeader) return { ok: false, reason: `missing ${names.signature} header` };
  if (!/^\d{1,12}$/.test(timestampHeader)) return { ok: false, reason: `${names.timestamp} must be unix seconds` };
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestampHeader)) > options.toleranceSeconds) {
    return { ok: false, reason: `${names.timestamp} is more than ${options.toleranceSeconds} seconds off` };
  }
  const expected = Buffer.from(signBody(options.secret, timestampHeader, options.rawBody));
  const given = Buffer.from(signatureHeader);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: `${names.signature} does not match the body` };
  }
  return { ok: true };
}
