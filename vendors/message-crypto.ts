// The message encryption DingTalk and WeCom share: the query carries `msg_signature` (SHA-1 over
// the sorted token, timestamp, nonce and ciphertext), the timestamp and the nonce; the ciphertext
// is AES-256-CBC with the console's 43-character key, and its plaintext ends with the id it was
// encrypted for (DingTalk's app key, WeCom's corp id). `openSealed` checks in the order the door
// rules ask: the signature before anything is decrypted, then the signed timestamp, then the
// decryption and the id. Every failure is a reason for the log (vendors/connector.ts). `sealReply`
// encrypts and signs a reply the same way, for a vendor that takes one (WeCom's passive reply).
import { randomBytes } from 'node:crypto';
import { decrypt, encrypt, getSignature } from '@wecom/crypto';
import { timestampOutsideWindow } from '../domain-node/signature.js';
import { type Clock, sameSecret } from './inbound.js';

export interface MessageCrypto {
  /** The console's token, used in the signature. */
  token: string;
  /** The console's key: 43 characters of base64 (the 32-byte key without its `=`). */
  aesKey: string;
  /** Whom the plaintext must be addressed to: its last part. */
  receiverId: string;
  /** WEBHOOK_TOLERANCE_SECONDS: how far the signed timestamp may be from now. */
  toleranceSeconds: number;
  timestampUnit: 'seconds' | 'milliseconds';
  now: Clock;
  /** How the vendor's console names the key and the receiver, for the log's reasons. */
  names: { aesKey: string; receiver: string };
}

/** What a callback carries of the scheme; any part may be missing. */
export interface Sealed {
  signature: string | undefined;
  timestamp: string | undefined;
  nonce: string | undefined;
  ciphertext: string | undefined;
}

export type Opened = { ok: true; message: string } | { ok: false; reason: string };

const AES_KEY = /^[A-Za-z0-9+/]{43}$/;

/** Refuses a malformed key when the connector is created, not at the first callback. */
export function assertAesKey(aesKey: string, what: string): void {
  if (!AES_KEY.test(aesKey)) throw new Error(`${what} must be 43 characters of base64`);
}

/** The plaintext of a signed ciphertext, or why it is refused. */
export function openSealed(crypto: MessageCrypto, sealed: Sealed): Opened {
  const { signature, timestamp, nonce, ciphertext } = sealed;
  if (!signature || !timestamp || !nonce) return { ok: false, reason: 'missing msg_signature, timestamp or nonce' };
  if (!ciphertext) return { ok: false, reason: 'the body carries no ciphertext' };
  if (!sameSecret(signature, getSignature(crypto.token, timestamp, nonce, ciphertext))) {
    return { ok: false, reason: 'msg_signature does not match' };
  }
  // The timestamp is signed, so it is judged once the signature holds.
  const stale = timestampOutsideWindow(
    'timestamp',
    timestamp,
    crypto.timestampUnit,
    crypto.toleranceSeconds,
    crypto.now(),
  );
  if (stale) return { ok: false, reason: stale };

  let message: string;
  let receiver: string;
  try {
    ({ message, id: receiver } = decrypt(crypto.aesKey, ciphertext));
  } catch {
    return { ok: false, reason: `the body does not decrypt with the configured ${crypto.names.aesKey}` };
  }
  if (!sameSecret(receiver, crypto.receiverId)) {
    return { ok: false, reason: `the callback was encrypted for another ${crypto.names.receiver}` };
  }
  return { ok: true, message };
}

/** A reply sealed for the vendor: the ciphertext, and the signature over it with the timestamp and nonce. */
export interface SealedReply {
  ciphertext: string;
  signature: string;
  timestamp: string;
  nonce: string;
}

/** `plaintext` encrypted for `crypto.receiverId` and signed, as the vendor's callbacks are. */
export function sealReply(
  crypto: Pick<MessageCrypto, 'token' | 'aesKey' | 'receiverId'>,
  plaintext: string,
  timestamp: string,
): SealedReply {
  const ciphertext = encrypt(crypto.aesKey, plaintext, crypto.receiverId);
  const nonce = String(randomBytes(4).readUInt32BE());
  return { ciphertext, signature: getSignature(crypto.token, timestamp, nonce, ciphertext), timestamp, nonce };
}
