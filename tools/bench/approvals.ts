// The approvals every bench mode sends: distinct approval numbers, two lines over the bench's SKUs;
// tools/harness/signed-webhook.ts signs them as the OA signs its webhook.

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
