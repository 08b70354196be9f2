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

/**
 * Every URL in `text` without its query (the endpoint's carries the ticket), and no secret of `secrets`.
 * Runs on every line a vendor's SDK logs, so it is linear: a URL is found from its `://`, its scheme
 * read backwards and its rest forwards, each character at most twice (a regular expression that
 * tries every start of a scheme backtracks: 64 KB of `a.a.…` held the event loop for seconds).
 */
export function scrubbed(text: string, secrets: readonly string[]): string {
  let clean = '';
  let copied = 0;
  for (let sep = text.indexOf('://'); sep !== -1; sep = text.indexOf('://', Math.max(sep + 1, copied))) {
    const start = schemeStart(text, sep, copied);
    if (start === undefined) continue;
    let end = sep + 3;
    while (end < text.length && !endsUrl(text.charCodeAt(end))) end += 1;
    if (end === sep + 3) continue;
    clean += text.slice(copied, start) + redactUrl(text.slice(start, end));
    copied = end;
  }
  clean += text.slice(copied);
  for (const secret of secrets) if (secret) clean = clean.split(secret).join(REDACTED);
  return clean;
}

/**
 * Where the scheme before the `://` at `sep` begins — the leftmost letter at a word's start in the
 * run of scheme characters (`A-Za-z0-9+.-`) that ends there — or undefined when there is none. The
 * run is not read back past `floor`, the end of the URL before it; runs end at `:` or `/`, so no two
 * `://` read the same characters.
 */
function schemeStart(text: string, sep: number, floor: number): number | undefined {
  let runStart = sep;
  while (runStart > floor && isSchemeChar(text.charCodeAt(runStart - 1))) runStart -= 1;
  for (let at = runStart; at < sep; at += 1) {
    if (isLetter(text.charCodeAt(at)) && (at === 0 || !isWordChar(text.charCodeAt(at - 1)))) return at;
  }
  return undefined;
}

const isLetter = (code: number) => (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
const isDigit = (code: number) => code >= 48 && code <= 57;
const isSchemeChar = (code: number) => isLetter(code) || isDigit(code) || code === 43 || code === 46 || code === 45;
const isWordChar = (code: number) => isLetter(code) || isDigit(code) || code === 95;

/** What ends a URL in running text: white space (as ECMAScript counts it), quotes, backquotes and angle brackets. */
const URL_ENDS = new Set(
  [
    ...[0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff],
    ...Array.from({ length: 11 }, (_, i) => 0x2000 + i),
  ].concat(["'", '"', '`', '<', '>'].map((quote) => quote.charCodeAt(0))),
);
const endsUrl = (code: number) => URL_ENDS.has(code);
