// The receipts' activities in a mocked activity context, the database and the vendor stood in for:
// whatever happens to the attempts before one succeeds — the vendor unreachable, a post that landed
// and whose answer was lost, a worker killed after its post and before its record — an approval
// carries one receipt, recorded and counted once (generated fault sequences). A poster that posts
// without looking first breaks it, and the check finds that. What the receipts do against a real
// stack and the fake Feishu is proven by test/integration/approval-receipts.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import fc from 'fast-check';
import { createApprovalReceiptActivities, type receiptDatabase } from '../../../activities/approval-receipts.js';
import { type ApprovalReceipt, isReceiptOf, receiptText } from '../../../domain/approval-receipts.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import { noProductMetrics } from '../../../services/metrics/product-metrics.js';
import type { ApprovalReceiptPoster } from '../../../vendors/approval-receipts.js';

const RECEIPT: ApprovalReceipt = {
  vendor: 'feishu',
  idempotencyKey: 'APPROVAL:INST-1:MAIN',
  instanceId: 'INST-1',
  orderNo: 'SO-20261206-00000042',
};

/** What can happen to one attempt. */
type Fault = 'none' | 'vendor-down' | 'answer-lost' | 'killed-before-record';
const FAULTS: Fault[] = ['vendor-down', 'answer-lost', 'killed-before-record'];

/** One approval's comments as the vendor holds them; `looks`: whether the poster looks before posting. */
function approvalOf(looks: boolean) {
  const comments: string[] = [];
  let fault: Fault = 'none';
  const poster: ApprovalReceiptPoster = {
    post: (receipt) => {
      if (fault === 'vendor-down')
        return Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      const posted = looks ? comments.findIndex((text) => isReceiptOf(text, receipt.idempotencyKey)) : -1;
      if (posted !== -1) return Promise.resolve({ postedId: String(posted), found: true });
      comments.push(receiptText(receipt));
      if (fault === 'answer-lost')
        return Promise.reject(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      return Promise.resolve({ postedId: String(comments.length - 1), found: false });
    },
  };
  return { comments, poster, faultNext: (next: Fault) => void (fault = next), fault: () => fault };
}

/**
 * Runs the receipt's post, one attempt per fault and then one without, as Temporal's retries would
 * (a killed worker's attempt times out, and is retried like a failed one).
 */
async function postThrough(faults: Fault[], looks: boolean) {
  const approval = approvalOf(looks);
  const records: string[] = [];
  const counted: string[] = [];
  const database: typeof receiptDatabase = {
    receiptsToPost: () => Promise.resolve([]),
    recordReceipt: (_db, receipt, settled) => {
      if (approval.fault() === 'killed-before-record') return Promise.reject(new Error('the worker was killed'));
      if (records.includes(receipt.idempotencyKey)) return Promise.resolve(false);
      records.push(receipt.idempotencyKey);
      assert.equal(settled.status, 'POSTED');
      return Promise.resolve(true);
    },
  };
  const activities = createApprovalReceiptActivities({
    prisma: {} as PrismaClient,
    temporal: {} as Client,
    taskQueue: 'receipts',
    posters: new Map([['feishu', approval.poster]]),
    metrics: { ...noProductMetrics(), receiptSettled: (vendor, result) => counted.push(`${vendor} ${result}`) },
    database,
  });
  const environment = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
  for (const fault of [...faults, 'none' as const]) {
    approval.faultNext(fault);
    try {
      await environment.run(activities.postApprovalReceipt, RECEIPT);
      break;
    } catch {
      // the next attempt, as the retry policy would start it
    }
  }
  return { comments: approval.comments, records, counted };
}

describe('postApprovalReceipt', () => {
  it('leaves one receipt on the approval, recorded and counted once, whatever befell the attempts before', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...FAULTS), { maxLength: 6 }), async (faults) => {
        const { comments, records, counted } = await postThrough(faults, true);
        assert.deepEqual(comments, [receiptText(RECEIPT)]);
        assert.deepEqual(records, [RECEIPT.idempotencyKey]);
        assert.deepEqual(counted, ['feishu posted']);
      }),
      { numRuns: 200 },
    );
  });

  it('is broken by a poster that posts without looking first: the check finds a second comment', async () => {
    const found = await fc.check(
      fc.asyncProperty(fc.array(fc.constantFrom(...FAULTS), { maxLength: 6 }), async (faults) => {
        const { comments } = await postThrough(faults, false);
        return comments.length === 1;
      }),
      { numRuns: 200 },
    );
    assert.equal(found.failed, true, 'the check fails for the broken poster');
    assert.ok(
      (found.counterexample?.[0] ?? []).some((fault) => fault === 'answer-lost' || fault === 'killed-before-record'),
    );
  });

  it('counts each vendor’s receipts at 0 from the start', () => {
    const atZero: string[][] = [];
    createApprovalReceiptActivities({
      prisma: {} as PrismaClient,
      temporal: {} as Client,
      taskQueue: 'receipts',
      posters: new Map([['feishu', approvalOf(true).poster]]),
      metrics: { ...noProductMetrics(), receiptsAtZero: (vendors) => void atZero.push([...vendors]) },
    });
    assert.deepEqual(atZero, [['feishu']]);
  });
});
