// WeCom's codes for an approval instance's state, in the service's common words
// (domain/oa-approval.ts). Its callback and its server API use the same codes, so the connector
// (connector.ts) and the reader (reader.ts) share this table.
import type { OaInstanceStatus } from '../../domain/oa-approval.js';

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
