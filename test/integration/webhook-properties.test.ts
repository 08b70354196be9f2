// The webhook over bodies nobody wrote by hand, signed as the OA side signs them, with or without a
// `Prefer` header of any shape: whatever the body and the header, the answer is a refusal the sender
// can act on (400) or the contract's own answers (201, 202, 200, 422), never a 5xx.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { anyBody, validBody } from '../../tools/harness/approval-arbitraries.js';
import {
  createSku,
  postApproval,
  startTestService,
  type TestService,
  uniqueApprovalNo,
} from '../../tools/harness/service.js';

const EXPECTED = new Set([400, 200, 201, 202, 422]);

/** A `Prefer` header as senders write it, well or badly: waits of any sign and form, other preferences, noise. */
const anyPrefer = fc.option(
  fc.oneof(
    fc.stringMatching(/^[ -~]{0,40}$/),
    fc.integer({ min: -3, max: 3 }).map((seconds) => `wait=${seconds}`),
    fc.constantFrom('wait=abc', 'wait=', 'wait', 'wait=1.5', 'wait="2"', 'respond-async, wait=1', 'return=minimal'),
    fc
      .array(fc.constantFrom('wait=1', 'wait=x', 'respond-async', 'handling=strict', ';', ',', '"', '='), {
        maxLength: 5,
      })
      .map((parts) => parts.join(', ')),
  ),
  { nil: undefined },
);

describe('OA webhook over generated bodies', () => {
  let service: TestService;
  let sku: string;

  before(async () => {
    service = await startTestService();
    sku = await createSku(service.prisma, 1_000_000);
  });
  after(() => service.stop());

  it('answers only 400, 200, 201, 202 or 422 to any signed JSON body and any Prefer header, never a 5xx', async () => {
    const base = validBody(uniqueApprovalNo('PROP'), sku);
    await fc.assert(
      fc.asyncProperty(anyBody(base), anyPrefer, async (body, prefer) => {
        // fc.anything() may hold values JSON has no form for; the webhook only ever sees JSON.
        const payload = JSON.stringify(body) ?? 'null';
        const response = await postApproval(service, payload, prefer === undefined ? {} : { prefer });
        assert.ok(
          EXPECTED.has(response.statusCode),
          `${response.statusCode} ${response.body} for ${payload.slice(0, 300)} with Prefer ${JSON.stringify(prefer)}`,
        );
        if (response.statusCode === 201) assert.ok(prefer !== undefined, 'a 201 only when asked to wait');
        if (response.statusCode === 400) {
          const problem = response.json<{ errors?: { pointer: string }[] }>();
          assert.ok((problem.errors ?? []).length > 0, 'a 400 names what is wrong');
        }
      }),
      { numRuns: 300 },
    );
  });
});
