// The WeCom (企业微信) connector: reads one callback of the app that receives approval events.
// WeCom signs and encrypts as DingTalk does (message-crypto.ts): the query carries `msg_signature`
// (SHA-1 over the sorted token, timestamp in seconds, nonce and ciphertext), the ciphertext is
// AES-256-CBC with the EncodingAESKey, and its plaintext ends with the corp id. The URL check is a
// GET whose `echostr` is such a ciphertext, answered with its plaintext; an event is a POST whose
// XML body carries the ciphertext in `Encrypt`, and the plaintext is XML too. The signature is
// checked before anything is decrypted or parsed (the body is only searched for its `Encrypt`),
// the timestamp bounds replays, and every refusal is the same to the caller (its reason is for the
// log). The URL check opens nothing but an echo: a short ciphertext whose plaintext is a short
// token, so a captured event replayed as a GET is refused instead of answered with its plaintext
// (docs/architecture.md, decision 37). An event is answered with an empty 200: WeCom wants nothing
// back but the answer within its 5 s. A click on a decision card (`template_card_event`) is answered
// with an encrypted reply that replaces the clicker's buttons (vendors/wecom/decision-cards.ts).
import { wecomStatus } from './status.js';
import type { Connector, ConnectorReply, InboundCallback, InboundRequest } from '../connector.js';
import { type Clock, digestOf, refused, textOf } from '../inbound.js';
import { assertAesKey, type MessageCrypto, openSealed } from '../message-crypto.js';
import { wecomCardClickOf, wecomClickReply } from './decision-cards.js';
import { firstElementText, xmlChildren, xmlChildrenOf } from './xml.js';

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
  /** WECOM_OPERATOR_USER_IDS: the user ids a card click decides for; undefined: no cards. */
  decisionOperators?: readonly string[] | undefined;
}

/** The approval app's event: an approval was submitted, decided, withdrawn or deleted. */
export const WECOM_APPROVAL_EVENT = 'sys_approval_change';
/** A click on a template card's button (vendors/wecom/decision-cards.ts). */
export const WECOM_CARD_CLICK_EVENT = 'template_card_event';

/**
 * The longest plaintext a URL check may echo. WeCom's echo is a random number of about twenty
 * digits; an approval event's XML is many times this, so a captured one never fits.
 */
export const WECOM_ECHO_MAX_CHARS = 128;

/**
 * The longest `echostr` that can hold such an echo for `corpId`: base64 of 16 random bytes, the
 * 4-byte length, the echo, the corp id and at most 32 bytes of padding. A longer one is refused
 * before it is decrypted.
 */
export function wecomEchostrMaxChars(corpId: string): number {
  const sealedBytes = 16 + 4 + WECOM_ECHO_MAX_CHARS + Buffer.byteLength(corpId) + 32;
  return 4 * Math.ceil(sealedBytes / 3);
}

/** Why a URL check's plaintext is no echo, or undefined when it is one. */
function notAnEcho(plaintext: string): string | undefined {
  if (plaintext.length === 0 || plaintext.length > WECOM_ECHO_MAX_CHARS) {
    return `the URL check's plaintext is ${plaintext.length} characters, not an echo of 1 to ${WECOM_ECHO_MAX_CHARS}`;
  }
  for (let at = 0; at < plaintext.length; at += 1) {
    const code = plaintext.charCodeAt(at);
    if (code < 0x21 || code > 0x7e || code === 0x3c)
      return "the URL check's plaintext is not an echo: it holds markup or non-printable characters";
  }
  return undefined;
}

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

  const echostrMaxChars = wecomEchostrMaxChars(options.corpId);

  const read = (request: InboundRequest): InboundCallback => {
    const urlCheck = request.method === 'GET';
    // The signature covers the Encrypt text alone, so the body is searched for that element and
    // nothing of it is parsed until the signature holds.
    const ciphertext = urlCheck
      ? request.query.echostr
      : textOf(firstElementText(request.rawBody.toString('utf8'), 'Encrypt'));
    if (urlCheck && ciphertext !== undefined && ciphertext.length > echostrMaxChars) {
      return refused(`the URL check's echostr is ${ciphertext.length} characters, longer than any echo's`);
    }
    const opened = openSealed(crypto, {
      signature: request.query.msg_signature,
      timestamp: request.query.timestamp,
      nonce: request.query.nonce,
      ciphertext,
    });
    if (!opened.ok) return refused(opened.reason);
    if (urlCheck) {
      const notEcho = notAnEcho(opened.message);
      if (notEcho) return refused(notEcho);
      return { kind: 'challenge', reply: { status: 200, headers: TEXT, body: opened.message } };
    }

    const message = xmlChildren(opened.message);
    if (!message) return refused('the decrypted body is not an XML message');
    const eventType = textOf(message.get('Event')) ?? textOf(message.get('MsgType')) ?? 'unknown';
    if (eventType === WECOM_CARD_CLICK_EVENT) {
      // WeCom names no delivery id: a resent callback carries the same message.
      const read = wecomCardClickOf(message, digestOf(opened.message));
      if (read.kind === 'unusable') return { kind: 'unusable', reason: read.reason, ack: ACK };
      return {
        kind: 'card-click',
        click: read.click,
        reply: (answer) => wecomClickReply(crypto, read.click.userId, answer, crypto.now()) ?? ACK,
      };
    }
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

  return {
    vendor: 'wecom',
    vendorDeadlineMs: 5_000,
    read,
    ...(options.decisionOperators ? { decisionOperators: new Set(options.decisionOperators) } : {}),
  };
}
