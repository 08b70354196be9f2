// `list`: keys by status, most recently changed first.
import { listRecentRecords } from '../../../services/db/idempotency-records.js';
import { ORDER_STATUSES, type OrderStatus } from '../../../domain/order-status.js';
import { table } from '../table.js';
import { type Command, positiveInteger, UsageError, type Values } from './shared.js';

function statusOption(values: Values): OrderStatus | undefined {
  const raw = values.status;
  if (raw === undefined) return undefined;
  if (!(ORDER_STATUSES as readonly unknown[]).includes(raw)) {
    throw new UsageError(`--status must be one of ${ORDER_STATUSES.join(', ')}`);
  }
  return raw as OrderStatus;
}

export const listCommand: Command = {
  name: 'list',
  summary: 'keys by status, most recently changed first',
  usage: `[--status STATUS] [--limit N]\n\nSTATUS: ${ORDER_STATUSES.join(', ')}`,
  options: { status: { type: 'string' }, limit: { type: 'string' } },
  run: async (context, values) => {
    const records = await listRecentRecords(await context.prisma(), {
      status: statusOption(values),
      limit: positiveInteger(values, 'limit', 50),
    });
    const rows = records.map((record) => ({
      idempotencyKey: record.idempotencyKey,
      status: record.status,
      attempts: record.attempts,
      updatedAt: record.updatedAt.toISOString(),
      lastError: record.lastError,
    }));
    return {
      ok: true,
      data: rows,
      human:
        rows.length === 0
          ? 'no keys'
          : table(
              ['KEY', 'STATUS', 'ATTEMPTS', 'UPDATED', 'LAST ERROR'],
              rows.map((row) => [
                row.idempotencyKey,
                row.status,
                row.attempts,
                row.updatedAt,
                row.lastError?.slice(0, 60),
              ]),
            ),
    };
  },
};
