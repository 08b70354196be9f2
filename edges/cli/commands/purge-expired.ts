// `purge-expired`: purges the idempotency records past the retention window.
import { purgeExpiredRecords } from '../../../services/db/retention.js';
import { type Command, positiveInteger } from './shared.js';

export const purgeExpiredCommand: Command = {
  name: 'purge-expired',
  summary: 'purge idempotency records past the retention window that an order row answers for',
  usage:
    '[--dry-run] [--retention-days N] [--release-unanswered]\n\nDefault N: IDEMPOTENCY_RETENTION_DAYS. Records of keys without an order (abandoned,\nfailed) are kept and counted, and so are unanswered ones: written orders whose sender\nwas never answered with success (every delivery heard 503), kept until it sends again\nand hears its 202. --release-unanswered purges those too, once the sender knows.',
  options: {
    'dry-run': { type: 'boolean' },
    'retention-days': { type: 'string' },
    'release-unanswered': { type: 'boolean' },
  },
  run: async (context, values) => {
    const result = await purgeExpiredRecords(await context.prisma(), {
      retentionDays: positiveInteger(values, 'retention-days', context.config.retentionDays),
      dryRun: values['dry-run'] === true,
      releaseUnanswered: values['release-unanswered'] === true,
      onProgress: (purged) => context.progress(`purged ${purged} …`),
    });
    const kept = Object.entries(result.kept)
      .map(([status, count]) => `${count} ${status}`)
      .join(', ');
    const unanswered = result.unanswered > 0 ? ` (${result.unanswered} of them unanswered)` : '';
    return {
      ok: true,
      data: result,
      human: `${result.dryRun ? 'would purge' : 'purged'} ${result.purged} record(s) created before ${result.cutoff}; kept ${kept || 'none'}${unanswered}`,
    };
  },
};
