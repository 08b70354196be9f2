// The OA systems this service reads approvals from, and an approval instance's status in their
// common words. Only an APPROVED instance starts an order; the others are acknowledged and recorded.
// Which vendors there are is vendors/registry.ts's to say: here a vendor is only its id, a door.
import { type Door, isDoorName, ORDER_NAMING_DOORS } from './door.js';

/** An OA vendor's id (its module's, vendors/oa-vendor.ts): the name of its door (domain/door.ts). */
export type OaVendor = Door;

/** Whether a record's `source` is an OA vendor's door (and not the webhook's or MCP's). */
export function isOaVendor(source: string): source is OaVendor {
  return isDoorName(source) && !ORDER_NAMING_DOORS.includes(source);
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
