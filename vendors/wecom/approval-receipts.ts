// WeCom's receipts (vendors/approval-receipts.ts). A WeCom approval takes no comment from an app, so
// its applicant — the approval's `applyer`, read with `POST /cgi-bin/oa/getapprovaldetail` — gets
// the order number as a text message from the app (`POST /cgi-bin/message/send`, WECOM_AGENT_ID).
// Sent messages cannot be read back, so the look is WeCom's own duplicate check: the same message
// to the same person from the same app within `duplicate_check_interval` (at most 4 hours) is not
// sent again. The receipt's retries end inside that window (workflows/approval-receipt-workflows.ts).
import { OaApiError } from '../../domain/errors.js';
import { receiptText } from '../../domain/approval-receipts.js';
import type { ApprovalReceiptPoster, PostedReceipt } from '../approval-receipts.js';
import { readWeComApproval } from './reader.js';
import { createWeComServerApi, type WeComAppOptions } from './server-api.js';

/** WeCom's longest duplicate check, in seconds: a message repeated within it is not sent again. */
export const WECOM_DUPLICATE_CHECK_SECONDS = 4 * 3_600;

export interface WeComReceiptsOptions extends WeComAppOptions {
  /** WECOM_AGENT_ID: the app the messages are sent as. */
  agentId: number;
}

export function wecomApprovalReceipts(options: WeComReceiptsOptions): ApprovalReceiptPoster {
  const api = createWeComServerApi(options);
  return {
    async post(receipt): Promise<PostedReceipt> {
      const info = await readWeComApproval(api, receipt.instanceId, `read the applicant of ${receipt.idempotencyKey}`);
      const applicant = (info.applyer as { userid?: unknown } | undefined)?.userid;
      if (typeof applicant !== 'string' || applicant.length === 0) {
        throw new OaApiError('wecom', 400, undefined, `wecom receipt of ${receipt.idempotencyKey}: no applicant`);
      }
      const what = `send the receipt of ${receipt.idempotencyKey}`;
      const sent = await api.call(
        '/cgi-bin/message/send',
        {
          touser: applicant,
          msgtype: 'text',
          agentid: options.agentId,
          text: { content: receiptText(receipt) },
          enable_duplicate_check: 1,
          duplicate_check_interval: WECOM_DUPLICATE_CHECK_SECONDS,
        },
        what,
      );
      // An applicant WeCom does not know (left the company) is named, not sent to: it will not be later.
      if (typeof sent.invaliduser === 'string' && sent.invaliduser.length > 0) {
        throw new OaApiError('wecom', 400, undefined, `wecom ${what}: the applicant is not a member the app reaches`);
      }
      return { postedId: typeof sent.msgid === 'string' ? sent.msgid : undefined, found: false };
    },
  };
}
