import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseApproval } from '../../../domain/order-input.js';

const valid = () => ({
  approvalNo: 'AP-2026-0001',
  operation: 'MAIN',
  approvedAt: '2026-11-29T10:00:00+08:00',
  order: { customerId: 'CUST-1', currency: 'CNY', lines: [{ sku: 'SKU-APPLE', quantity: 2, unitPrice: '12.50' }] },
});

function pointersOf(body: unknown): string[] {
  const result = parseApproval(body);
  assert.equal(result.ok, false, 'expected the body to be refused');
  return result.ok ? [] : result.errors.map((error) => error.pointer);
}

describe('approval input', () => {
  it('accepts a well-formed approval', () => {
    const result = parseApproval(valid());
    assert.equal(result.ok, true);
  });

  it('refuses an approval number with full-width characters, spaces or other non-ASCII', () => {
    for (const approvalNo of ['ＡＰ-2026', 'AP-2026 ', ' AP-2026', 'AP—2026', '审批-1']) {
      assert.deepEqual(pointersOf({ ...valid(), approvalNo }), ['/approvalNo'], approvalNo);
    }
  });

  it('refuses unknown fields anywhere, naming them', () => {
    const body = valid() as Record<string, unknown>;
    body.idempotencyKey = 'APPROVAL:X:MAIN';
    assert.deepEqual(pointersOf(body), ['/idempotencyKey']);
    const lineExtra = valid();
    (lineExtra.order.lines[0] as Record<string, unknown>).discount = '1';
    assert.deepEqual(pointersOf(lineExtra), ['/order/lines/0/discount']);
  });

  it('points at the exact bad field of a line', () => {
    const body = valid();
    body.order.lines[0]!.quantity = 0;
    assert.deepEqual(pointersOf(body), ['/order/lines/0/quantity']);
  });

  it('refuses prices sent as numbers: money is a decimal string', () => {
    const body = valid() as unknown as { order: { lines: { unitPrice: unknown }[] } };
    body.order.lines[0]!.unitPrice = 12.5;
    assert.deepEqual(pointersOf(body), ['/order/lines/0/unitPrice']);
  });

  it('refuses a malformed unit price as a field error, never by throwing', () => {
    for (const unitPrice of ['12,50', '1e3', '-1', '', '1.23456', ' 1.00', '1.00 ', '０.５', '.5', '1.', '+1']) {
      const body = valid();
      body.order.lines[0]!.unitPrice = unitPrice;
      assert.deepEqual(pointersOf(body), ['/order/lines/0/unitPrice'], JSON.stringify(unitPrice));
    }
  });

  it('refuses a quantity that is not a whole number in range without adding a total error', () => {
    for (const quantity of [1e300, 2 ** 53, 1.5, -1, Number.MAX_VALUE]) {
      const body = valid();
      body.order.lines[0]!.quantity = quantity;
      assert.deepEqual([...new Set(pointersOf(body))], ['/order/lines/0/quantity'], String(quantity));
    }
  });

  it('refuses an order that is not an object and lines that are not an array, naming them', () => {
    assert.deepEqual(pointersOf({ ...valid(), order: [] }), ['/order']);
    assert.deepEqual(pointersOf({ ...valid(), order: { ...valid().order, lines: 'x' } }), ['/order/lines']);
    assert.deepEqual(pointersOf({ ...valid(), order: { ...valid().order, lines: [null] } }), ['/order/lines/0']);
    assert.deepEqual(pointersOf(null), ['']);
  });

  it('refuses an approvedAt without an offset, an unknown operation and a lowercase currency', () => {
    assert.deepEqual(pointersOf({ ...valid(), approvedAt: '2026-11-29T10:00:00' }), ['/approvedAt']);
    assert.deepEqual(pointersOf({ ...valid(), operation: 'REFUND' }), ['/operation']);
    assert.deepEqual(pointersOf({ ...valid(), order: { ...valid().order, currency: 'cny' } }), ['/order/currency']);
  });

  it('refuses an order with no lines or more than 100', () => {
    assert.deepEqual(pointersOf({ ...valid(), order: { ...valid().order, lines: [] } }), ['/order/lines']);
    const many = Array.from({ length: 101 }, (_, index) => ({ sku: `S${index}`, quantity: 1, unitPrice: '1' }));
    assert.deepEqual(pointersOf({ ...valid(), order: { ...valid().order, lines: many } }), ['/order/lines']);
  });

  it('refuses a total that would not fit NUMERIC(18,4)', () => {
    const lines = Array.from({ length: 100 }, (_, index) => ({
      sku: `S${index}`,
      quantity: 1_000_000,
      unitPrice: '999999999999.9999',
    }));
    const result = parseApproval({ ...valid(), order: { ...valid().order, lines } });
    assert.equal(result.ok, false);
    assert.match(JSON.stringify(result), /exceeds/);
  });
});
