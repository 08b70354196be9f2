// What one DingTalk event says, whichever door it came through: the decrypted body of an HTTP
// callback, or the data of an EVENT frame on the Stream connection. Both doors read it here, so an
// approval means the same order either way; each door only says where the event type and the
// delivery id are (the callback's body names the type, a Stream frame's headers name both).
import { dingtalkEventStatus } from './status.js';
import type { OaEvent } from '../connector.js';
import { textOf } from '../inbound.js';

/** The event of an approval instance's change: started, finished (agreed or refused), terminated, deleted. */
export const DINGTALK_INSTANCE_CHANGE = 'bpms_instance_change';

export type DingTalkEventReading =
  /** An approval event, whatever its status. */
  | { kind: 'event'; event: OaEvent }
  /** Not an approval event: acknowledged and otherwise ignored. */
  | { kind: 'other'; eventType: string }
  /** An approval event the service cannot use: acknowledged and logged, nothing recorded. */
  | { kind: 'unusable'; reason: string };

/**
 * Reads an authentic event: `eventType` as the door found it, `payload` the event's own fields,
 * `eventId` the delivery id the door names (recorded in `oa_event`, never the key).
 */
export function readDingTalkEvent(
  eventType: string,
  payload: Record<string, unknown>,
  eventId: string,
): DingTalkEventReading {
  if (eventType !== DINGTALK_INSTANCE_CHANGE) return { kind: 'other', eventType };
  // A malformed approval event is acknowledged as unusable, never refused: DingTalk would send
  // the same event again for as long as it retries.
  const instanceId = textOf(payload.processInstanceId);
  if (!instanceId) return { kind: 'unusable', reason: `${DINGTALK_INSTANCE_CHANGE} without a processInstanceId` };
  return {
    kind: 'event',
    event: {
      vendor: 'dingtalk',
      eventId,
      eventType,
      instanceId,
      status: dingtalkEventStatus(payload.type, payload.result),
      definitionCode: textOf(payload.processCode),
    },
  };
}
