import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  compensationWorkflowIdFor,
  idempotencyKeyFor,
  idempotencyKeyOfWorkflowId,
  isKeySourceConflict,
  orderWorkflowIdFor,
  parseIdempotencyKey,
} from '../../../domain/idempotency-key.js';
import { deliveryWorkflowIdFor } from '../../../workflows/definitions.js';

describe('idempotency key', () => {
  it('is built from the approval number and the operation, the same every time', () => {
    assert.equal(idempotencyKeyFor('AP-2026-0001', 'MAIN'), 'APPROVAL:AP-2026-0001:MAIN');
    assert.equal(idempotencyKeyFor('AP-2026-0001', 'MAIN'), idempotencyKeyFor('AP-2026-0001', 'MAIN'));
  });

  it('gives MAIN and SUPPLEMENT of one approval different keys', () => {
    assert.notEqual(idempotencyKeyFor('AP-1', 'MAIN'), idempotencyKeyFor('AP-1', 'SUPPLEMENT'));
  });

  it('is case-sensitive: AP-1 and ap-1 are different approvals', () => {
    assert.notEqual(idempotencyKeyFor('AP-1', 'MAIN'), idempotencyKeyFor('ap-1', 'MAIN'));
  });

  it('refuses approval numbers that are not plain ASCII instead of guessing', () => {
    for (const bad of ['ＡＰ-1', 'AP-1 ', ' AP-1', 'AP 1', 'AP-ü', '', '-AP', 'A'.repeat(65)]) {
      assert.throws(() => idempotencyKeyFor(bad, 'MAIN'), RangeError, bad);
    }
  });

  it('fits the VARCHAR(128) column with room to spare', () => {
    assert.ok(idempotencyKeyFor('A'.repeat(64), 'SUPPLEMENT').length <= 128);
  });

  it('reads a key back into its parts and rejects anything else', () => {
    assert.deepEqual(parseIdempotencyKey('APPROVAL:AP-1:SUPPLEMENT'), { approvalNo: 'AP-1', operation: 'SUPPLEMENT' });
    assert.equal(parseIdempotencyKey('APPROVAL:AP-1:OTHER'), undefined);
    assert.equal(parseIdempotencyKey('AP-1:MAIN'), undefined);
  });

  it('derives both workflow ids from the key', () => {
    const key = idempotencyKeyFor('AP-7', 'MAIN');
    assert.equal(orderWorkflowIdFor(key), 'order-APPROVAL:AP-7:MAIN');
    assert.equal(compensationWorkflowIdFor(key), 'compensation-APPROVAL:AP-7:MAIN');
  });

  it('is read back from the id of every workflow derived from it, and from no other id', () => {
    const key = idempotencyKeyFor('AP-7.b_c', 'SUPPLEMENT');
    for (const workflowId of [orderWorkflowIdFor(key), compensationWorkflowIdFor(key), deliveryWorkflowIdFor(key)]) {
      assert.equal(idempotencyKeyOfWorkflowId(workflowId), key, workflowId);
    }
    for (const workflowId of ['duplicate-scan', key, '-APPROVAL:AP-7:MAIN', 'order-APPROVAL:AP 7:MAIN', 'order-']) {
      assert.equal(idempotencyKeyOfWorkflowId(workflowId), undefined, workflowId);
    }
  });

  it('belongs to the door that claimed it: another door is refused, but for the webhook and MCP with the same order', () => {
    // The doors are open: a fourth vendor's is a door like the others.
    const door = fc.constantFrom('webhook', 'mcp', 'feishu', 'dingtalk', 'wecom', 'acme');
    fc.assert(
      fc.property(door, door, fc.boolean(), (claimedBy, delivered, sameOrder) => {
        const namesItsOrder = (source: string) => source === 'webhook' || source === 'mcp';
        const expected =
          claimedBy !== delivered && !(sameOrder && namesItsOrder(claimedBy) && namesItsOrder(delivered));
        assert.equal(isKeySourceConflict(claimedBy, delivered, sameOrder), expected);
      }),
    );
    assert.equal(isKeySourceConflict('webhook', 'wecom', true), true, 'a squatted WeCom approval number');
    assert.equal(isKeySourceConflict('wecom', 'webhook', true), true, 'a right guess of the form still takes nothing');
    assert.equal(isKeySourceConflict('webhook', 'mcp', true), false, 'one approval through two order-naming doors');
    assert.equal(isKeySourceConflict('mcp', 'webhook', false), true);
    assert.equal(isKeySourceConflict('feishu', 'feishu', false), false, "a vendor's redelivery");
  });
});
