// The little XML WeCom's callbacks need: the direct children of one element, each as its text
// (CDATA unwrapped, the five predefined entities decoded) or, when it holds elements, as its inner
// XML to read the same way. Not a general parser: no attributes are read, no DTD is expanded,
// and anything unbalanced or nested more than 32 deep is no XML at all (undefined).
//
// Linear by construction: one pass from left to right, each search (`indexOf`) starting at the
// tag or text it reads, and a failed search ends the pass, so no character is looked at more than
// a few times. A regular expression that backtracks would let one unsigned body of
// `<` and 256 KiB of letters hold the event loop for seconds (docs/architecture.md, decision 37).
// Even so, only text that is authentic — its signature checked, decrypted — reaches `xmlChildren`
// (vendors/wecom/connector.ts); the signed body is searched for its `Encrypt` alone.
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
const CDATA_OPEN = '<![CDATA[';
const CDATA_CLOSE = ']]>';

/** The direct children of the document's root element, by name (the first of each name wins). */
export function xmlChildren(xml: string): Map<string, string> | undefined {
  const children = new Map<string, string>();
  const open: string[] = [];
  let childStart = 0;
  let sawRoot = false;
  let at = 0;
  while (at < xml.length) {
    const lt = xml.indexOf('<', at);
    // Text: inside the root anything, outside it only white space.
    const textEnd = lt === -1 ? xml.length : lt;
    if (open.length === 0 && textEnd > at && xml.slice(at, textEnd).trim() !== '') return undefined;
    if (lt === -1) break;
    const skipped = MARKUP_STARTS.has(xml.charCodeAt(lt + 1)) ? skippedMarkupEnd(xml, lt) : undefined;
    if (skipped !== undefined) {
      // CDATA is text, which the root's outside may not hold; comments and declarations go anywhere.
      if (skipped === -1 || (open.length === 0 && xml.startsWith(CDATA_OPEN, lt))) return undefined;
      at = skipped;
      continue;
    }
    const gt = xml.indexOf('>', lt + 1);
    const nextLt = xml.indexOf('<', lt + 1);
    if (gt === -1 || (nextLt !== -1 && nextLt < gt)) return undefined;
    const closing = xml.charCodeAt(lt + 1) === SLASH;
    const nameStart = closing ? lt + 2 : lt + 1;
    let nameEnd = nameStart;
    while (nameEnd < gt && isNameChar(xml.charCodeAt(nameEnd), nameEnd === nameStart)) nameEnd += 1;
    if (nameEnd === nameStart) return undefined;
    const name = xml.slice(nameStart, nameEnd);
    at = gt + 1;
    if (closing) {
      if (open.pop() !== name) return undefined;
      if (open.length === 1 && !children.has(name)) children.set(name, xml.slice(childStart, lt));
      continue;
    }
    if (open.length === 0 && sawRoot) return undefined;
    if (gt - 1 >= nameEnd && xml.charCodeAt(gt - 1) === SLASH) {
      if (open.length === 0) sawRoot = true;
      else if (open.length === 1 && !children.has(name)) children.set(name, '');
      continue;
    }
    if (open.length === 0) sawRoot = true;
    if (open.length === MAX_DEPTH) return undefined;
    open.push(name);
    if (open.length === 2) childStart = at;
  }
  if (!sawRoot || open.length > 0) return undefined;
  for (const [name, inner] of children) children.set(name, textOfInner(inner));
  return children;
}

const SLASH = 47;
/** `!` and `?`: what may follow `<` in CDATA, a comment or a declaration, and never in a tag. */
const MARKUP_STARTS = new Set([33, 63]);
/** WeCom's messages nest three deep; a document ten times deeper is none of theirs. */
const MAX_DEPTH = 32;

/** Where CDATA, a comment or a declaration starting at `lt` ends (-1: never); undefined for a tag. */
function skippedMarkupEnd(xml: string, lt: number): number | undefined {
  const through = (close: string, from: number) => {
    const found = xml.indexOf(close, from);
    return found === -1 ? -1 : found + close.length;
  };
  if (xml.startsWith(CDATA_OPEN, lt)) return through(CDATA_CLOSE, lt + CDATA_OPEN.length);
  if (xml.startsWith('<!--', lt)) return through('-->', lt + 4);
  if (xml.startsWith('<?', lt)) return through('?>', lt + 2);
  return undefined;
}

/** A name starts with a letter or `_` and goes on with letters, digits, `_`, `.` and `-`. */
function isNameChar(code: number, first: boolean): boolean {
  const letter = (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95;
  if (letter) return true;
  if (first) return false;
  return (code >= 48 && code <= 57) || code === 46 || code === 45;
}

/** An element's inner XML as text when it holds no elements: CDATA unwrapped, entities decoded. */
function textOfInner(inner: string): string {
  const trimmed = inner.trim();
  if (
    trimmed.length >= CDATA_OPEN.length + CDATA_CLOSE.length &&
    trimmed.startsWith(CDATA_OPEN) &&
    trimmed.endsWith(CDATA_CLOSE)
  ) {
    return trimmed.slice(CDATA_OPEN.length, -CDATA_CLOSE.length);
  }
  if (inner.includes('<')) return inner;
  return decodeEntities(inner);
}

/** The five predefined entities decoded, in one pass; any other `&` stays as it is. */
function decodeEntities(text: string): string {
  let decoded = '';
  let at = 0;
  for (let amp = text.indexOf('&'); amp !== -1; amp = text.indexOf('&', at)) {
    // The longest entity name is four letters, so the `;` is looked for in the next five
    // characters only: a search to the end from every `&` would be quadratic.
    const semicolon = text.slice(amp + 1, amp + 6).indexOf(';');
    const entity = semicolon === -1 ? undefined : ENTITIES[text.slice(amp + 1, amp + 1 + semicolon)];
    decoded += text.slice(at, amp) + (entity ?? '&');
    at = entity === undefined ? amp + 1 : amp + 2 + semicolon;
  }
  return decoded + text.slice(at);
}

/** The direct children of an element whose inner XML `xmlChildren` gave. */
export function xmlChildrenOf(inner: string): Map<string, string> | undefined {
  return xmlChildren(`<_>${inner}</_>`);
}

/**
 * The text of the first `<name>…</name>` in `xml` (CDATA unwrapped), found by two searches and
 * nothing else: what a signature covers is read before anything is parsed. Undefined when the
 * element is absent or holds another element.
 */
export function firstElementText(xml: string, name: string): string | undefined {
  const open = `<${name}>`;
  const start = xml.indexOf(open);
  if (start === -1) return undefined;
  const end = xml.indexOf(`</${name}>`, start + open.length);
  if (end === -1) return undefined;
  const inner = xml.slice(start + open.length, end);
  const text = textOfInner(inner);
  return text.includes('<') ? undefined : text;
}
