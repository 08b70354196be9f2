// The approvals every bench mode sends: distinct approval numbers, two lines over the bench's SKUs,
// signed as the OA signs its webhook (domain-node/signature.ts).
import { signBody } from '../../domain-node/signature.js';

/** The stock the bench seeds and orders from. */
export const SKUS = Array.from({ length: 200 }, (_, index) => `BENCH-${String(index).padStart(3, '0')}`);

export function approvalBody(approvalNo: string) {
  const first = SKUS[Math.floor(Math.random() * SKUS.length)] as string;
  let second = SKUS[Math.floor(Math.random() * SKUS.length)] as string;
  if (second === first) second = SKUS[(SKUS.indexOf(first) + 1) % SKUS.length] as string;
  return {
    approvalNo,
    operation: 'MAIN' as const,
    approvedAt: new Date().toISOString(),
    order: {
      customerId: `CUST-${approvalNo.slice(-3)}`,
      currency: 'CNY',
      lines: [
        { sku: first, quantity: 1, unitPrice: '10.00' },
        { sku: second, quantity: 2, unitPrice: '2.50' },
      ],
    },
  };
}

/** The webhook's headers for `payload`, signed now: a resend is signed again, its body unchanged. */
export function signedHeaders(secret: string, payload: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return {
    'content-type': 'application/json',
    'x-oa-timestamp': timestamp,
    'x-oa-signature': signBody(secret, timestamp, payload),
  };
}
