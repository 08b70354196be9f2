// The record of every approval event an OA connector received: one row per vendor event id, so a
// redelivered event is recorded once. The vendor's event id is only recorded; the key the event
// maps to is the business key of its approval instance.
import type { Tx } from './prisma-client.js';
import type { ReceivedOaEvent } from './stores/statements.js';
import { statementsFor } from './stores/store.js';

export type { ReceivedOaEvent };

/**
 * The bounds of the `oa_event` columns (prisma/migrations/20261201000000_oa_connectors): a value
 * beyond them fails the insert, so it is judged before, here, from the same numbers.
 */
export const OA_EVENT_COLUMNS = { eventId: 128, eventType: 64, instanceId: 64 } as const;

/**
 * Why the event cannot be recorded as it is, or undefined when it can. PostgreSQL counts a
 * VARCHAR's length in characters (code points, not UTF-16 units) and refuses U+0000 in any text.
 */
export function oaEventOutOfBounds(
  event: Pick<ReceivedOaEvent, 'eventId' | 'eventType' | 'instanceId'>,
): string | undefined {
  for (const field of ['eventId', 'eventType', 'instanceId'] as const) {
    const value = event[field];
    const max = OA_EVENT_COLUMNS[field];
    const length = [...value].length;
    if (length === 0 || length > max) return `${field} is ${length} characters; the column holds 1–${max}`;
    if (value.includes('\u0000')) return `${field} holds U+0000, which the database refuses in text`;
  }
  return undefined;
}

/** Records the event; false when this vendor event id was recorded before (a redelivery). */
export async function recordOaEvent(db: Tx, event: ReceivedOaEvent): Promise<boolean> {
  return statementsFor(db).recordOaEvent(db, event);
}
