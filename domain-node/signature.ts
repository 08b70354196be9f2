// Signing and verifying every signed hop, in the two schemes a receiver may know:
//
// - `sha256=<hex>`: HMAC-SHA256 over "<timestamp>.<raw body>", keyed with the secret's UTF-8 bytes.
//   The OA webhook's own (X-OA-Timestamp / X-OA-Signature) and the order event's first headers
//   (X-Event-Timestamp / X-Event-Signature).
// - Standard Webhooks: `v1,<base64>` = HMAC-SHA256 over "<id>.<timestamp>.<raw body>"
//   (webhook-id / webhook-timestamp / webhook-signature), on the order event as HTTP headers and on
//   its broker message as AMQP headers. A secret written `whsec_<base64>` is the
//   base64-decoded rest, as that scheme's libraries read it; any other secret is its UTF-8 bytes.
//
// Either scheme's header may carry a list, one entry per secret, so that a secret can be rotated
// without a gap: the sender signs with both while the receivers move over, and a receiver accepts
// an entry made with any secret it holds. The timestamp bounds replays to a window, except on a
// broker message, which a durable queue may hold for hours. Why two schemes and two secrets:
// docs/architecture.md, decision 21; why no window on the broker: decision 24.
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
export const STANDARD_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

/** The secret in use and, during a rotation, the one it replaces. */
export interface SigningSecrets {
  secret: string;
  previousSecret?: string | undefined;
}

function secretsOf({ secret, previousSecret }: SigningSecrets): string[] {
  return previousSecret === undefined ? [secret] : [secret, previousSecret];
}

export const STANDARD_SECRET_PREFIX = 'whsec_';

/** Why a `whsec_` secret cannot be used, or undefined when it can (any other secret always can). */
export function standardSecretProblem(secret: string): string | undefined {
  if (!secret.startsWith(STANDARD_SECRET_PREFIX)) return undefined;
  const encoded = secret.slice(STANDARD_SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0) {
    return `a ${STANDARD_SECRET_PREFIX} secret must be base64 after the prefix`;
  }
  if (Buffer.from(encoded, 'base64').length < 16) {
    return `a ${STANDARD_SECRET_PREFIX} secret must decode to at least 16 bytes`;
  }
  return undefined;
}

/** The HMAC key of a Standard Webhooks signature (see the top of this file). */
export function standardSigningKey(secret: string): Buffer {
  const problem = standardSecretProblem(secret);
  if (problem) throw new Error(problem);
  return secret.startsWith(STANDARD_SECRET_PREFIX)
    ? Buffer.from(secret.slice(STANDARD_SECRET_PREFIX.length), 'base64')
    : Buffer.from(secret, 'utf8');
}

/** One Standard Webhooks signature: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>">`. */
export function signStandard(secret: string, id: string, timestamp: string, rawBody: Buffer | string): string {
  return (
    'v1,' +
    createHmac('sha256', standardSigningKey(secret)).update(`${id}.${timestamp}.`).update(rawBody).digest('base64')
  );
}

/**
 * The Standard Webhooks headers of an outbound event, signed with each secret, the one in use
 * first; the webhook-signature list is space-separated, as that scheme says. The HTTP event carries
 * them beside its own headers, a broker message carries them as its only signature.
 */
export function standardSignatureHeaders(
  secrets: SigningSecrets,
  eventId: string,
  timestamp: string,
  rawBody: Buffer | string,
): Record<(typeof STANDARD_HEADERS)[keyof typeof STANDARD_HEADERS], string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': timestamp,
    'webhook-signature': secretsOf(secrets)
      .map((secret) => signStandard(secret, eventId, timestamp, rawBody))
      .join(' '),
  };
}

/**
 * Every signature header of an outbound HTTP event, signed with each secret: the X-Event-Signature
 * list is comma-separated (an HTTP list, as a repeated header would be joined), and the Standard
 * Webhooks headers beside it. The secret in use comes first.
 */
