// `clear-conflict`: clears a key's open key source conflicts, once an operator checked its claim.
import { isDoorName, ORDER_NAMING_DOORS } from '../../../domain/door.js';
import { oaVendorIds } from '../../../vendors/registry.js';
import { clearKeySourceConflicts } from '../../../services/db/key-source-conflicts.js';
import { by, type Command, decidedBy, KEY_USAGE, keyArgument, keyOptions, UsageError } from './shared.js';

export const clearConflictCommand: Command = {
  name: 'clear-conflict',
  summary: 'clear a key source conflict listed by `awaiting`, once its claim was checked',
  usage:
    `${KEY_USAGE} [--door SOURCE] [--by NAME]\n\nA delivery through another door than the one that claimed the key was refused and is\n` +
    `listed by \`awaiting\` as KEY_SOURCE_CONFLICT (docs/operations.md). Clears the key's open\nconflicts, or only those of --door (webhook, mcp or an OA vendor's id); a later refusal lists it again.\nExit code 1 when none was open. NAME is recorded (default: cli:<user>).`,
  options: { ...by, ...keyOptions, door: { type: 'string' } },
  run: async (context, values, positionals) => {
    const key = keyArgument(positionals, values);
    const door = values.door;
    if (door !== undefined && !isDoorName(door)) {
      throw new UsageError(`--door must name a door (${[...ORDER_NAMING_DOORS, ...oaVendorIds()].join(', ')})`);
    }
    // Before the database is opened: a --by refused is a usage error, with nothing contacted.
    const clearedBy = decidedBy(values);
    const cleared = await clearKeySourceConflicts(await context.prisma(), {
      idempotencyKey: key,
      door,
      clearedBy,
    });
    return {
      ok: cleared > 0,
      data: { idempotencyKey: key, cleared },
      human:
        cleared > 0
          ? `cleared ${cleared} key source conflict(s) of ${key}`
          : `no open key source conflict of ${key}${typeof door === 'string' ? ` through ${door}` : ''}`,
    };
  },
};
