// The WeCom (企业微信) connector: reads one callback of the app that receives approval events.
// WeCom signs and encrypts as DingTalk does (message-crypto.ts): the query carries `msg_signature`
// (SHA-1 over the sorted token, timestamp in seconds, nonce and ciphertext), the ciphertext is
// AES-256-CBC with the EncodingAESKey, and its plaintext ends with the corp id. The URL check is a
// GET whose `echostr` is such a ciphertext, answered with its plaintext; an event is a POST whose
// XML body carries the ciphertext in `Encrypt`, and the plaintext is XML too. The signature is
// checked before anything is decrypted or the decrypted text parsed, the timestamp bounds replays,
// and every refusal is the same to the caller (its reason is for the log). An event is answered
// with an empty 200: WeCom wants nothing back but the answer within its 5 s.
import { wecomStatus } from '../../domain/oa-status.js';
import type { Connector, ConnectorReply, InboundCallback, InboundRequest } from './connector.js';
import { type Clock, digestOf, refused, textOf } from './inbound.js';
import { assertAesKey, type MessageCrypto, openSealed } from './message-crypto.js';
import { xmlChildren, xmlChildrenOf } from './xml.js';

export interface WeComConnectorOptions {
  /** WECOM_CORP_ID: the plaintext's last part, whom WeCom encrypted it for. */
  corpId: string;
  /** WECOM_TOKEN: the console's Token, used in the signature. */
  token: string;
  /** WECOM_ENCODING_AES_KEY: 43 characters of base64 (the 32-byte key without its `=`). */
  encodingAesKey: string;
  /** WEBHOOK_TOLERANCE_SECONDS: how far the query's `timestamp` (seconds) may be from now. */
  toleranceSeconds: number;
  now?: Clock;
}

/** The approval app's event: an approval was submitted, decided, withdrawn or deleted. */
export const WECOM_APPROVAL_EVENT = 'sys_approval_change';

const TEXT = { 'content-type': 'text/plain; charset=utf-8' };
const ACK: ConnectorReply = { status: 200, headers: TEXT, body: '' };

export function createWeComConnector(options: WeComConnectorOptions): Connector {
  assertAesKey(options.encodingAesKey, 'the WeCom EncodingAESKey');
  const crypto: MessageCrypto = {
    token: options.token,
    aesKey: options.encodingAesKey,
    receiverId: options.corpId,
    toleranceSeconds: options.toleranceSeconds,
    timestampUnit: 'seconds',
    now: options.now ?? Date.now,
    names: { aesKey: 'EncodingAESKey', receiver: 'corp id' },
  };

  const read = (request: InboundRequest): InboundCallback => {
    const urlCheck = request.method === 'GET';
    // The outer body is read for its Encrypt alone; the signature covers that text.
    const ciphertext = urlCheck
      ? request.query.echostr
      : textOf(xmlChildren(request.rawBody.toString('utf8'))?.get('Encrypt'));
    const opened = openSealed(crypto, {
      signature: request.query.msg_signature,
      timestamp: request.query.timestamp,
      nonce: request.query.nonce,
      ciphertext,
    });
    if (!opened.ok) return refused(opened.reason);
    if (urlCheck) return { kind: 'challenge', reply: { status: 200, headers: TEXT, body: opened.message } };

    const message = xmlChildren(opened.message);
    if (!message) return refused('the decrypted body is not an XML message');
    const eventType = textOf(message.get('Event')) ?? textOf(message.get('MsgType')) ?? 'unknown';
    if (eventType !== WECOM_APPROVAL_EVENT) return { kind: 'other', eventType, ack: ACK };

    // Authentic from here on: a malformed event is acknowledged as unusable, never refused, or
    // WeCom would send it again for as long as it retries.
    const info = xmlChildrenOf(message.get('ApprovalInfo') ?? '');
    const instanceId = textOf(info?.get('SpNo')?.trim());
    if (!instanceId)
      return { kind: 'unusable', reason: `${WECOM_APPROVAL_EVENT} without an ApprovalInfo.SpNo`, ack: ACK };
    return {
      kind: 'event',
      event: {
        vendor: 'wecom',
        // WeCom names no delivery id: a resent callback carries the same message.
        eventId: digestOf(opened.message),
        eventType,
        instanceId,
        status: wecomStatus(info?.get('SpStatus')?.trim()),
        definitionCode: textOf(info?.get('TemplateId')?.trim()),
      },
      ack: ACK,
    };
  };

  return { vendor: 'wecom', vendorDeadlineMs: 5_000, read };
}
