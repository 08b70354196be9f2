// Small readers every connector needs of an inbound callback: a header by name, a JSON object
// from bytes, and a comparison of secrets that does not leak how much of a guess was right. The
// replay window of a signed timestamp is the signature module's (`timestampOutsideWindow`).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { InboundCallback, InboundRequest } from './connector.js';

/** A header's first value, whatever the case of its name. */
export function headerOf(request: InboundRequest, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(request.headers)) {
    if (key.toLowerCase() === wanted) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

/** The text as a JSON object, or undefined when it is not one. */
export function jsonObjectOf(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A refusal; the reason goes to the log, never into the answer (see `InboundCallback`). */
export function refused(reason: string): InboundCallback {
  return { kind: 'refused', reason };
}

/** The clock connectors read: milliseconds since the epoch (tests pass one of their own). */
export type Clock = () => number;

export const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

export const textOf = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined;

/**
 * The event id of a vendor that names no delivery id (DingTalk's HTTP push, WeCom): the digest of
 * the decrypted message, the same for every redelivery of the same event.
 */
export const digestOf = (message: string): string => 'sha256:' + createHash('sha256').update(message).digest('hex');
