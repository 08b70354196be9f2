// A configured URL as logs, span attributes, error messages and command output show it. Such a URL
// may carry credentials in two places: its userinfo (postgresql://user:password@…,
// amqp://user:pass@…) and its query (a receiver that authenticates with `?code=…` or
// `?access_token=…`). Both are replaced by REDACTED, as the OpenTelemetry semantic conventions ask
// of `url.full`; the scheme, host, port, path and the names of the query parameters stay, which is
// what tells one target from another. Why every rendering goes through here: docs/architecture.md,
// "Secrets stay out of every output".

export const REDACTED = 'REDACTED';

/** What a value that does not parse as a URL is shown as: nothing of it, since it may be all secret. */
export const UNPARSABLE_URL = '<a value that is not a URL>';

/**
 * `url` without the values of its userinfo and its query, and without its fragment:
 * `https://erp.example/hook?code=REDACTED`, `postgresql://REDACTED:REDACTED@db:5432/orders`.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return UNPARSABLE_URL;
  }
  const authority = parsed.href.startsWith(`${parsed.protocol}//`) ? '//' : '';
  const userinfo = parsed.username !== '' || parsed.password !== '' ? `${REDACTED}:${REDACTED}@` : '';
  const query = parsed.search === '' ? '' : `?${redactQuery(parsed.search.slice(1))}`;
  return `${parsed.protocol}${authority}${userinfo}${parsed.host}${parsed.pathname}${query}`;
}

/** `a=1&b=2` → `a=REDACTED&b=REDACTED`; a part without `=` may be a bare token, so it goes whole. */
function redactQuery(query: string): string {
  return query
    .split('&')
    .map((part) => {
      if (part === '') return part;
      const equals = part.indexOf('=');
      return equals === -1 ? REDACTED : `${part.slice(0, equals)}=${REDACTED}`;
    })
    .join('&');
}

/**
 * A request target as the logs show it (`/mcp?token=REDACTED`): an inbound query is the caller's,
 * and a caller may put a token there however the service asks for it.
 */
export function redactRequestTarget(target: string): string {
  const query = target.indexOf('?');
  return query === -1
    ? target
    : `${target.slice(0, query)}?${redactQuery(target.slice(query + 1).split('#')[0] ?? '')}`;
}

/** Every URL in `text` without its query (the endpoint's carries the ticket), and no secret of `secrets`. */
export function scrubbed(text: string, secrets: readonly string[]): string {
  let clean = text.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s'"<>]+/gi, (url) => redactUrl(url));
  for (const secret of secrets) if (secret) clean = clean.split(secret).join(REDACTED);
  return clean;
}
