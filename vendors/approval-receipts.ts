// What a vendor does with an approval's receipt (domain/approval-receipts.ts): writes the order
// number into the approval once. None of the vendors' comment or message APIs takes an idempotency
// key, so each poster looks first for a receipt it posted before — on the instance's comments, by
// the key in its text — and posts only when there is none; the worker's record per key
// (approval_receipt) keeps a settled receipt from being looked at again. A vendor that can post
// receipts gives an `ApprovalReceiptPoster` (vendors/oa-vendor.ts).
export type { ApprovalReceipt } from '../domain/approval-receipts.js';
import type { ApprovalReceipt } from '../domain/approval-receipts.js';

/** What was posted: the vendor's id of the comment or message, and whether an earlier one was found. */
export interface PostedReceipt {
  postedId: string | undefined;
  /** True when the approval already carried this receipt (posted by an earlier attempt). */
  found: boolean;
}

export interface ApprovalReceiptPoster {
  /** Writes `receipt` into its approval, unless the approval carries it already. */
  post(receipt: ApprovalReceipt): Promise<PostedReceipt>;
}
