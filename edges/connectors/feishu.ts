// The Feishu (Lark) connector: reads one event-subscription callback. It decrypts the body when
// an Encrypt Key is configured, checks the signature headers when Feishu sends them and the
// verification token always, answers the URL check, and tells the approval-instance event
// (`approval_instance`, schema 1.0) from every other event.
import { createHash } from 'node:crypto';
import { AESCipher } from '@larksuiteoapi/node-sdk';
import { feishuStatus } from '../../domain/oa-status.js';
import type { Connector, ConnectorReply, InboundCallback, InboundRequest } from './connector.js';
import { headerOf, jsonObjectOf, objectOf, refused, sameSecret, textOf } from './inbound.js';

export interface FeishuConnectorOptions {
  /** The console's Encrypt Key; undefined when none is set (Feishu then sends plain bodies). */
  encryptKey: string | undefined;
  /** The console's Verification Token: every callback carries it. */
  verificationToken: string;
}

export const FEISHU_SIGNATURE_HEADERS = {
  timestamp: 'X-Lark-Request-Timestamp',
  nonce: 'X-Lark-Request-Nonce',
  signature: 'X-Lark-Signature',
} as const;

/** Feishu's request signature: hex SHA-256 over timestamp, nonce, Encrypt Key and the raw body. */
export function feishuSignature(timestamp: string, nonce: string, encryptKey: string, rawBody: Buffer): string {
  return createHash('sha256')
    .update(timestamp + nonce + encryptKey)
    .update(rawBody)
    .digest('hex');
}

const ACK: ConnectorReply = { status: 200, body: {} };

export function createFeishuConnector(options: FeishuConnectorOptions): Connector {
  const encryptKey = options.encryptKey || undefined;
  const cipher = encryptKey ? new AESCipher(encryptKey) : undefined;

  const read = (request: InboundRequest): InboundCallback => {
    const outer = jsonObjectOf(request.rawBody.toString('utf8'));
    if (!outer) return refused(400, 'the body is not a JSON object');

    const signature = headerOf(request, FEISHU_SIGNATURE_HEADERS.signature);
    if (signature !== undefined && encryptKey) {
      const timestamp = headerOf(request, FEISHU_SIGNATURE_HEADERS.timestamp) ?? '';
      const nonce = headerOf(request, FEISHU_SIGNATURE_HEADERS.nonce) ?? '';
      if (!sameSecret(signature, feishuSignature(timestamp, nonce, encryptKey, request.rawBody))) {
        return refused(401, `${FEISHU_SIGNATURE_HEADERS.signature} does not match the body`);
      }
    }

    let payload: Record<string, unknown> | undefined = outer;
    if (typeof outer.encrypt === 'string') {
      if (!cipher) return refused(400, 'the body is encrypted but no Encrypt Key is configured');
      let plain: string;
      try {
        plain = cipher.decrypt(outer.encrypt);
      } catch {
        return refused(400, 'the body does not decrypt with the configured Encrypt Key');
      }
      payload = jsonObjectOf(plain);
      if (!payload) return refused(400, 'the decrypted body is not a JSON object');
    } else if (cipher) {
      return refused(401, 'a plain body arrived but an Encrypt Key is configured: Feishu encrypts every callback');
    }

    const header = objectOf(payload.header);
    const isSchema2 = payload.schema === '2.0' && header !== undefined;
    const token = isSchema2 ? header.token : payload.token;
    if (!sameSecret(typeof token === 'string' ? token : undefined, options.verificationToken)) {
      return refused(401, 'the verification token does not match');
    }

    if (payload.type === 'url_verification') {
      const challenge = textOf(payload.challenge);
      if (!challenge) return refused(400, 'url_verification without a challenge');
      return { kind: 'challenge', reply: { status: 200, body: { challenge } } };
    }

    if (isSchema2) {
      // Feishu documents the approval-instance event in schema 1.0 only; a 2.0 event is another event.
      return { kind: 'other', eventType: textOf(header.event_type) ?? 'unknown', ack: ACK };
    }

    const event = objectOf(payload.event);
    const eventType = textOf(event?.type) ?? textOf(payload.type) ?? 'unknown';
    if (eventType !== 'approval_instance') return { kind: 'other', eventType, ack: ACK };

    const eventId = textOf(payload.uuid);
    const instanceId = textOf(event?.instance_code);
    if (!eventId) return refused(400, 'approval_instance event without a uuid');
    if (!instanceId) return refused(400, 'approval_instance event without an instance_code');
    return {
      kind: 'event',
      event: {
        vendor: 'feishu',
        eventId,
        eventType,
        instanceId,
        status: feishuStatus(event?.status),
        definitionCode: textOf(event?.approval_code),
      },
      ack: ACK,
    };
  };

  return { vendor: 'feishu', vendorDeadlineMs: 3_000, read };
}
