// The receipt of an approval's order: once its order is written, the approval it came from says
// which order it became — a comment on the instance (Feishu, DingTalk) or, WeCom having no
// approval comment, a message to its applicant. What a receipt says is the same for every vendor; the key in its text is also
// how a receipt is recognised on the approval, so that one posted before its record was written is
// found rather than posted again. Pure and importable by workflow code.
import type { OaVendor } from './oa-approval.js';

/** One approval's receipt: its vendor and instance, the key its order was written under, the order. */
export interface ApprovalReceipt {
  vendor: OaVendor;
  idempotencyKey: string;
  instanceId: string;
  orderNo: string;
}

/** How a receipt settled: posted (the vendor's id of the comment or message, when it gives one), or failed. */
export type ReceiptSettlement =
  | { status: 'POSTED'; postedId: string | undefined }
  | { status: 'FAILED'; failure: string };

/** The receipt's workflow, one per key: a second start is refused by Temporal. */
export function approvalReceiptWorkflowId(idempotencyKey: string): string {
  return `approval-receipt-${idempotencyKey}`;
}

/** The part of a receipt's text that names its key: what a posted receipt is recognised by. */
export function receiptMark(idempotencyKey: string): string {
  return `[${idempotencyKey}]`;
}

/** What the approver reads. */
export function receiptText(receipt: Pick<ApprovalReceipt, 'idempotencyKey' | 'orderNo'>): string {
  return `Order ${receipt.orderNo} was written for this approval ${receiptMark(receipt.idempotencyKey)}`;
}

/** Whether `text` (a comment's, a message's) is the receipt of `idempotencyKey`. */
export function isReceiptOf(text: string, idempotencyKey: string): boolean {
  return text.includes(receiptMark(idempotencyKey));
}
