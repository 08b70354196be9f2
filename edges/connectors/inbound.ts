// Small readers every connector needs of an inbound callback: a header by name, a JSON object
// from bytes, and a comparison of secrets that does not leak how much of a guess was right.
import { timingSafeEqual } from 'node:crypto';
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

export function refused(status: 400 | 401, reason: string): InboundCallback {
  return { kind: 'refused', status, reason };
}

export const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

export const textOf = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined;
