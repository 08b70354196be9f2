// The `Prefer` request header (RFC 7240) as the webhook reads it: only the `wait` preference is
// honoured. Preferences are hints, so a header the webhook cannot use is ignored, never refused.

/**
 * The seconds of `wait` the sender asked for, or undefined when it asked for none the webhook can
 * honour. The header is a comma-separated list of `name[=value][; parameters]`, names compared
 * without case; when a preference is listed more than once only the first counts (RFC 7240,
 * section 2). A `wait` that is not a whole number of seconds above zero (`wait=abc`, `wait=0`,
 * `wait=-1`, `wait=1.5`) is ignored like an unknown preference.
 */
export function requestedWaitSeconds(header: string | string[] | undefined): number | undefined {
  const lists = Array.isArray(header) ? header : header === undefined ? [] : [header];
  for (const list of lists) {
    for (const preference of splitOutsideQuotes(list, ',')) {
      const [nameAndValue = ''] = splitOutsideQuotes(preference, ';');
      const separator = nameAndValue.indexOf('=');
      const name = (separator === -1 ? nameAndValue : nameAndValue.slice(0, separator)).trim().toLowerCase();
      if (name !== 'wait') continue;
      const value = separator === -1 ? '' : unquote(nameAndValue.slice(separator + 1).trim());
      if (!/^\d+$/.test(value)) return undefined;
      const seconds = Number(value);
      return seconds > 0 ? seconds : undefined;
    }
  }
  return undefined;
}

/** Splits on `separator` except inside a quoted string (where a backslash escapes one character). */
function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index] as string;
    if (quoted && char === '\\') {
      current += char + (text[index + 1] ?? '');
      index++;
      continue;
    }
    if (char === '"') quoted = !quoted;
    if (char === separator && !quoted) {
      parts.push(current);
      current = '';
      continue;
    }
    current += char;
  }
  parts.push(current);
  return parts;
}

function unquote(value: string): string {
  if (value.length < 2 || !value.startsWith('"') || !value.endsWith('"')) return value;
  return value.slice(1, -1).replace(/\\(.)/g, '$1');
}
