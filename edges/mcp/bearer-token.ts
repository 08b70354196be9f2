// The bearer check of the MCP HTTP transport. Both sides are hashed first, so the comparison is
// constant-time whatever the lengths: a wrong token reveals nothing of the right one.
import { createHash, timingSafeEqual } from 'node:crypto';

const BEARER = /^Bearer +(\S+) *$/i;

export function bearerTokenMatches(authorization: string | undefined, token: string): boolean {
  return bearerTokenRefusal(authorization, token) === undefined;
}

/**
 * Why `authorization` does not carry the token, for the log (the caller gets one answer whatever
 * the reason), or undefined when it does.
 */
export function bearerTokenRefusal(authorization: string | undefined, token: string): string | undefined {
  const match = BEARER.exec(authorization ?? '');
  if (timingSafeEqual(digest(match?.[1] ?? ''), digest(token))) return undefined;
  if (authorization === undefined) return 'no Authorization header';
  if (!match) return 'the Authorization header is not a bearer token';
  return 'the bearer token does not match MCP_TOKEN';
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
