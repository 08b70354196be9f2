// How a vendor's form becomes NormalizedForm text (vendors/approval-reader.ts): values as text,
// and the first field of a name kept when a form repeats a name.
/** A form value as text: strings as given, numbers and booleans printed, anything else as JSON. */
export function textOfValue(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Sets `name` unless the form already had a field of that name: the first one wins. */
export function putFirst(target: Record<string, string>, name: string, value: string): void {
  if (!Object.hasOwn(target, name)) target[name] = value;
}
