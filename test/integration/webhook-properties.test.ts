// The webhook over bodies nobody wrote by hand, signed as the OA side signs them: whatever the body,
// the answer is a refusal the sender can act on (400) or the contract's own answers (202, 200, 422),
// never a 5xx.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { anyBody, validBody } from '../support/approval-arbitraries.js';
import { createSku, postApproval, startTestService, type TestService, uniqueApprovalNo } from '../support/service.js';

const EXPECTED = new Set([400, 200, 202, 422]);

describe('OA webhook over generated bodies', () => {
  let service: TestService;
  let sku: string;

  before(async () => {
    service = await startTestService();
    sku = await createSku(service.prisma, 1_000_000);
  });
  after(() => service.stop());

  it('answers only 400, 200, 202 or 422 to any signed JSON body, never a 5xx', async () => {
    const base = validBody(uniqueApprovalNo('PROP'), sku);
    await fc.assert(
      fc.asyncProperty(anyBody(base), async (body) => {
        // fc.anything() may hold values JSON has no form for; the webhook only ever sees JSON.
        const payload = JSON.stringify(body) ?? 'null';
        const response = await postApproval(service, payload);
        assert.ok(
          EXPECTED.has(response.statusCode),
          `${response.statusCode} ${response.body} for ${payload.slice(0, 300)}`,
        );
        if (response.statusCode === 400) {
          const problem = response.json<{ errors?: { pointer: string }[] }>();
          assert.ok((problem.errors ?? []).length > 0, 'a 400 names what is wrong');
        }
      }),
      { numRuns: 300 },
    );
  });
});
