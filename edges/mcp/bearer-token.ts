// The bearer checks of the HTTP API (`/mcp`, and `GET /orders/…` with STATUS_TOKEN). Both sides are
// hashed first, so the comparison is constant-time whatever the lengths: a wrong token reveals
// nothing of the right one. During a rotation (MCP_TOKEN_PREVIOUS) either token is accepted, each
// compared in full.
import { createHash, timingSafeEqual } from 'node:crypto';

const BEARER = /^Bearer +(\S+) *$/i;

/** The token in use and, during a rotation, the one it replaces. */
export type BearerTokens = string | readonly [current: string, previous?: string | undefined];

export function bearerTokenMatches(authorization: string | undefined, tokens: BearerTokens): boolean {
  return bearerTokenRefusal(authorization, tokens) === undefined;
}

/**
 * Why `authorization` does not carry the token, for the log (the caller gets one answer whatever
 * the reason), or undefined when it does. `setting` names the token in that reason.
 */
export function bearerTokenRefusal(
  authorization: string | undefined,
  tokens: BearerTokens,
  setting = 'MCP_TOKEN',
): string | undefined {
  const found = bearerTokenHolder(authorization, { [setting]: tokens });
  return 'refusal' in found ? found.refusal : undefined;
}

/**
 * Which holder's token `authorization` carries — `{ holder }` — or, for the log, why it carries
 * none. Holders whose tokens are unset (undefined) are never matched. Every token of every holder
 * is compared, whichever matches: the time taken says nothing about which, nor whether one did.
 */
export function bearerTokenHolder<Holder extends string>(
  authorization: string | undefined,
  holders: Readonly<Record<Holder, BearerTokens | undefined>>,
): { holder: Holder } | { refusal: string } {
  const match = BEARER.exec(authorization ?? '');
  const given = digest(match?.[1] ?? '');
  let holder: Holder | undefined;
  for (const [name, tokens] of Object.entries(holders) as [Holder, BearerTokens | undefined][]) {
    const listed: readonly (string | undefined)[] =
      tokens === undefined ? [] : typeof tokens === 'string' ? [tokens] : tokens;
    const accepted = listed.filter((token): token is string => token !== undefined);
    const matches = accepted.map((token) => timingSafeEqual(given, digest(token)));
    if (matches.includes(true)) holder ??= name;
  }
  if (holder !== undefined) return { holder };
  if (authorization === undefined) return { refusal: 'no Authorization header' };
  if (!match) return { refusal: 'the Authorization header is not a bearer token' };
  return { refusal: `the bearer token does not match ${Object.keys(holders).join(' or ')}` };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
