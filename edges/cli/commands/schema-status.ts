// `schema-status`: whether the database's schema is the one this build was written for — the
// read-only check a pod's init container waits on while the migrate Job runs, so the API and the
// worker start on a current schema instead of failing and backing off.
import { pendingMigrations } from '../../../services/db/migrate.js';
import { storeOf } from '../../../services/db/stores/store.js';
import type { CommandContext } from '../context.js';
import { type Command, positiveInteger } from './shared.js';

/** How often `--wait` asks again. */
const POLL_MS = 2_000;

/** The migrations the database lacks, or why it could not be asked. */
async function missingMigrations(context: CommandContext): Promise<{ missing: string[] } | { unreachable: string }> {
  try {
    const prisma = context.uncheckedPrisma();
    const query = (sql: string) => prisma.$queryRawUnsafe<{ migration_name: string }[]>(sql);
    return { missing: await pendingMigrations(query, storeOf(prisma)) };
  } catch (error) {
    return { unreachable: error instanceof Error ? error.message.split('\n')[0]! : String(error) };
  }
}

export const schemaStatusCommand: Command = {
  name: 'schema-status',
  summary: "whether the database's schema is this build's (exit 0) or behind it (exit 1); reads only",
  usage:
    '[--wait SECONDS]\n\nLists the migrations of this build that the database has not applied. With --wait, asks again\n' +
    'every 2 s until there are none (exit 0) or SECONDS have passed (exit 1), a database not yet\n' +
    "reachable included: what a pod's init container runs while the migrate Job migrates.",
  options: { wait: { type: 'string' } },
  run: async (context, values) => {
    const waitSeconds = values.wait === undefined ? 0 : positiveInteger(values, 'wait', 0);
    const deadline = Date.now() + waitSeconds * 1000;
    let answer = await missingMigrations(context);
    while (('unreachable' in answer || answer.missing.length > 0) && Date.now() + POLL_MS <= deadline) {
      context.progress(
        'unreachable' in answer
          ? `the database did not answer (${answer.unreachable}); asking again`
          : `${answer.missing.length} migration(s) not applied yet; asking again`,
      );
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      answer = await missingMigrations(context);
    }
    if ('unreachable' in answer) throw new Error(`the database did not answer: ${answer.unreachable}`);
    const { missing } = answer;
    return {
      ok: missing.length === 0,
      data: { current: missing.length === 0, missing },
      human:
        missing.length === 0
          ? "the database's schema is this build's"
          : `the database lacks ${missing.length} migration(s) of this build: ${missing.join(', ')}`,
    };
  },
};
