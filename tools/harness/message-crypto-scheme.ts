// The message encryption WeCom defined and DingTalk adopted, built on node:crypto alone, apart from
// the library the connectors use, so a test's callback is built as the vendors build theirs:
// msg_signature = SHA-1 over the sorted token, timestamp, nonce and ciphertext; AES-256-CBC with
// key = base64(the console's 43 characters + '='), IV = the key's first 16 bytes; plaintext =
// 16 random bytes + the message's length (4 bytes, big-endian) + the message + the receiver's id
// (DingTalk's app key, WeCom's corp id), PKCS#7-padded to 32-byte blocks.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const keyBytes = (aesKey: string) => Buffer.from(`${aesKey}=`, 'base64');

export function sealMessage(aesKey: string, message: string, receiverId: string): string {
  const bytes = keyBytes(aesKey);
  const text = Buffer.from(message, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(text.length);
  const plain = Buffer.concat([randomBytes(16), length, text, Buffer.from(receiverId, 'utf8')]);
  const pad = 32 - (plain.length % 32);
  const cipher = createCipheriv('aes-256-cbc', bytes, bytes.subarray(0, 16));
  cipher.setAutoPadding(false);
  return Buffer.concat([cipher.update(Buffer.concat([plain, Buffer.alloc(pad, pad)])), cipher.final()]).toString(
    'base64',
  );
}

export function openMessage(aesKey: string, ciphertext: string): { message: string; receiverId: string } {
  const bytes = keyBytes(aesKey);
  const decipher = createDecipheriv('aes-256-cbc', bytes, bytes.subarray(0, 16));
  decipher.setAutoPadding(false);
  const padded = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]);
  const plain = padded.subarray(0, padded.length - (padded[padded.length - 1] ?? 0));
  const length = plain.readUInt32BE(16);
  return {
    message: plain.subarray(20, 20 + length).toString('utf8'),
    receiverId: plain.subarray(20 + length).toString('utf8'),
  };
}

export function messageSignature(token: string, timestamp: string, nonce: string, ciphertext: string): string {
  return createHash('sha1').update([token, timestamp, nonce, ciphertext].sort().join('')).digest('hex');
}

/** A random key as the consoles generate one: 43 characters of base64. */
export function randomAesKey(): string {
  return randomBytes(32).toString('base64').slice(0, 43);
}

/** A hex signature with one character changed to another hex digit: `at` picks where, `flip` to what. */
export function withOneHexDigitChanged(signature: string, at: number, flip: number): string {
  const i = at % signature.length;
  const other = '0123456789abcdef'.replace(signature[i] ?? '', '')[flip % 15] ?? 'x';
  return signature.slice(0, i) + other + signature.slice(i + 1);
}
