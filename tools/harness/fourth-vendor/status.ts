// Acme's words for an approval instance's state, in the service's common words; its callbacks and
// its open API use the same ones.
import type { OaInstanceStatus } from '../../../domain/oa-approval.js';

const ACME: Record<string, OaInstanceStatus> = {
  pending: 'PENDING',
  approved: 'APPROVED',
  rejected: 'REJECTED',
  withdrawn: 'CANCELED',
};

export function acmeStatus(status: unknown): OaInstanceStatus {
  return typeof status === 'string' ? (ACME[status] ?? 'OTHER') : 'OTHER';
}
