// Readers of text as they were before they became linear, kept here (never in the product) as the
// broken variants the stall checks must catch and as the references the linear ones must agree
// with on small inputs: the WeCom XML reader built on one regular expression, the URL finder of
// `scrubbed`, and the authority reader of the production check's URL passwords. On `<` followed by a long run of letters, or on
// `a.a.a.…`, each tries every way to split the run and takes time quadratic in its length.

/** The WeCom XML reader's tokenizer as it was: its tag alternative backtracks on `<` + letters. */
export const BACKTRACKING_XML_TOKEN =
  /<!\[CDATA\[[\s\S]*?\]\]>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<(\/?)([A-Za-z_][\w.-]*)[^<>]*?(\/?)>|[^<]+|</g;

/** The URL finder as it was: every word start of a scheme is tried against the whole run. */
export const BACKTRACKING_URL = /\b[a-z][a-z0-9+.-]*:\/\/[^\s'"<>]+/gi;

/** The authority of a URL as the production check first read it: each `${` without a `}` scans to the end. */
export const BACKTRACKING_URL_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/((?:\$\{[^}]*\}|[^/?#])*)/;

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** `xmlChildren` as it was, on the expression above. */
export function backtrackingXmlChildren(xml: string): Map<string, string> | undefined {
  const children = new Map<string, string>();
  const open: string[] = [];
  let childStart = 0;
  let sawRoot = false;
  for (const match of xml.matchAll(BACKTRACKING_XML_TOKEN)) {
    const [token, closing, name, selfClosing] = match;
    if (name === undefined) {
      if (token === '<') return undefined;
      if (open.length === 0 && token.startsWith('<![CDATA[')) return undefined;
      if (open.length === 0 && !token.startsWith('<') && token.trim() !== '') return undefined;
      continue;
    }
    const end = (match.index ?? 0) + token.length;
    if (closing) {
      if (open.pop() !== name) return undefined;
      if (open.length === 1 && !children.has(name)) children.set(name, xml.slice(childStart, match.index));
      continue;
    }
    if (open.length === 0 && sawRoot) return undefined;
    if (selfClosing) {
      if (open.length === 0) sawRoot = true;
      else if (open.length === 1 && !children.has(name)) children.set(name, '');
      continue;
    }
    if (open.length === 0) sawRoot = true;
    open.push(name);
    if (open.length === 2) childStart = end;
  }
  if (!sawRoot || open.length > 0) return undefined;
  for (const [name, inner] of children) {
    const trimmed = inner.trim();
    const cdata = /^<!\[CDATA\[([\s\S]*?)\]\]>$/.exec(trimmed);
    const text = cdata
      ? (cdata[1] ?? '')
      : inner.includes('<')
        ? inner
        : inner.replace(/&(lt|gt|amp|quot|apos);/g, (_, entity: string) => ENTITIES[entity] ?? '');
    children.set(name, text);
  }
  return children;
}
