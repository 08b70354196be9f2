// The database keeps every column that names a door to the door's shape (domain/door.ts), on either
// store: generated names on both sides of the shape, each written where a door is named, are taken
// exactly when they have it.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DOOR_SHAPE } from '../../domain/door.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import { uniqueApprovalNo } from './service.js';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const TAIL = `${LOWER}0123456789-`;

/** Names that have the shape: a letter, then 1 to 31 of letters, digits and `-`. */
const fitting = fc
  .tuple(fc.constantFrom(...LOWER), fc.string({ unit: fc.constantFrom(...TAIL), minLength: 1, maxLength: 31 }))
  .map(([first, rest]) => first + rest);

/**
 * Names within the columns' 32 characters that miss it: a digit, `-` or capital first, one letter
 * alone, a capital, space, `_`, `.` or non-ASCII letter inside, and printable ASCII at large.
 */
const missing = fc.oneof(
  fc
    .tuple(fc.constantFrom('0', '-', 'A', '_'), fc.string({ unit: fc.constantFrom(...TAIL), maxLength: 20 }))
    .map(([first, rest]) => first + rest),
  fc.constantFrom(...LOWER),
  fc.tuple(fitting, fc.constantFrom('A', ' ', '_', '.', 'é', 'ı'), fc.nat()).map(([name, odd, at]) => {
    const cut = 1 + (at % name.length);
    return (name.slice(0, cut) + odd + name.slice(cut)).slice(0, 32);
  }),
  fc.string({ maxLength: 32 }),
);

/** Generated door names, each with whether it has the shape. */
export const doorNames = fc.oneof(fitting, missing).map((name) => ({ name, fits: DOOR_SHAPE.test(name) }));

/**
 * Writes each generated name as an idempotency record's source, and as a refused door and the door
 * that claimed it in key_source_conflict: each write is taken exactly when the name fits the shape.
 */
export async function assertDoorShapeChecked(prisma: PrismaClient, numRuns = 40): Promise<void> {
  let fits = 0;
  await fc.assert(
    fc.asyncProperty(doorNames, async (door) => {
      if (door.fits) fits += 1;
      const approvalNo = uniqueApprovalNo('DS');
      const key = `APPROVAL:${approvalNo}:MAIN`;
      const writes = {
        source: () =>
          prisma.idempotencyRecord.create({
            data: {
              idempotentKey: key,
              approvalNo,
              operation: 'MAIN',
              source: door.name,
              workflowId: `order-${key}`,
              status: 'RECEIVED',
            },
          }),
        door: () =>
          prisma.keySourceConflict.create({ data: { idempotentKey: key, door: door.name, claimedBy: 'mcp' } }),
        claimedBy: () =>
          prisma.keySourceConflict.create({ data: { idempotentKey: key, door: 'webhook', claimedBy: door.name } }),
      };
      for (const [column, write] of Object.entries(writes)) {
        const taken = await write().then(
          () => true,
          () => false,
        );
        assert.equal(taken, door.fits, `${column} = ${JSON.stringify(door.name)}`);
      }
    }),
    { numRuns },
  );
  assert.ok(fits > 0 && fits < numRuns, `both sides of the shape were generated (${fits} of ${numRuns} fit)`);
}
