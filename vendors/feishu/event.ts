// What one Feishu event body says, whichever door it came through: the callback, once verified and
// decrypted (vendors/feishu/connector.ts), or the long connection (feishu-long-connection.ts). Both
// doors read it here, so an approval is the same `OaEvent` however Feishu pushed it.
//
// Feishu tells an approval instance's change in two envelopes (docs/connectors.md, "Events and
// statuses"): schema 1.0 `approval_instance` (the event id in `uuid`) and schema 2.0
// `approval.instance.status_changed_v4` (the event id in `header.event_id`); in both, `event`
// holds `instance_code`, `approval_code` and `status`. Every other event is `other`; an approval
// event without its ids is `unusable`.
import { feishuStatus } from './status.js';
import type { OaEvent } from '../connector.js';
import { objectOf, textOf } from '../inbound.js';

/** The approval-instance event's type in each schema. */
export const FEISHU_APPROVAL_EVENT_TYPES = {
  schema1: 'approval_instance',
  schema2: 'approval.instance.status_changed_v4',
} as const;

export type FeishuEventRead =
  | { kind: 'event'; event: OaEvent }
  | { kind: 'other'; eventType: string }
  | { kind: 'unusable'; reason: string };

/** The schema 2.0 header, when the body is in schema 2.0; undefined for schema 1.0. */
export function feishuSchema2Header(payload: Record<string, unknown>): Record<string, unknown> | undefined {
  const header = objectOf(payload.header);
  return payload.schema === '2.0' ? header : undefined;
}

/**
 * Reads an authentic event body. Authentic from here on: a malformed approval event is
 * `unusable` (acknowledged and logged), never refused, or Feishu would send the same bytes again
 * for as long as it retries.
 */
export function readFeishuEvent(payload: Record<string, unknown>): FeishuEventRead {
  const header = feishuSchema2Header(payload);
  const event = objectOf(payload.event);
  const eventType = header
    ? (textOf(header.event_type) ?? 'unknown')
    : (textOf(event?.type) ?? textOf(payload.type) ?? 'unknown');
  const approvalType = header ? FEISHU_APPROVAL_EVENT_TYPES.schema2 : FEISHU_APPROVAL_EVENT_TYPES.schema1;
  if (eventType !== approvalType) return { kind: 'other', eventType };

  const eventId = header ? textOf(header.event_id) : textOf(payload.uuid);
  const instanceId = textOf(event?.instance_code);
  if (!eventId)
    return { kind: 'unusable', reason: `${eventType} event without a ${header ? 'header.event_id' : 'uuid'}` };
  if (!instanceId) return { kind: 'unusable', reason: `${eventType} event without an instance_code` };
  return {
    kind: 'event',
    event: {
      vendor: 'feishu',
      eventId,
      eventType,
      instanceId,
      status: feishuStatus(event?.status),
      definitionCode: textOf(event?.approval_code),
    },
  };
}
