// The bearer check of the MCP HTTP transport. Both sides are hashed first, so the comparison is
// constant-time whatever the lengths: a wrong token reveals nothing of the right one. During a
// rotation (MCP_TOKEN_PREVIOUS) either token is accepted, each compared in full.
import { createHash, timingSafeEqual } from 'node:crypto';

const BEARER = /^Bearer +(\S+) *$/i;

/** The token in use and, during a rotation, the one it replaces. */
export type BearerTokens = string | readonly [current: string, previous?: string | undefined];

export function bearerTokenMatches(authorization: string | undefined, tokens: BearerTokens): boolean {
  return bearerTokenRefusal(authorization, tokens) === undefined;
}

/**
 * Why `authorization` does not carry the token, for the log (the caller gets one answer whatever
 * the reason), or undefined when it does.
 */
export function bearerTokenRefusal(authorization: string | undefined, tokens: BearerTokens): string | undefined {
  const match = BEARER.exec(authorization ?? '');
  const given = digest(match?.[1] ?? '');
  const listed: readonly (string | undefined)[] = typeof tokens === 'string' ? [tokens] : tokens;
  const accepted = listed.filter((token): token is string => token !== undefined);
  // Every accepted token is compared, whichever matches: the time taken says nothing about which.
  const matches = accepted.map((token) => timingSafeEqual(given, digest(token)));
  if (matches.includes(true)) return undefined;
  if (authorization === undefined) return 'no Authorization header';
  if (!match) return 'the Authorization header is not a bearer token';
  return 'the bearer token does not match MCP_TOKEN';
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
