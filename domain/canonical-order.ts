// The canonical order: customer, currency and lines sorted by sku then unit price, prices at
// scale 4 — so "10.0" equals "10.00" and reordered lines are the same order. `approvedAt` is
// deliberately not part of it: an OA system may re-stamp a redelivery. Its digest is in
// domain-node/fingerprint.ts; this half stays importable by workflow code.
import type { Approval } from './order-input.js';
import { formatMoneyUnits, normaliseMoney, toMoneyUnits } from './money.js';

export interface CanonicalLine {
  sku: string;
  quantity: number;
  unitPrice: string;
}

export interface CanonicalOrder {
  customerId: string;
  currency: string;
  lines: CanonicalLine[];
}

export function canonicalOrder(order: Approval['order']): CanonicalOrder {
  const lines = order.lines
    .map((line) => ({ sku: line.sku, quantity: line.quantity, unitPrice: normaliseMoney(line.unitPrice) }))
    .sort(
      (a, b) =>
        compareAscii(a.sku, b.sku) ||
        compareBigInt(toMoneyUnits(a.unitPrice), toMoneyUnits(b.unitPrice)) ||
        a.quantity - b.quantity,
    );
  return { customerId: order.customerId, currency: order.currency, lines };
}

export function totalAmountOf(order: CanonicalOrder): string {
  const units = order.lines.reduce((sum, line) => sum + BigInt(line.quantity) * toMoneyUnits(line.unitPrice), 0n);
  return formatMoneyUnits(units);
}

/** Names what differs between the stored order and a new one, for the 422 conflict answer. */
export function describeDifferences(stored: CanonicalOrder, incoming: CanonicalOrder): string[] {
  const differences: string[] = [];
  if (stored.customerId !== incoming.customerId) differences.push('order.customerId');
  if (stored.currency !== incoming.currency) differences.push('order.currency');
  if (stored.lines.length !== incoming.lines.length) {
    differences.push('order.lines (number of lines)');
  } else {
    stored.lines.forEach((line, index) => {
      const other = incoming.lines[index];
      if (!other) return;
      for (const field of ['sku', 'quantity', 'unitPrice'] as const) {
        if (line[field] !== other[field]) differences.push(`order.lines (sorted) [${index}].${field}`);
      }
    });
  }
  return differences;
}

function compareAscii(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareBigInt(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
