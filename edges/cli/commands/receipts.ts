// `receipts`: the approvals whose order number could not be written back, for an operator to tell
// the approver by hand (docs/operations.md, "Receipts in the approvals").
import { failedReceipts } from '../../../services/db/approval-receipts.js';
import { publicErrorOf } from '../../../domain/error-classification.js';
import { table } from '../table.js';
import { alertLimit, type Command, MAX_ALERT_LIMIT } from './shared.js';

export const receiptsCommand: Command = {
  name: 'receipts',
  summary: 'approvals whose order number could not be written back into them, the latest first',
  usage: `[--limit N]\n\nAt most N receipts (default 20, at most ${MAX_ALERT_LIMIT}); each with its order, approval and cause.`,
  options: { limit: { type: 'string' } },
  run: async (context, values) => {
    const failed = (await failedReceipts(await context.prisma(), alertLimit(values))).map((receipt) => ({
      ...receipt,
      cause: publicErrorOf(receipt.failure).code,
    }));
    return {
      ok: true,
      data: { failed },
      human:
        failed.length === 0
          ? 'no failed receipts'
          : table(
              ['SETTLED', 'VENDOR', 'APPROVAL', 'ORDER', 'KEY', 'CAUSE'],
              failed.map((receipt) => [
                receipt.settledAt,
                receipt.vendor,
                receipt.instanceId,
                receipt.orderNo,
                receipt.idempotencyKey,
                receipt.cause,
              ]),
            ),
    };
  },
};
