// Each vendor's words for an approval instance's state, in the service's common words
// (domain/oa-approval.ts). Callbacks and open-API reads use the same words per vendor, so the
// connectors and the readers share these two functions.
import type { OaInstanceStatus } from './oa-approval.js';

const FEISHU: Record<string, OaInstanceStatus> = {
  PENDING: 'PENDING',
  APPROVED: 'APPROVED',
  REJECTED: 'REJECTED',
  CANCELED: 'CANCELED',
  DELETED: 'DELETED',
  // The initiator revoked an instance that had already been approved.
  REVERTED: 'REVOKED',
  // A timed-out instance was reopened: it waits for approvers again.
  OVERTIME_RECOVER: 'PENDING',
};

/** Feishu's `status` (event `approval_instance` and `GET /approval/v4/instances/:code`). */
export function feishuStatus(status: unknown): OaInstanceStatus {
  // OVERTIME_CLOSE (closed unanswered) and words added later are OTHER: never an approval.
  return typeof status === 'string' ? (FEISHU[status] ?? 'OTHER') : 'OTHER';
}

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
