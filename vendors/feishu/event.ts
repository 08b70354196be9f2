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
import type { CardClickEvent, OaEvent } from '../connector.js';
import { objectOf, textOf } from '../inbound.js';

/** The approval-instance event's type in each schema. */
export const FEISHU_APPROVAL_EVENT_TYPES = {
  schema1: 'approval_instance',
  schema2: 'approval.instance.status_changed_v4',
} as const;

/** A click on a decision card's button (schema 2.0 only). */
export const FEISHU_CARD_ACTION_EVENT_TYPE = 'card.action.trigger';

export type FeishuEventRead =
  | { kind: 'event'; event: OaEvent }
  | { kind: 'card-click'; click: CardClickEvent }
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
  if (header && eventType === FEISHU_CARD_ACTION_EVENT_TYPE) return readCardClick(header, event);
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

/**
 * A click on a decision card: who clicked (`operator.open_id`) and what the button carries
 * (`action.value`: the key, its episode and the decision, as vendors/feishu/decision-cards.ts puts
 * them there). A click on a card that is not a decision card is `unusable`.
 */
function readCardClick(header: Record<string, unknown>, event: Record<string, unknown> | undefined): FeishuEventRead {
  const eventId = textOf(header.event_id);
  const userId = textOf(objectOf(event?.operator)?.open_id);
  const value = objectOf(objectOf(event?.action)?.value);
  const idempotencyKey = textOf(value?.idempotencyKey);
  const episode = textOf(value?.episode);
  const decision = textOf(value?.decision);
  if (!eventId) return { kind: 'unusable', reason: `${FEISHU_CARD_ACTION_EVENT_TYPE} without a header.event_id` };
  if (!userId) return { kind: 'unusable', reason: `${FEISHU_CARD_ACTION_EVENT_TYPE} without an operator.open_id` };
  if (!idempotencyKey || !episode || !decision) {
    return { kind: 'unusable', reason: `${FEISHU_CARD_ACTION_EVENT_TYPE} on a button that is not a decision card's` };
  }
  return { kind: 'card-click', click: { vendor: 'feishu', eventId, userId, idempotencyKey, episode, decision } };
}
