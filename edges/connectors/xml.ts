// The little XML WeCom's callbacks need: the direct children of one element, each as its text
// (CDATA unwrapped, the five predefined entities decoded) or, when it holds elements, as its inner
// XML to read the same way. Not a general parser: no attributes are read, no DTD is expanded,
// and anything unbalanced is no XML at all (undefined). Only text that is authentic — its
// signature checked, decrypted — reaches the event reader; the outer body is read for its
// `Encrypt` alone.
const TOKEN = /<!\[CDATA\[[\s\S]*?\]\]>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<(\/?)([A-Za-z_][\w.-]*)[^<>]*?(\/?)>|[^<]+|</g;
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** The direct children of the document's root element, by name (the first of each name wins). */
export function xmlChildren(xml: string): Map<string, string> | undefined {
  const children = new Map<string, string>();
  const open: string[] = [];
  let childStart = 0;
  let sawRoot = false;
  for (const match of xml.matchAll(TOKEN)) {
    const [token, closing, name, selfClosing] = match;
    if (name === undefined) {
      if (token === '<') return undefined;
      // Text outside the root may only be white space, a declaration or a comment.
      if (open.length === 0 && token.startsWith('<![CDATA[')) return undefined;
      if (open.length === 0 && !token.startsWith('<') && token.trim() !== '') return undefined;
      continue;
    }
    const end = (match.index ?? 0) + token.length;
    if (closing) {
      if (open.pop() !== name) return undefined;
      if (open.length === 1 && !children.has(name)) {
        children.set(name, xml.slice(childStart, match.index));
      }
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
  for (const [name, inner] of children) children.set(name, textOfInner(inner));
  return children;
}

/** An element's inner XML as text when it holds no elements: CDATA unwrapped, entities decoded. */
function textOfInner(inner: string): string {
  const trimmed = inner.trim();
  const cdata = /^<!\[CDATA\[([\s\S]*?)\]\]>$/.exec(trimmed);
  if (cdata) return cdata[1] ?? '';
  if (inner.includes('<')) return inner;
  return inner.replace(/&(lt|gt|amp|quot|apos);/g, (_, entity: string) => ENTITIES[entity] ?? '');
}

/** The direct children of an element whose inner XML `xmlChildren` gave. */
export function xmlChildrenOf(inner: string): Map<string, string> | undefined {
  return xmlChildren(`<_>${inner}</_>`);
}
