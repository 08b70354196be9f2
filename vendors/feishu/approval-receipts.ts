// Feishu's receipts (vendors/approval-receipts.ts): the order number as a comment on the approval
// instance (`POST /open-apis/approval/v4/instances/:instance_id/comments`), posted as the user
// FEISHU_RECEIPT_USER_ID names. The API takes no idempotency key, so the instance's comments are
// read first (`GET` on the same path, a page at a time) and a comment that already carries the
// receipt's key is taken as the receipt: an attempt whose post landed but whose answer or record
// was lost posts no second comment.
import { isReceiptOf, receiptText } from '../../domain/approval-receipts.js';
import type { ApprovalReceipt, ApprovalReceiptPoster, PostedReceipt } from '../approval-receipts.js';
import { exchange } from '../oa-http.js';
import { readWithOneRefresh } from '../token-cache.js';
import { createFeishuTenantTokens, type FeishuAppOptions, feishuFailure, judgeFeishuAnswer } from './tenant-token.js';

export interface FeishuReceiptsOptions extends FeishuAppOptions {
  /** FEISHU_RECEIPT_USER_ID: the open id the comments are posted as. */
  userId: string;
}

/** Comments read per page, Feishu's most. */
const PAGE_SIZE = 100;
/**
 * Pages read before giving up the look (a receipt is then not posted: the attempt fails, and is
 * retried). Bounds an attempt's time: its requests end inside the activity's start-to-close.
 */
const MAX_PAGES = 10;

/** A comment's text: its content is a JSON string carrying `text`. */
function commentText(content: unknown): string {
  if (typeof content !== 'string') return '';
  try {
    const text = (JSON.parse(content) as { text?: unknown } | null)?.text;
    return typeof text === 'string' ? text : '';
  } catch {
    return '';
  }
}

export function feishuApprovalReceipts(options: FeishuReceiptsOptions): ApprovalReceiptPoster {
  const tokens = createFeishuTenantTokens(options);
  const commentsUrl = (instanceId: string) => {
    const url = new URL(`/open-apis/approval/v4/instances/${encodeURIComponent(instanceId)}/comments`, options.baseUrl);
    url.searchParams.set('user_id_type', 'open_id');
    url.searchParams.set('user_id', options.userId);
    return url;
  };
  const call = (method: 'GET' | 'POST', url: URL, body: unknown, what: string) =>
    readWithOneRefresh(tokens, async (token) =>
      judgeFeishuAnswer(
        await exchange(
          'feishu',
          url,
          { method, headers: { authorization: `Bearer ${token}` }, ...(method === 'POST' ? { body } : {}) },
          options.timeoutMs,
        ),
        what,
      ),
    );

  /** The id of the instance's comment that carries the receipt of `receipt`'s key, if one does. */
  async function findPosted(receipt: ApprovalReceipt): Promise<string | undefined> {
    let pageToken: string | undefined;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const url = commentsUrl(receipt.instanceId);
      url.searchParams.set('page_size', String(PAGE_SIZE));
      if (pageToken) url.searchParams.set('page_token', pageToken);
      const data = await call('GET', url, undefined, `read the comments of ${receipt.idempotencyKey}'s approval`);
      const comments = Array.isArray(data.comments) ? (data.comments as { id?: unknown; content?: unknown }[]) : [];
      const posted = comments.find((comment) => isReceiptOf(commentText(comment.content), receipt.idempotencyKey));
      if (posted) return typeof posted.id === 'string' ? posted.id : '';
      // Paged as the SDK's listWithIterator reads it: `has_more`, then `page_token`.
      if (data.has_more !== true || typeof data.page_token !== 'string' || data.page_token.length === 0)
        return undefined;
      pageToken = data.page_token;
    }
    throw feishuFailure(
      undefined,
      undefined,
      `read the comments of ${receipt.idempotencyKey}'s approval: more than ${MAX_PAGES * PAGE_SIZE} comments`,
    );
  }

  return {
    async post(receipt): Promise<PostedReceipt> {
      const found = await findPosted(receipt);
      if (found !== undefined) return { postedId: found || undefined, found: true };
      const data = await call(
        'POST',
        commentsUrl(receipt.instanceId),
        { content: JSON.stringify({ text: receiptText(receipt) }) },
        `post the receipt of ${receipt.idempotencyKey}`,
      );
      return { postedId: typeof data.comment_id === 'string' ? data.comment_id : undefined, found: false };
    },
  };
}
