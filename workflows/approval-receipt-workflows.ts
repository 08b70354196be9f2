// The receipts as workflows. The scan, run by a schedule every minute while some vendor takes
// receipts, starts one receipt workflow per approval whose order was written without a receipt
// recorded. A receipt workflow posts it — the poster looks for one posted before, so a retry after
// a lost answer or a killed worker posts no second one — retried as the failure is classified; a
// receipt that cannot be posted is recorded as failed (listed by `orders-cli receipts`, counted)
// and the order is never touched.
import { ActivityFailure, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import { ACTIVITY_TIMEOUT } from '../domain/error-classification.js';
import type * as activities from '../activities/approval-receipts.js';
import type { ApprovalReceipt } from '../domain/approval-receipts.js';
import type { ApprovalReceiptResult } from './definitions.js';

type Activities = ReturnType<typeof activities.createApprovalReceiptActivities>;

const { startApprovalReceipts } = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 3, initialInterval: '10 seconds' },
  summary: 'start a receipt workflow for every approval whose order has no receipt yet',
});
// Three and a half hours of retries ride out a vendor's outage, and end inside WeCom's 4-hour
// duplicate check (vendors/wecom/approval-receipts.ts); past them, the receipt is listed as failed. An
// attempt's requests are bounded (vendors/registry.ts: 10 s each; a look reads at most 10 pages),
// so one attempt has always ended before its 5 minutes: no retry runs beside a slow attempt, and
// none posts while another's post is still under way.
const { postApprovalReceipt } = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  scheduleToCloseTimeout: '210 minutes',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
  summary: 'write the order number into its approval, unless it carries it already',
});
const { recordApprovalReceiptFailure } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

export async function approvalReceiptScanWorkflow(): Promise<{ pending: number; started: number }> {
  return startApprovalReceipts();
}

/**
 * `<error class>: <message>` of the failure the last attempt ended with — also when the retries ran
 * out of time, where the server gives that failure as the timeout's cause.
 */
function recordedFailure(error: ActivityFailure): string {
  const cause = error.cause;
  if (cause instanceof ApplicationFailure) return `${cause.type ?? 'Error'}: ${cause.message}`;
  if (cause instanceof TimeoutFailure) {
    const last = cause.cause;
    if (last instanceof ApplicationFailure) return `${last.type ?? 'Error'}: ${last.message}`;
    return `${ACTIVITY_TIMEOUT}: the attempts ran out of time (${cause.timeoutType ?? 'timeout'})`;
  }
  return `${cause?.name ?? 'ActivityFailure'}: ${cause?.message ?? error.message}`;
}

export async function approvalReceiptWorkflow(receipt: ApprovalReceipt): Promise<ApprovalReceiptResult> {
  try {
    const posted = await postApprovalReceipt(receipt);
    return { posted: true, found: posted.found };
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    const failure = recordedFailure(error);
    await recordApprovalReceiptFailure(receipt, failure);
    return { posted: false, failure };
  }
}
