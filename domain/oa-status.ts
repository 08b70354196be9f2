// Each vendor's words for an approval instance's state, in the service's common words
// (domain/oa-approval.ts). Callbacks and open-API reads use the same words per vendor, so the
// connectors and the readers share these functions.
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

const WECOM: Record<number, OaInstanceStatus> = {
  1: 'PENDING',
  2: 'APPROVED',
  3: 'REJECTED',
  // The applicant withdrew the approval before it was decided.
  4: 'CANCELED',
  // Withdrawn after it had been approved.
  6: 'REVOKED',
  7: 'DELETED',
};

/**
 * WeCom's `SpStatus` (callback `sys_approval_change`) and `sp_status` (`oa/getapprovaldetail`):
 * a number in the read, its digits in the callback's XML. 10 (paid) and codes added later are
 * OTHER: never an approval.
 */
export function wecomStatus(status: unknown): OaInstanceStatus {
  const code = typeof status === 'string' && /^\d{1,3}$/.test(status) ? Number(status) : status;
  return typeof code === 'number' ? (WECOM[code] ?? 'OTHER') : 'OTHER';
}
