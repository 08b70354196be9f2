// Small readers every connector needs of an inbound callback: a header by name, a JSON object
// from bytes, a comparison of secrets that does not leak how much of a guess was right, and the
// replay window of a signed timestamp.
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

/** A refusal; the reason goes to the log, never into the answer (see `InboundCallback`). */
export function refused(reason: string): InboundCallback {
  return { kind: 'refused', reason };
}

/** The clock connectors read: milliseconds since the epoch (tests pass one of their own). */
export type Clock = () => number;

/**
 * Why a signed timestamp is outside the replay window, or undefined when it is inside. `unit` is
 * what the vendor sends: Feishu unix seconds, DingTalk milliseconds. Both directions count: a
 * timestamp far ahead is as suspect as one far behind (a clock that drifts, or a request made
 * ahead to be replayed later).
 */
export function outsideWindow(
  name: string,
  value: string | undefined,
  unit: 'seconds' | 'milliseconds',
  toleranceSeconds: number,
  now: Clock,
): string | undefined {
  const pattern = unit === 'seconds' ? /^\d{1,12}$/ : /^\d{1,15}$/;
  if (value === undefined || !pattern.test(value)) return `${name} must be unix ${unit}`;
  const sentMs = unit === 'seconds' ? Number(value) * 1000 : Number(value);
  if (Math.abs(now() - sentMs) > toleranceSeconds * 1000) {
    return `${name} is more than ${toleranceSeconds} seconds off`;
  }
  return undefined;
}

export const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

export const textOf = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined;
