// A door is known by its shape (domain/door.ts), the shape the stores check: generated names on both
// sides of it, judged against the shape read character by character.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  DOOR_SHAPE,
  doorNameSchema,
  isDoorName,
  MCP_DOOR,
  ORDER_NAMING_DOORS,
  WEBHOOK_DOOR,
} from '../../../domain/door.js';
import { isOaVendor } from '../../../domain/oa-approval.js';
import { doorNames } from '../../../tools/harness/door-shape.js';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';

/** The shape, spelt out: a lowercase letter, then 1 to 31 of lowercase letters, digits and `-`. */
function spelt(name: string): boolean {
  const chars = [...name];
  return (
    chars.length >= 2 &&
    chars.length <= 32 &&
    LOWER.includes(chars[0]!) &&
    chars.slice(1).every((char) => `${LOWER}0123456789-`.includes(char) && char.length === 1)
  );
}

describe('a door', () => {
  it('is a name of its shape, at the edges as in the stores (generated)', () => {
    fc.assert(
      fc.property(doorNames, ({ name }) => {
        assert.equal(isDoorName(name), spelt(name), name);
        assert.equal(doorNameSchema.safeParse(name).success, spelt(name), name);
      }),
      { numRuns: 500 },
    );
    assert.equal(DOOR_SHAPE.test('a'.repeat(32)), true);
    assert.equal(DOOR_SHAPE.test('a'.repeat(33)), false);
    assert.equal(isDoorName(undefined), false);
  });

  it('is an OA vendor when it is a door that does not name its order: any such name, not a list', () => {
    assert.deepEqual(ORDER_NAMING_DOORS, [WEBHOOK_DOOR, MCP_DOOR]);
    fc.assert(
      fc.property(doorNames, ({ name }) => {
        assert.equal(isOaVendor(name), spelt(name) && name !== 'webhook' && name !== 'mcp', name);
      }),
    );
    for (const vendor of ['feishu', 'dingtalk', 'wecom', 'acme']) assert.equal(isOaVendor(vendor), true, vendor);
  });
});
