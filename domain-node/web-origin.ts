// A browser origin (RFC 6454): `scheme://host[:port]`, nothing else. The same reading for the
// allowed origins an operator configures and for the `Origin` header a browser sends, so that
// `http://agent.example:80` and `http://agent.example` are one origin and a listed origin cannot
// carry a path, a query or credentials that would never match.

/** `value` as `scheme://host[:port]` (default port dropped, host lower-cased), or undefined when it is not an origin. */
export function webOrigin(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return undefined;
  }
  const bare =
    url.host !== '' &&
    url.username === '' &&
    url.password === '' &&
    (url.pathname === '' || url.pathname === '/') &&
    url.search === '' &&
    url.hash === '' &&
    !value.includes('?') &&
    !value.includes('#');
  return bare ? `${url.protocol}//${url.host}` : undefined;
}
