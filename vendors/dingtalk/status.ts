// DingTalk's words for an approval instance's state, in the service's common words
// (domain/oa-approval.ts): one reading for its events (either door: approval-event.ts), one for
// the instance its open API reads back (reader.ts).
import type { OaInstanceStatus } from '../../domain/oa-approval.js';

/** DingTalk's `bpms_instance_change` callback: `type` says what happened, `result` how it ended. */
export function dingtalkEventStatus(type: unknown, result: unknown): OaInstanceStatus {
  if (type === 'start') return 'PENDING';
  if (type === 'finish') return result === 'agree' ? 'APPROVED' : result === 'refuse' ? 'REJECTED' : 'OTHER';
  if (type === 'terminate') return 'CANCELED';
  if (type === 'delete') return 'DELETED';
  return 'OTHER';
}

/** DingTalk's process instance as read back: `status` (NEW, RUNNING, COMPLETED, TERMINATED, CANCELED) and `result`. */
export function dingtalkInstanceStatus(status: unknown, result: unknown): OaInstanceStatus {
  if (status === 'NEW' || status === 'RUNNING') return 'PENDING';
  if (status === 'COMPLETED') return result === 'agree' ? 'APPROVED' : result === 'refuse' ? 'REJECTED' : 'OTHER';
  if (status === 'TERMINATED' || status === 'CANCELED') return 'CANCELED';
  return 'OTHER';
}
