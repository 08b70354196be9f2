// The DingTalk connector: reads one HTTP event-subscription callback. The query carries the
// signature (SHA-1 of token, timestamp, nonce and the ciphertext, sorted) and the timestamp in
// milliseconds, the body the ciphertext; the plaintext ends with the app key it was encrypted for
// (the scheme WeCom's connector shares: message-crypto.ts). The signature is checked before
// anything is decrypted, the timestamp bounds replays, and every refusal is the same to the caller
// (its reason is for the log). DingTalk expects every callback,
// the URL check included, to be answered with the word `success` encrypted the same way.
import { randomBytes } from 'node:crypto';
import { encrypt, getSignature } from '@wecom/crypto';
import type { Connector, ConnectorReply, InboundCallback, InboundRequest } from '../connector.js';
import { readDingTalkEvent } from './approval-event.js';
import { type Clock, digestOf, jsonObjectOf, refused, textOf } from '../inbound.js';
import { assertAesKey, type MessageCrypto, openSealed } from '../message-crypto.js';

export interface DingTalkConnectorOptions {
  /** The app's AppKey (the suite key or corp id for apps of those kinds): the plaintext's last part. */
  appKey: string;
  /** The console's aes_key: 43 characters of base64 (the 32-byte key without its `=`). */
  aesKey: string;
  /** The console's token, used in the signature. */
  token: string;
  /** WEBHOOK_TOLERANCE_SECONDS: how far the query's `timestamp` (milliseconds) may be from now. */
  toleranceSeconds: number;
  now?: Clock;
}

/** The reply DingTalk accepts: `success`, encrypted for the app key and signed. */
export interface DingTalkSuccess {
  msg_signature: string;
  timeStamp: string;
  nonce: string;
  encrypt: string;
}

const NONCE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** DingTalk's deadline for a callback's reply: later, it counts the delivery as failed and sends it again. */
export const DINGTALK_REPLY_DEADLINE_MS = 1_500;

export function createDingTalkConnector(options: DingTalkConnectorOptions): Connector {
  assertAesKey(options.aesKey, 'the DingTalk aes_key');
  const { toleranceSeconds } = options;
  const now = options.now ?? Date.now;

  const success = (): ConnectorReply => {
    const timeStamp = String(now());
    const nonce = [...randomBytes(16)].map((byte) => NONCE_ALPHABET[byte % NONCE_ALPHABET.length]).join('');
    const ciphertext = encrypt(options.aesKey, 'success', options.appKey);
    const body: DingTalkSuccess = {
      msg_signature: getSignature(options.token, timeStamp, nonce, ciphertext),
      timeStamp,
      nonce,
      encrypt: ciphertext,
    };
    return { status: 200, body };
  };

  const crypto: MessageCrypto = {
    token: options.token,
    aesKey: options.aesKey,
    receiverId: options.appKey,
    toleranceSeconds,
    timestampUnit: 'milliseconds',
    now,
    names: { aesKey: 'aes_key', receiver: 'app key' },
  };

  const read = (request: InboundRequest): InboundCallback => {
    const opened = openSealed(crypto, {
      signature: request.query.msg_signature ?? request.query.signature,
      timestamp: request.query.timestamp ?? request.query.timeStamp,
      nonce: request.query.nonce,
      ciphertext: textOf(jsonObjectOf(request.rawBody.toString('utf8'))?.encrypt),
    });
    if (!opened.ok) return refused(opened.reason);
    const { message } = opened;

    const payload = jsonObjectOf(message);
    if (!payload) return refused('the decrypted body is not a JSON object');
    const eventType = textOf(payload.EventType) ?? 'unknown';

    if (eventType === 'check_url') return { kind: 'challenge', reply: success() };
    // DingTalk's HTTP push names no delivery id in the payload; when it does (EventId), it wins.
    const eventId = textOf(payload.EventId) ?? textOf(payload.eventId) ?? digestOf(message);
    // Authentic from here on: what the event says is read as the Stream door reads it.
    return { ...readDingTalkEvent(eventType, payload, eventId), ack: success() };
  };

  return { vendor: 'dingtalk', vendorDeadlineMs: DINGTALK_REPLY_DEADLINE_MS, read };
}
