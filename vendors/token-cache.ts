// The access token of one OA app, kept until shortly before it expires and shared by concurrent
// reads, so N reads cost one token request; a token the API calls invalid is dropped.
/** An access token kept until shortly before it expires; concurrent callers share one request. */
export interface TokenCache {
  get(): Promise<string>;
  /** Forget this token (the API called it invalid), so the next `get` asks for a new one. */
  invalidate(token: string): void;
}

export function createTokenCache(
  fetchToken: () => Promise<{ token: string; expiresInSeconds: number }>,
  now: () => number = Date.now,
): TokenCache {
  let current: { token: string; refreshAt: number } | undefined;
  let pending: Promise<string> | undefined;
  return {
    get() {
      if (current && now() < current.refreshAt) return Promise.resolve(current.token);
      pending ??= fetchToken()
        .then(({ token, expiresInSeconds }) => {
          const lifetimeMs = expiresInSeconds * 1000;
          // Refresh five minutes early, or halfway for short-lived tokens.
          current = { token, refreshAt: now() + lifetimeMs - Math.min(300_000, lifetimeMs / 2) };
          return token;
        })
        .finally(() => {
          pending = undefined;
        });
      return pending;
    },
    invalidate(token) {
      if (current?.token === token) current = undefined;
    },
  };
}

/** One authenticated read: its value, or the API's word that the token is no longer valid. */
export type TokenRead<T> = { kind: 'ok'; value: T } | { kind: 'token-invalid'; refused: () => Error };

/**
 * Reads with the cached token; when the API calls it invalid (401/403 or the vendor's code), drops
 * it, takes a fresh one and reads once more — and if that is refused too, throws the refusal: a
 * second refresh would not help, and the classification table does not retry it.
 */
export async function readWithOneRefresh<T>(
  tokens: TokenCache,
  read: (token: string) => Promise<TokenRead<T>>,
): Promise<T> {
  const token = await tokens.get();
  const first = await read(token);
  if (first.kind === 'ok') return first.value;
  tokens.invalidate(token);
  const second = await read(await tokens.get());
  if (second.kind === 'ok') return second.value;
  throw second.refused();
}
