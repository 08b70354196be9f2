// The OA systems this service reads approvals from, and an approval instance's status in their
// common words. Only an APPROVED instance starts an order; the others are acknowledged and recorded.

export const OA_VENDORS = ['feishu', 'dingtalk', 'wecom'] as const;
export type OaVendor = (typeof OA_VENDORS)[number];

/** Whether a record's `source` is one of the OA systems (and not the webhook or MCP). */
export function isOaVendor(source: string): source is OaVendor {
  return (OA_VENDORS as readonly string[]).includes(source);
}

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
