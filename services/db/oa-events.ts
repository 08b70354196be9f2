// The record of every approval event an OA connector received: one row per vendor event id, so a
// redelivered event is recorded once. The vendor's event id is only recorded; the key the event
// maps to is the business key of its approval instance.
import type { OaInstanceStatus, OaVendor } from '../../domain/oa-approval.js';
import type { Tx } from './prisma-client.js';

export interface ReceivedOaEvent {
  vendor: OaVendor;
  eventId: string;
  eventType: string;
  instanceId: string;
  status: OaInstanceStatus;
  idempotencyKey: string;
}

/** Records the event; false when this vendor event id was recorded before (a redelivery). */
export async function recordOaEvent(db: Tx, event: ReceivedOaEvent): Promise<boolean> {
  const inserted = await db.$executeRaw`
    INSERT INTO oa_event (vendor, event_id, event_type, instance_id, status, idempotent_key)
    VALUES (${event.vendor}, ${event.eventId}, ${event.eventType}, ${event.instanceId}, ${event.status},
            ${event.idempotencyKey})
    ON CONFLICT (vendor, event_id) DO NOTHING`;
  return inserted > 0;
}
