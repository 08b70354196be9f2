// What the order workflow needs from an OA system: the approval instance, read back through the
// vendor's open API, its form reduced to one vendor-neutral shape that the mapping file
// (OA_FORM_MAPPING) turns into an order.
import type { OaInstanceStatus, OaVendor } from '../domain/oa-approval.js';

/**
 * A form as named values: top-level fields by their label, and detail tables (Feishu `fieldList`,
 * DingTalk `TableField`, WeCom `Table`) as rows of column label → value. Values are the vendor's text as given.
 */
export interface NormalizedForm {
  fields: Record<string, string>;
  tables: Record<string, Array<Record<string, string>>>;
}

export interface ApprovalInstance {
  vendor: OaVendor;
  instanceId: string;
  status: OaInstanceStatus;
  form: NormalizedForm;
  /** When the instance was approved (ISO 8601), if the vendor says. */
  approvedAt: string | undefined;
}

/**
 * Reads one instance. A failure is thrown as `OaApiError` (domain/errors.ts), which the
 * classification table retries (5xx, timeouts, 429 with its Retry-After) or not (401/403 after
 * one token refresh, 404, a malformed answer).
 */
export interface ApprovalReader {
  vendor: OaVendor;
  readInstance(instanceId: string): Promise<ApprovalInstance>;
}
