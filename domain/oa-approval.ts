// The OA systems this service reads approvals from, and an approval instance's status in their
// common words. Only an APPROVED instance starts an order; the others are acknowledged and recorded.

export const OA_VENDORS = ['feishu', 'dingtalk'] as const;
export type OaVendor = (typeof OA_VENDORS)[number];

export const OA_INSTANCE_STATUSES = [
  'PENDING',
  'APPROVED',
  'REJECTED',
  'CANCELED',
  'REVOKED',
  'DELETED',
  'OTHER',
] as const;
export type OaInstanceStatus = (typeof OA_INSTANCE_STATUSES)[number];
