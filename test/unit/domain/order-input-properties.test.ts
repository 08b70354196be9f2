// Properties of the approval parser over bodies nobody wrote by hand: it never throws, whatever
// arrives, and every error it reports points at a real place in the body. A deliberately broken
// parser shows the same property can fail, and that fast-check shrinks its counterexample.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { z } from 'zod';
import { approvalSchema, parseApproval, toFieldErrors, type ParseResult } from '../../../domain/order-input.js';
import { MAX_AMOUNT_UNITS, toMoneyUnits } from '../../../domain/money.js';
import {
  anyBody,
  pointerAddressesBody,
  type ReplacedField,
  replacedField,
  validBody,
  withFieldReplaced,
} from '../../../tools/harness/approval-arbitraries.js';

type Parse = (body: unknown) => ParseResult<unknown>;

/** The property, shared by the real parser and the broken one: no throw, and real pointers only. */
function answersWithoutThrowing(parse: Parse, body: unknown): void {
  const result = parse(body);
  if (result.ok) return;
  assert.ok(result.errors.length > 0, 'a refusal names at least one field');
  for (const error of result.errors) {
    assert.ok(pointerAddressesBody(body, error.pointer), `${JSON.stringify(error.pointer)} is not a place in the body`);
    assert.equal(typeof error.message, 'string');
  }
}

/**
 * The parser as it once was: the order-total refinement converts every unit price, even one whose
 * own pattern already failed, and the conversion throws out of `safeParse`.
 */
const brokenSchema = z.strictObject(approvalSchema.shape).superRefine((approval, ctx) => {
  const total = approval.order.lines.reduce(
    (sum, line) => sum + BigInt(line.quantity) * toMoneyUnits(line.unitPrice),
    0n,
  );
  if (total > MAX_AMOUNT_UNITS) ctx.addIssue({ code: 'custom', path: ['order', 'lines'], message: 'too large' });
});
const brokenParse: Parse = (body) => {
  const result = brokenSchema.safeParse(body);
  return result.success ? { ok: true, value: result.data } : { ok: false, errors: toFieldErrors(result.error) };
};

const replacedBody = ({ path, value }: ReplacedField) => withFieldReplaced(validBody(), path, value);

describe('approval parser properties', () => {
  it('never throws for any JSON value as the body, and points only at real places', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => answersWithoutThrowing(parseApproval, body)),
      { numRuns: 500 },
    );
  });

  it('never throws for any JavaScript value as the body, and points only at real places', () => {
    fc.assert(
      fc.property(fc.anything(), (body) => answersWithoutThrowing(parseApproval, body)),
      { numRuns: 500 },
    );
  });

  it('never throws when one field of a valid approval is replaced by any string or JSON value', () => {
    fc.assert(
      fc.property(replacedField, (replaced) => answersWithoutThrowing(parseApproval, replacedBody(replaced))),
      { numRuns: 2000 },
    );
  });

  it('never throws for a mix of all of the above', () => {
    fc.assert(
      fc.property(anyBody(validBody()), (body) => answersWithoutThrowing(parseApproval, body)),
      { numRuns: 500 },
    );
  });

  it('the same property catches a parser that throws, and shrinks the case to a short bad unit price', () => {
    const details = fc.check(
      fc.property(replacedField, (replaced) => answersWithoutThrowing(brokenParse, replacedBody(replaced))),
      { numRuns: 2000 },
    );
    assert.equal(details.failed, true, 'fast-check found a counterexample');
    assert.ok(details.counterexample, 'and reports it');
    const [shrunk] = details.counterexample;
    assert.deepEqual(shrunk.path, ['order', 'lines', 0, 'unitPrice'], 'the bad field is the unit price');
    assert.equal(shrunk.value, '', 'shrunk to the smallest string that is not a decimal amount');
    assert.match(String(details.errorInstance), /is not a decimal amount/);
  });
});
