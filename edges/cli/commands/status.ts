// `status`: where one key stands, read from the database (Temporal only adds a live attempt count).
import { orderNotFound } from '../../../submission/failure-outcome.js';
import { readOrderStatus } from '../../../submission/order-status-view.js';
import { fields } from '../table.js';
import { type Command, keyArgument } from './shared.js';

export const statusCommand: Command = {
  name: 'status',
  summary: 'where one key stands: status, order number, attempts, last error',
  usage: '<key> | --approval-no NO [--operation MAIN|SUPPLEMENT]',
  options: { 'approval-no': { type: 'string' }, operation: { type: 'string' } },
  run: async (context, values, positionals) => {
    const key = keyArgument(positionals, values);
    // The database answers; Temporal only adds a live attempt count, and may be down.
    const view = await readOrderStatus({ prisma: await context.prisma(), temporal: context.lazyTemporal() }, key);
    if (!view) return { ok: false, data: { idempotencyKey: key, found: false }, human: orderNotFound(key).message };
    return {
      ok: true,
      data: view,
      human: fields([
        ['key', view.idempotencyKey],
        ['status', view.status],
        ['order', view.orderNo],
        ['attempts', view.attempts],
        ['last error', view.lastError],
        ['workflow', view.workflowId],
      ]),
    };
  },
};
