// Generators of approval bodies for property tests, shared by the parser's unit properties and the
// webhook's integration properties: arbitrary JSON, arbitrary JavaScript values, and a valid body
// with exactly one field (or nested object) replaced by any string or any JSON value.
import fc from 'fast-check';

export interface ApprovalLike {
  approvalNo: string;
  operation: string;
  approvedAt: string;
  order: { customerId: string; currency: string; lines: { sku: string; quantity: number; unitPrice: string }[] };
}

export function validBody(approvalNo = 'AP-2026-0001', sku = 'SKU-APPLE'): ApprovalLike {
  return {
    approvalNo,
    operation: 'MAIN',
    approvedAt: '2026-11-29T10:00:00+08:00',
    order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku, quantity: 2, unitPrice: '12.50' }] },
  };
}

/** Every place in a valid body, from the top-level fields down to each field of a line. */
export const FIELD_PATHS: readonly (readonly (string | number)[])[] = [
  ['approvalNo'],
  ['operation'],
  ['approvedAt'],
  ['order'],
  ['order', 'customerId'],
  ['order', 'currency'],
  ['order', 'lines'],
  ['order', 'lines', 0],
  ['order', 'lines', 0, 'sku'],
  ['order', 'lines', 0, 'quantity'],
  ['order', 'lines', 0, 'unitPrice'],
];

/** A deep copy of `body` with the value at `path` replaced. */
export function withFieldReplaced(body: ApprovalLike, path: readonly (string | number)[], value: unknown): unknown {
  const copy = structuredClone(body) as unknown as Record<string | number, unknown>;
  let parent = copy;
  for (const part of path.slice(0, -1)) parent = parent[part] as Record<string | number, unknown>;
  parent[path[path.length - 1] as string | number] = value;
  return copy;
}

/** Strings close to a decimal amount (signs, exponents, separators, spaces), where parsers slip. */
const decimalLike = fc.stringMatching(/^[-+ 0-9.,eE]{0,24}$/);

/** Any string or any JSON value; strings first, so a counterexample shrinks to a small string. */
export const anyReplacement = fc.oneof(fc.string(), decimalLike, fc.string({ unit: 'grapheme' }), fc.jsonValue());

export interface ReplacedField {
  path: readonly (string | number)[];
  value: unknown;
}

export const replacedField: fc.Arbitrary<ReplacedField> = fc.record({
  path: fc.constantFrom(...FIELD_PATHS),
  value: anyReplacement,
});

/** A body as the edge may receive it, before anything is known about it. */
export function anyBody(base: ApprovalLike): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.jsonValue(),
    fc.anything(),
    replacedField.map(({ path, value }) => withFieldReplaced(base, path, value)),
  );
}

/**
 * Whether an RFC 6901 pointer addresses a real place in `body`: "" (the whole body), an existing
 * member or element, or a member missing from an object that exists (a required field not sent).
 */
export function pointerAddressesBody(body: unknown, pointer: string): boolean {
  if (pointer === '') return true;
  if (!pointer.startsWith('/')) return false;
  const tokens = pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
  let current: unknown = body;
  for (const [index, token] of tokens.entries()) {
    const last = index === tokens.length - 1;
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token) || Number(token) >= current.length) return false;
      current = current[Number(token)];
    } else if (typeof current === 'object' && current !== null) {
      if (!Object.hasOwn(current, token)) return last;
      current = (current as Record<string, unknown>)[token];
    } else {
      return false;
    }
  }
  return true;
}
