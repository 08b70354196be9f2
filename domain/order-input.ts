// The approval body every entry point accepts (the OA webhook now; the MCP tool takes the same).
// Parse, don't validate: after `parseApproval` the rest of the code trusts its types.
import { z } from 'zod';
import { APPROVAL_NO_PATTERN, OPERATIONS } from './idempotency-key.js';
import { MAX_AMOUNT_UNITS, parseMoneyUnits } from './money.js';

export const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

const MAX_QUANTITY = 1_000_000;
const UNIT_PRICE_PATTERN = /^\d{1,12}(\.\d{1,4})?$/;

const orderLineSchema = z.strictObject({
  sku: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 characters of A-Z a-z 0-9 . _ -'),
  quantity: z.number().int('must be an integer').min(1).max(MAX_QUANTITY),
  unitPrice: z.string().regex(UNIT_PRICE_PATTERN, 'must be a decimal string with up to 12 digits and 4 decimals'),
});

/** An order as every entry point describes it (also an order mapped from an OA form). */
export const orderSchema = z
  .strictObject({
    customerId: z.string().min(1).max(64).regex(PRINTABLE_ASCII, 'must be printable ASCII'),
    currency: z.string().regex(/^[A-Z]{3}$/, 'must be three capital letters'),
    lines: z.array(orderLineSchema).min(1).max(100),
  })
  .superRefine((order, ctx) => {
    // The total must fit order_main.total_amount NUMERIC(18,4); refuse it here rather than fail
    // the write after the workflow started.
    const total = orderTotalUnits(order);
    if (total !== undefined && total > MAX_AMOUNT_UNITS) {
      ctx.addIssue({ code: 'custom', path: ['lines'], message: 'the order total exceeds 99999999999999.9999' });
    }
  });

export const approvalSchema = z.strictObject({
  approvalNo: z
    .string()
    .regex(APPROVAL_NO_PATTERN, 'must be 1-64 ASCII letters, digits, ".", "_" or "-", starting with a letter or digit'),
  operation: z.enum(OPERATIONS),
  approvedAt: z.iso.datetime({ offset: true, message: 'must be an RFC 3339 date-time with offset' }),
  order: orderSchema,
});

/**
 * The order total in ten-thousandths, or undefined while any line is itself invalid. zod runs this
 * refinement even after a field check failed (a pattern failure does not stop the parse), so the
 * values here are unchecked: a malformed line is already reported at its own pointer, and the
 * total of a broken order means nothing — nothing here may throw.
 */
function orderTotalUnits(order: unknown): bigint | undefined {
  const lines = (order as { lines?: unknown } | undefined)?.lines;
  if (!Array.isArray(lines)) return undefined;
  let total = 0n;
  for (const line of lines as unknown[]) {
    const { quantity, unitPrice } = (line ?? {}) as { quantity?: unknown; unitPrice?: unknown };
    if (typeof quantity !== 'number' || !Number.isSafeInteger(quantity) || quantity < 1 || quantity > MAX_QUANTITY)
      return undefined;
    if (typeof unitPrice !== 'string' || !UNIT_PRICE_PATTERN.test(unitPrice)) return undefined;
    const units = parseMoneyUnits(unitPrice);
    if (units === undefined) return undefined;
    total += BigInt(quantity) * units;
  }
  return total;
}

export type Approval = z.infer<typeof approvalSchema>;
export type OrderLineInput = z.infer<typeof orderLineSchema>;

/** One bad field, addressed by an RFC 6901 JSON pointer into the body. */
export interface FieldError {
  pointer: string;
  message: string;
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

export function toFieldErrors(error: z.ZodError): FieldError[] {
  return error.issues.flatMap((issue) =>
    // An unknown field is reported where it is, one error per field.
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ pointer: jsonPointer([...issue.path, key]), message: 'unknown field' }))
      : [{ pointer: jsonPointer(issue.path), message: issue.message }],
  );
}

/** RFC 6901: "" is the whole body, "/order/lines/0/quantity" one field. */
function jsonPointer(path: readonly PropertyKey[]): string {
  return path.map((part) => '/' + String(part).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

export function parseApproval(body: unknown): ParseResult<Approval> {
  const result = approvalSchema.safeParse(body);
  return result.success ? { ok: true, value: result.data } : { ok: false, errors: toFieldErrors(result.error) };
}
