// `scan-duplicates`: scans the recent orders for duplicates and records an alert per cluster.
import { listDuplicateAlerts, scanForDuplicates } from '../../../services/db/duplicate-scan.js';
import { table } from '../table.js';
import { alertLimit, alertView, type Command, positiveInteger, shown } from './shared.js';

export const scanDuplicatesCommand: Command = {
  name: 'scan-duplicates',
  summary: 'find orders of one approval+operation under different keys, and runs of near-identical orders',
  usage:
    '[--since-hours N] [--window-minutes M] [--limit N]\n\nRecords one alert per cluster (a cluster that grows grows its alert) and lists the\nclusters with an order in the lookback, at most --limit (default 20). Exit code 1 when\nanything is found.',
  options: {
    'since-hours': { type: 'string' },
    'window-minutes': { type: 'string' },
    limit: { type: 'string' },
  },
  run: async (context, values) => {
    const limit = alertLimit(values);
    const options = {
      lookbackMinutes: positiveInteger(values, 'since-hours', 24) * 60,
      nearWindowMinutes: positiveInteger(
        values,
        'window-minutes',
        context.config.safetyNets.nearDuplicateWindowMinutes,
      ),
    };
    context.progress('scanning order_main …');
    const result = await scanForDuplicates(await context.prisma(), options);
    const listing = await listDuplicateAlerts(await context.prisma(), { limit, since: new Date(result.scannedSince) });
    const alerts = listing.alerts.map(alertView);
    const newIds = new Set(result.newAlertIds);
    const found = result.sameDocumentClusters + result.nearIdenticalClusters;
    const summary =
      `${result.sameDocumentClusters} document(s) under more than one key, ` +
      `${result.nearIdenticalClusters} run(s) of near-identical orders since ${result.scannedSince}; ` +
      `${result.newAlerts} new alert(s), ${result.grownAlerts} grown`;
    const human =
      found === 0
        ? `no duplicates among orders since ${result.scannedSince}`
        : [
            summary,
            table(
              ['ALERT', 'KIND', 'ORDERS', 'NEW', 'DETAIL'],
              alerts.map((alert) => [
                alert.id,
                alert.kind,
                alert.orderCount,
                newIds.has(alert.id) ? 'new' : 'known',
                alert.detail,
              ]),
            ),
            shown(alerts.length, listing.total),
          ].join('\n');
    return { ok: found === 0, data: { ...result, alerts, alertsTotal: listing.total }, human };
  },
};
