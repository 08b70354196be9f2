// DingTalk's receipts (vendors/approval-receipts.ts): the order number as a comment on the approval
// instance (`POST /v1.0/workflow/processInstances/comments`, as the user DINGTALK_RECEIPT_USER_ID
// names). The API takes no idempotency key and answers no comment id, so the instance is read
// first (`GET /v1.0/workflow/processInstances`): a comment is one of its `operationRecords`, its
// text the record's `remark`, and one that carries the receipt's key is taken as the receipt.
import { isReceiptOf, receiptText } from '../../domain/approval-receipts.js';
import type { ApprovalReceiptPoster, PostedReceipt } from '../approval-receipts.js';
import { createDingTalkOpenApi, type DingTalkAppOptions } from './open-api.js';
import { readDingTalkInstance } from './reader.js';

export interface DingTalkReceiptsOptions extends DingTalkAppOptions {
  /** DINGTALK_RECEIPT_USER_ID: the user the comments are posted as. */
  userId: string;
}

export function dingtalkApprovalReceipts(options: DingTalkReceiptsOptions): ApprovalReceiptPoster {
  const api = createDingTalkOpenApi(options);
  return {
    async post(receipt): Promise<PostedReceipt> {
      const instance = await readDingTalkInstance(
        api,
        receipt.instanceId,
        `read the comments of ${receipt.idempotencyKey}'s approval`,
      );
      const records = Array.isArray(instance.operationRecords)
        ? (instance.operationRecords as { remark?: unknown }[])
        : [];
      if (
        records.some(
          (record) => typeof record.remark === 'string' && isReceiptOf(record.remark, receipt.idempotencyKey),
        )
      ) {
        return { postedId: undefined, found: true };
      }
      await api.call(
        'POST',
        '/v1.0/workflow/processInstances/comments',
        { body: { processInstanceId: receipt.instanceId, text: receiptText(receipt), commentUserId: options.userId } },
        `post the receipt of ${receipt.idempotencyKey}`,
      );
      return { postedId: undefined, found: false };
    },
  };
}
