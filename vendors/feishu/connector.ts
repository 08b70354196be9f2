// The Feishu (Lark) connector: reads one event-subscription callback. Feishu signs every event
// callback with the Encrypt Key (X-Lark-Signature over timestamp, nonce, key and the raw body),
// and that signature is checked before the body is even parsed: nothing an unauthenticated caller
// sends reaches the decryption, except the one callback Feishu does not sign, the URL check
// (docs/architecture.md, decision 26). Every refusal is the same to the caller; its reason is for
// the log. After the signature and the verification token, the connector answers the URL check;
// what the event body says is read by feishu-event.ts, which the long connection shares.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as FeishuSdk from '@larksuiteoapi/node-sdk';
import { timestampOutsideWindow } from '../../domain-node/signature.js';
import type { Connector, ConnectorReply, InboundCallback, InboundRequest } from '../connector.js';
import { feishuClickReply } from './decision-cards.js';
import { feishuSchema2Header, readFeishuEvent } from './event.js';
import { type Clock, headerOf, jsonObjectOf, refused, sameSecret, textOf } from '../inbound.js';

export interface FeishuConnectorOptions {
  /** The console's Encrypt Key: Feishu encrypts and signs with it (without one it signs nothing). */
  encryptKey: string;
  /** The console's Verification Token: every callback carries it. */
  verificationToken: string;
  /** WEBHOOK_TOLERANCE_SECONDS: how far X-Lark-Request-Timestamp may be from now. */
  toleranceSeconds: number;
  now?: Clock;
  /** FEISHU_OPERATOR_OPEN_IDS: the open ids a card click decides for; undefined: no cards. */
  decisionOperators?: readonly string[] | undefined;
}

export const FEISHU_SIGNATURE_HEADERS = {
  timestamp: 'X-Lark-Request-Timestamp',
  nonce: 'X-Lark-Request-Nonce',
  signature: 'X-Lark-Signature',
} as const;

/** Feishu's deadline for a callback's reply: later, it counts the delivery as failed and sends it again. */
export const FEISHU_REPLY_DEADLINE_MS = 3_000;

/** Feishu's request signature: hex SHA-256 over timestamp, nonce, Encrypt Key and the raw body. */
export function feishuSignature(timestamp: string, nonce: string, encryptKey: string, rawBody: Buffer): string {
  return createHash('sha256')
    .update(timestamp + nonce + encryptKey)
    .update(rawBody)
    .digest('hex');
}

const ACK: ConnectorReply = { status: 200, body: {} };

const requireHere = createRequire(import.meta.url);
/** The official SDK, large and slow to load: loaded by the first Feishu connector, so a process without one never loads it. */
const feishuSdk = () => requireHere('@larksuiteoapi/node-sdk') as typeof FeishuSdk;

/** Whether the request carries a signature, and if so, why it does not hold (undefined: it holds). */
type SignatureCheck = { signed: false } | { signed: true; problem: string | undefined };

export function createFeishuConnector(options: FeishuConnectorOptions): Connector {
  if (!options.encryptKey) throw new Error('the Feishu connector needs the Encrypt Key: without one nothing is signed');
  const { encryptKey, toleranceSeconds } = options;
  const now = options.now ?? Date.now;
  const cipher = new (feishuSdk().AESCipher)(encryptKey);

  const checkSignature = (request: InboundRequest): SignatureCheck => {
    const signature = headerOf(request, FEISHU_SIGNATURE_HEADERS.signature);
    if (signature === undefined) return { signed: false };
    const timestamp = headerOf(request, FEISHU_SIGNATURE_HEADERS.timestamp) ?? '';
    const nonce = headerOf(request, FEISHU_SIGNATURE_HEADERS.nonce) ?? '';
    if (!sameSecret(signature, feishuSignature(timestamp, nonce, encryptKey, request.rawBody))) {
      return { signed: true, problem: `${FEISHU_SIGNATURE_HEADERS.signature} does not match the body` };
    }
    // The timestamp is signed, so it is judged once the signature holds: a replay of a genuine
    // callback outside the window is refused however genuine it is.
    return {
      signed: true,
      problem: timestampOutsideWindow(
        FEISHU_SIGNATURE_HEADERS.timestamp,
        timestamp,
        'seconds',
        toleranceSeconds,
        now(),
      ),
    };
  };

  /** The decrypted payload, or why there is none. */
  const decrypted = (rawBody: Buffer): Record<string, unknown> | string => {
    const outer = jsonObjectOf(rawBody.toString('utf8'));
    if (!outer) return 'the body is not a JSON object';
    if (typeof outer.encrypt !== 'string')
      return 'a plain body arrived: with an Encrypt Key Feishu encrypts every callback';
    let plain: string;
    try {
      plain = cipher.decrypt(outer.encrypt);
    } catch {
      return 'the body does not decrypt with the configured Encrypt Key';
    }
    return jsonObjectOf(plain) ?? 'the decrypted body is not a JSON object';
  };

  const read = (request: InboundRequest): InboundCallback => {
    const signature = checkSignature(request);
    if (signature.signed && signature.problem) return refused(signature.problem);

    const payload = decrypted(request.rawBody);
    if (typeof payload === 'string') return refused(payload);

    const header = feishuSchema2Header(payload);
    const token = header ? header.token : payload.token;
    if (!sameSecret(typeof token === 'string' ? token : undefined, options.verificationToken)) {
      return refused('the verification token does not match');
    }

    if (payload.type === 'url_verification') {
      const challenge = textOf(payload.challenge);
      if (!challenge) return refused('url_verification without a challenge');
      return { kind: 'challenge', reply: { status: 200, body: { challenge } } };
    }
    // Feishu signs every callback but the URL check: an unsigned body that is anything else did
    // not come from Feishu, whatever its token says (a token travels inside every event).
    if (!signature.signed) return refused(`${FEISHU_SIGNATURE_HEADERS.signature} is missing`);
    const read = readFeishuEvent(payload);
    if (read.kind === 'card-click') {
      const key = read.click.idempotencyKey;
      return { kind: 'card-click', click: read.click, reply: (answer) => feishuClickReply(key, answer) };
    }
    return { ...read, ack: ACK };
  };

  return {
    vendor: 'feishu',
    vendorDeadlineMs: FEISHU_REPLY_DEADLINE_MS,
    read,
    ...(options.decisionOperators ? { decisionOperators: new Set(options.decisionOperators) } : {}),
  };
}