export function eventSignatureHeaders(
  secrets: SigningSecrets,
  eventId: string,
  timestamp: string,
  rawBody: Buffer | string,
): Record<string, string> {
  return {
    'x-event-timestamp': timestamp,
    'x-event-signature': secretsOf(secrets)
      .map((secret) => signBody(secret, timestamp, rawBody))
      .join(', '),
    ...standardSignatureHeaders(secrets, eventId, timestamp, rawBody),
  };
}

interface CheckWindow {
  rawBody: Buffer;
  toleranceSeconds: number;
  nowSeconds?: number;
}

function unixSecondsProblem(name: string, value: string): string | undefined {
  return /^\d{1,12}$/.test(value) ? undefined : `${name} must be unix seconds`;
}

/**
 * Why a signed timestamp is outside the replay window, or undefined when it is inside: the one
 * window of every inbound door, the webhook's schemes and the OA connectors alike. `unit` is what
 * the sender writes (unix seconds; DingTalk milliseconds). Both directions count: a timestamp far
 * ahead is as suspect as one far behind (a clock that drifts, or a request made to be replayed).
 */
export function timestampOutsideWindow(
  name: string,
  value: string | undefined,
  unit: 'seconds' | 'milliseconds',
  toleranceSeconds: number,
  nowMs: number,
): string | undefined {
  const pattern = unit === 'seconds' ? /^\d{1,12}$/ : /^\d{1,15}$/;
  if (value === undefined || !pattern.test(value)) return `${name} must be unix ${unit}`;
  const sentMs = unit === 'seconds' ? Number(value) * 1000 : Number(value);
  if (Math.abs(nowMs - sentMs) > toleranceSeconds * 1000) {
    return `${name} is more than ${toleranceSeconds} seconds off`;
  }
  return undefined;
}

function timestampProblem(name: string, value: string, window: CheckWindow): string | undefined {
  const nowSeconds = window.nowSeconds ?? Math.floor(Date.now() / 1000);
  return timestampOutsideWindow(name, value, 'seconds', window.toleranceSeconds, nowSeconds * 1000);
}

/** Whether any given entry equals any expected one, compared in constant time. */
function anyMatches(given: readonly string[], expected: readonly string[]): boolean {
  const expectedBytes = expected.map((entry) => Buffer.from(entry));
  return given.some((entry) => {
    const bytes = Buffer.from(entry);
    return expectedBytes.some((wanted) => wanted.length === bytes.length && timingSafeEqual(wanted, bytes));
  });
}

/** The `sha256=` scheme; the signature header may list several entries, comma-separated. */
export function verifySignature(
  options: SigningSecrets &
    CheckWindow & {
      timestampHeader: string | undefined;
      signatureHeader: string | undefined;
      headers?: SignatureHeaders;
    },
): SignatureCheck {
  const names = options.headers ?? OA_HEADERS;
  const { timestampHeader, signatureHeader } = options;
  if (!timestampHeader) return { ok: false, reason: `missing ${names.timestamp} header` };
  if (!signatureHeader) return { ok: false, reason: `missing ${names.signature} header` };
  const stale = timestampProblem(names.timestamp, timestampHeader, options);
  if (stale) return { ok: false, reason: stale };
  const given = signatureHeader.split(',').map((entry) => entry.trim());
  const expected = secretsOf(options).map((secret) => signBody(secret, timestampHeader, options.rawBody));
  if (!anyMatches(given, expected)) return { ok: false, reason: `${names.signature} does not match the body` };
  return { ok: true };
}

interface StandardHeaderValues {
  idHeader: string | undefined;
  timestampHeader: string | undefined;
  signatureHeader: string | undefined;
}

/**
 * The Standard Webhooks scheme; the signature header may list several entries, space-separated,
 * and entries of other versions (`v1a,…`) are passed over. An id with a dot is refused: it would
 * make "<id>.<timestamp>" ambiguous.
 */
export function verifyStandardSignature(options: SigningSecrets & CheckWindow & StandardHeaderValues): SignatureCheck {
  return checkStandard(options, options);
}

