// `alerts`: the duplicate alerts the scans recorded.
import { listDuplicateAlerts } from '../../../services/db/duplicate-scan.js';
import { table } from '../table.js';
import { alertLimit, alertView, type Command, MAX_ALERT_LIMIT, shown } from './shared.js';

export const alertsCommand: Command = {
  name: 'alerts',
  summary: 'duplicate alerts recorded by the scans, one per cluster, most recently recorded or grown first',
  usage: `[--limit N]\n\nAt most N alerts (default 20, at most ${MAX_ALERT_LIMIT}); --json carries every order of each.`,
  options: { limit: { type: 'string' } },
  run: async (context, values) => {
    const listing = await listDuplicateAlerts(await context.prisma(), { limit: alertLimit(values) });
    const alerts = listing.alerts.map(alertView);
    return {
      ok: true,
      data: { alerts, total: listing.total },
      human:
        alerts.length === 0
          ? 'no duplicate alerts'
          : [
              table(
                ['ALERT', 'UPDATED', 'KIND', 'ORDERS', 'DETAIL'],
                alerts.map((alert) => [alert.id, alert.updatedAt, alert.kind, alert.orderCount, alert.detail]),
              ),
              shown(alerts.length, listing.total),
            ].join('\n'),
    };
  },
};
