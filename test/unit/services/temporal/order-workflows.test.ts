// The input a new order run starts with: every new run is told to write its order as a local
// activity, also a resubmit of a run recorded before the local retry threshold was in the input.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { orderStartInput } from '../../../../services/temporal/order-workflows.js';
import { DEFAULT_LOCAL_RETRY_THRESHOLD_MS } from '../../../../workflows/activity-presets.js';
import type { OrderWorkflowInput } from '../../../../workflows/definitions.js';

const policy = {
  maxAttempts: 3,
  initialIntervalMs: 100,
  maxIntervalMs: 1000,
  backoffCoefficient: 2,
  startToCloseMs: 4000,
  scheduleToCloseMs: 30000,
  decisionTimeoutMs: 120000,
};
const order: OrderWorkflowInput = {
  idempotencyKey: 'APPROVAL:A-1:MAIN',
  approvalNo: 'A-1',
  operation: 'MAIN',
  approvedAt: '2026-12-07T00:00:00.000Z',
  fingerprint: 'f'.repeat(64),
  order: { customerId: 'C-1', currency: 'CNY', lines: [{ sku: 'S-1', quantity: 1, unitPrice: '1.00' }] },
  totalAmount: '1.00',
  policy: { ...policy, localRetryThresholdMs: 200 },
};

describe('the input a new order run starts with', () => {
  it('keeps the local retry threshold the input carries', () => {
    assert.deepEqual(orderStartInput(order), order);
  });

  it('gives an input from before the threshold the default one, and changes nothing else', () => {
    const recordedBefore = { ...order, policy };
    assert.deepEqual(orderStartInput(recordedBefore), {
      ...order,
      policy: { ...policy, localRetryThresholdMs: DEFAULT_LOCAL_RETRY_THRESHOLD_MS },
    });
    assert.equal('localRetryThresholdMs' in recordedBefore.policy, false, 'the caller’s input is left as it was');
  });
});
