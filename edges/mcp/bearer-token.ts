// The bearer check of the MCP HTTP transport. Both sides are hashed first, so the comparison is
// constant-time whatever the lengths: a wrong token reveals nothing of the right one.
import { createHash, timingSafeEqual } from 'node:crypto';

export function bearerTokenMatches(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  return timingSafeEqual(digest(match?.[1] ?? ''), digest(token));
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
