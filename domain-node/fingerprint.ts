// A key reused with a different payload is a conflict, not a success (docs/architecture.md,
// decision 2). The fingerprint is SHA-256 over the canonical order (domain/canonical-order.ts).
import { createHash } from 'node:crypto';
import type { CanonicalOrder } from '../domain/canonical-order.js';

export function fingerprintOf(order: CanonicalOrder): string {
  // Field order is fixed here, not left to object insertion order.
  const text = JSON.stringify([
    order.customerId,
    order.currency,
    order.lines.map((line) => [line.sku, line.quantity, line.unitPrice]),
  ]);
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