/**
 * The Standard Webhooks scheme without the timestamp window, for a broker message: a durable queue
 * holds a genuine message for hours (the consumer down, a backlog), and the consumer's ledger makes
 * a replay of it harmless, so only the signature decides (docs/architecture.md, decision 24). The
 * timestamp must still be unix seconds, and is still signed.
 */
export function verifyStandardSignatureOfAnyAge(
  options: SigningSecrets & StandardHeaderValues & { rawBody: Buffer },
): SignatureCheck {
  return checkStandard(options, undefined);
}

function checkStandard(
  options: SigningSecrets & StandardHeaderValues & { rawBody: Buffer },
  window: CheckWindow | undefined,
): SignatureCheck {
  const { idHeader, timestampHeader, signatureHeader } = options;
  if (!idHeader) return { ok: false, reason: `missing ${STANDARD_HEADERS.id} header` };
  if (!timestampHeader) return { ok: false, reason: `missing ${STANDARD_HEADERS.timestamp} header` };
  if (!signatureHeader) return { ok: false, reason: `missing ${STANDARD_HEADERS.signature} header` };
  if (!/^[\x21-\x2d\x2f-\x7e]{1,256}$/.test(idHeader)) {
    return { ok: false, reason: `${STANDARD_HEADERS.id} must be 1–256 printable ASCII characters without a dot` };
  }
  const problem = window
    ? timestampProblem(STANDARD_HEADERS.timestamp, timestampHeader, window)
    : unixSecondsProblem(STANDARD_HEADERS.timestamp, timestampHeader);
  if (problem) return { ok: false, reason: problem };
  const given = signatureHeader.split(' ').filter((entry) => entry.startsWith('v1,'));
  if (given.length === 0) return { ok: false, reason: `${STANDARD_HEADERS.signature} holds no v1 signature` };
  const expected = secretsOf(options).map((secret) => signStandard(secret, idHeader, timestampHeader, options.rawBody));
  if (!anyMatches(given, expected)) {
    return { ok: false, reason: `no ${STANDARD_HEADERS.signature} entry matches the id, timestamp and body` };
  }
  return { ok: true };
}

export const WEBHOOK_SIGNATURE_SCHEMES = ['oa', 'standard'] as const;
export type WebhookSignatureScheme = (typeof WEBHOOK_SIGNATURE_SCHEMES)[number];

/**
 * The OA webhook's check in the configured scheme. A request that carries none of that scheme's
 * signature headers but the other scheme's is told which headers this endpoint expects.
 */
export function verifyWebhookSignature(
  options: SigningSecrets &
    CheckWindow & {
      scheme: WebhookSignatureScheme;
      /** A request header by name (case-insensitive), undefined when absent. */
      header: (name: string) => string | undefined;
    },
): SignatureCheck {
  const { header } = options;
  const carriesOa = [OA_HEADERS.timestamp, OA_HEADERS.signature].some((name) => header(name) !== undefined);
  const carriesStandard = Object.values(STANDARD_HEADERS).some((name) => header(name) !== undefined);
  if (options.scheme === 'standard') {
    if (carriesOa && !carriesStandard) {
      return {
        ok: false,
        reason:
          `this endpoint takes Standard Webhooks signatures (${Object.values(STANDARD_HEADERS).join(', ')}); ` +
          `the request is signed with ${OA_HEADERS.timestamp} / ${OA_HEADERS.signature} instead`,
      };
    }
    return verifyStandardSignature({
      ...options,
      idHeader: header(STANDARD_HEADERS.id),
      timestampHeader: header(STANDARD_HEADERS.timestamp),
      signatureHeader: header(STANDARD_HEADERS.signature),
    });
  }
  if (carriesStandard && !carriesOa) {
    return {
      ok: false,
      reason:
        `this endpoint takes ${OA_HEADERS.timestamp} and ${OA_HEADERS.signature}; ` +
        `the request is signed with Standard Webhooks headers (${Object.values(STANDARD_HEADERS).join(', ')}) instead`,
    };
  }
  return verifySignature({
    ...options,
    timestampHeader: header(OA_HEADERS.timestamp),
    signatureHeader: header(OA_HEADERS.signature),
  });
}
