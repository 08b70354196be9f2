// The receipts' steps: find the approvals whose orders were written and whose receipt is not yet
// recorded, and start one receipt workflow per key (its id is the key's: a start while one runs, or
// after one completed, is refused by Temporal, so a receipt is taken up once however often the
// scan runs); post a receipt —
// looking first for one posted before — and record it; record a receipt that failed for good. The
// record is written once per key, first settlement standing, and counted when written.
import { Context, log } from '@temporalio/activity';
import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { type ApprovalReceipt, approvalReceiptWorkflowId } from '../domain/approval-receipts.js';
import type { OaVendor } from '../domain/oa-approval.js';
import { receiptsToPost, recordReceipt } from '../services/db/approval-receipts.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { ProductMetrics } from '../services/metrics/product-metrics.js';
import type { ApprovalReceiptPoster } from '../vendors/approval-receipts.js';
import { toActivityFailure } from './activity-failure.js';

/**
 * The most receipts one scan takes up: the newest orders first — those still retrying have their
 * workflows already — the rest at the next scan.
 */
const SCAN_LIMIT = 200;
/** How far back a scan looks for orders without a receipt: a worker down this long loses none. */
export const RECEIPT_LOOKBACK_MS = 7 * 24 * 3_600_000;

/** The database steps the receipts take; a unit test stands them in, everything else runs these. */
export const receiptDatabase = { receiptsToPost, recordReceipt };

export function createApprovalReceiptActivities(deps: {
  prisma: PrismaClient;
  temporal: Client;
  taskQueue: string;
  /** The vendors whose approvals get receipts, each with its poster; empty: no receipts. */
  posters: ReadonlyMap<OaVendor, ApprovalReceiptPoster>;
  metrics: ProductMetrics;
  database?: typeof receiptDatabase;
}) {
  const { prisma, temporal, taskQueue, posters, metrics } = deps;
  const database = deps.database ?? receiptDatabase;
  // From the start, so that the first failed receipt is an increase the rules see.
  metrics.receiptsAtZero([...posters.keys()]);

  /** Starts the receipt workflow of every order written without a receipt. Returns how many started. */
  async function startApprovalReceipts(): Promise<{ pending: number; started: number }> {
    if (posters.size === 0) return { pending: 0, started: 0 };
    const pending = await database.receiptsToPost(prisma, {
      vendors: [...posters.keys()],
      since: new Date(Date.now() - RECEIPT_LOOKBACK_MS),
      limit: SCAN_LIMIT,
    });
    let started = 0;
    for (const receipt of pending) {
      const workflowId = approvalReceiptWorkflowId(receipt.idempotencyKey);
      try {
        await temporal.workflow.start('approvalReceiptWorkflow', {
          workflowId,
          taskQueue,
          args: [receipt],
          // A run that ended without a record (terminated, reset) is started again; one that is
          // running, or completed with its record written, is not.
          workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
          staticSummary: `Receipt of order ${receipt.orderNo} in its ${receipt.vendor} approval`,
        });
        started += 1;
      } catch (error) {
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    }
    if (started > 0) log.info('approval receipts started', { started, pending: pending.length });
    return { pending: pending.length, started };
  }

  /**
   * Writes the receipt into its approval, unless the approval carries it already (an earlier
   * attempt posted it and its record was not written), then records it.
   */
  async function postApprovalReceipt(receipt: ApprovalReceipt): Promise<{ postedId?: string; found: boolean }> {
    const poster = posters.get(receipt.vendor);
    // This worker has no receipts for the vendor (its settings changed): a retry on another may.
    if (!poster) throw new Error(`no receipts configured for ${receipt.vendor} on this worker`);
    try {
      const posted = await poster.post(receipt);
      if (await database.recordReceipt(prisma, receipt, { status: 'POSTED', postedId: posted.postedId })) {
        metrics.receiptSettled(receipt.vendor, 'posted');
      }
      return { ...(posted.postedId === undefined ? {} : { postedId: posted.postedId }), found: posted.found };
    } catch (error) {
      // Retried as the classification table says: a refusal the vendor would repeat is not.
      throw toActivityFailure(error, Context.current().info.attempt);
    }
  }

  /** Records a receipt that could not be posted, with its classified cause: listed, counted, the order untouched. */
  async function recordApprovalReceiptFailure(receipt: ApprovalReceipt, failure: string): Promise<void> {
    if (await database.recordReceipt(prisma, receipt, { status: 'FAILED', failure })) {
      metrics.receiptSettled(receipt.vendor, 'failed');
    }
  }

  return { startApprovalReceipts, postApprovalReceipt, recordApprovalReceiptFailure };
}
