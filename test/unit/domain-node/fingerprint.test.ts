import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalOrder, describeDifferences, totalAmountOf } from '../../../domain/canonical-order.js';
import { fingerprintOf } from '../../../domain-node/fingerprint.js';

const order = {
  customerId: 'CUST-1',
  currency: 'CNY',
  lines: [
    { sku: 'SKU-B', quantity: 1, unitPrice: '10.0' },
    { sku: 'SKU-A', quantity: 2, unitPrice: '3.5' },
  ],
};
const fingerprint = (value: typeof order) => fingerprintOf(canonicalOrder(value));

describe('order fingerprint', () => {
  it('treats "10.0" and "10.00" as the same price', () => {
    const other = { ...order, lines: [{ ...order.lines[0]!, unitPrice: '10.00' }, order.lines[1]!] };
    assert.equal(fingerprint(other), fingerprint(order));
  });

  it('treats reordered lines as the same order', () => {
    assert.equal(fingerprint({ ...order, lines: [...order.lines].reverse() }), fingerprint(order));
  });

  it('changes when a quantity, a price, the customer or the currency changes', () => {
    const base = fingerprint(order);
    assert.notEqual(fingerprint({ ...order, lines: [{ ...order.lines[0]!, quantity: 2 }, order.lines[1]!] }), base);
    assert.notEqual(
      fingerprint({ ...order, lines: [{ ...order.lines[0]!, unitPrice: '10.0001' }, order.lines[1]!] }),
      base,
    );
    assert.notEqual(fingerprint({ ...order, customerId: 'CUST-2' }), base);
    assert.notEqual(fingerprint({ ...order, currency: 'USD' }), base);
  });

  it('is a SHA-256 hex digest', () => {
    assert.match(fingerprint(order), /^[0-9a-f]{64}$/);
  });

  it('computes the total exactly in decimal, never in binary floating point', () => {
    const tenths = { customerId: 'C', currency: 'CNY', lines: [{ sku: 'S', quantity: 3, unitPrice: '0.1' }] };
    assert.equal(totalAmountOf(canonicalOrder(tenths)), '0.3000');
    assert.equal(totalAmountOf(canonicalOrder(order)), '17.0000');
  });

  it('names what differs between two orders', () => {
    const other = { ...order, customerId: 'CUST-9', lines: [order.lines[1]!, { ...order.lines[0]!, quantity: 5 }] };
    assert.deepEqual(describeDifferences(canonicalOrder(order), canonicalOrder(other)), [
      'order.customerId',
      'order.lines (sorted) [1].quantity',
    ]);
  });
});
