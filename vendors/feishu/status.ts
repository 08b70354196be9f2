// Feishu's words for an approval instance's state, in the service's common words
// (domain/oa-approval.ts). Its callback, its long connection and its open API use the same words, so
// the event reader (event.ts) and the reader (reader.ts) share this table.
import type { OaInstanceStatus } from '../../domain/oa-approval.js';

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
