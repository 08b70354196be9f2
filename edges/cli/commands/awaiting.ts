// `awaiting`: every key waiting for a person, the longest waiting first, and the commands that
// move each on.
import {
  type AwaitingDecision,
  listOrdersAwaitingDecision,
  UNCONFIRMED_AFTER_MS,
} from '../../../submission/operator-decisions/awaiting.js';
import { table } from '../table.js';
import { type Command, type CommandResult, nonNegativeInteger, positiveInteger } from './shared.js';

/** What `awaiting` answers: the keys as data, and a table for a person. */
export function awaitingResult(waiting: AwaitingDecision[]): CommandResult {
  return {
    ok: true,
    data: waiting,
    human:
      waiting.length === 0
        ? 'no key is waiting for a person'
        : table(
            ['KEY', 'STATUS', 'NEXT', 'CUSTOMER', 'AMOUNT', 'WAITING SINCE', 'WHY'],
            waiting.map((order) => [
              order.idempotencyKey,
              order.status,
              order.nextActions.join(' | '),
              order.customerId,
              `${order.totalAmount} ${order.currency}`,
              order.waitingSince,
              order.reason.slice(0, 60),
            ]),
          ),
  };
}

export const awaitingCommand: Command = {
  name: 'awaiting',
  summary:
    'every key waiting for a person (COMPENSATING, DELIVERY_FAILED, FAILED, unconfirmed starts, key source conflicts) and what to do next',
  usage:
    '[--limit N] [--unconfirmed-after SECONDS]\n\nThe longest waiting first. NEXT lists the commands that move a key on, the usual first;\nsender-redelivery: the sender was answered 503 and should send again, else `resubmit`.\nKEY_SOURCE_CONFLICT: a delivery through another door than the one holding the key was refused; check, then `clear-conflict`.\nA claim whose start was not confirmed is listed once it is SECONDS old (default 60; 0: at once).',
  options: { limit: { type: 'string' }, 'unconfirmed-after': { type: 'string' } },
  run: async (context, values) => {
    const listed = await listOrdersAwaitingDecision(await context.prisma(), positiveInteger(values, 'limit', 50), {
      unconfirmedAfterMs: nonNegativeInteger(values, 'unconfirmed-after', UNCONFIRMED_AFTER_MS / 1000) * 1000,
    });
    return awaitingResult(listed);
  },
};
