// The approval-form activity in a mocked activity context, with the vendor's reader stood in for:
// which instances are no order at all, and how a failed read becomes the failure Temporal acts on.
// A form that maps is then recorded on the key's record in the database: that path is proven by
// test/integration/oa-connectors.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createApprovalFormActivities } from '../../../activities/approval-form.js';
import { OaApiError } from '../../../domain/errors.js';
import type { OaInstanceStatus } from '../../../domain/oa-approval.js';
import { readFormMappingFile } from '../../../services/config/form-mapping-file.js';
import { oaVendorIds } from '../../../vendors/registry.js';
import type { PrismaClient } from '../../../services/db/prisma-client.js';
import type { ApprovalInstance, ApprovalReader } from '../../../vendors/approval-reader.js';
import { testFormOrder, testPolicy } from '../../../tools/harness/workflow-tests.js';

const mappingFile = readFormMappingFile(
  new URL('../../../examples/oa-form-mapping.json', import.meta.url).pathname,
  oaVendorIds(),
);
if (!mappingFile.ok) throw new Error(`the example mapping is invalid: ${mappingFile.problems.join('; ')}`);
const formMapping = mappingFile.mapping;

/** Never reached on these paths: each ends before the mapped order would be recorded. */
const NO_DATABASE = new Proxy(
  {},
  {
    get: () => {
      throw new Error('the database was reached');
    },
  },
) as PrismaClient;

/** A Feishu reader that answers every read with `answer` (an instance, or the error it throws). */
function feishuReader(answer: ApprovalInstance | Error): ApprovalReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    vendor: 'feishu',
    reads,
    readInstance: (instanceId) => {
      reads.push(instanceId);
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
}

function instance(status: OaInstanceStatus, fields: Record<string, string> = {}): ApprovalInstance {
  return {
    vendor: 'feishu',
    instanceId: 'instance-1',
    status,
    form: { fields, tables: {} },
    approvedAt: undefined,
  };
}

/** One attempt of `readApprovalForm`; resolves with the ApplicationFailure it ended in, and the instance it named. */
async function failedRead(reader: ApprovalReader | undefined, attempt = 1) {
  const { readApprovalForm } = createApprovalFormActivities({
    prisma: NO_DATABASE,
    readers: reader ? { feishu: reader } : {},
    formMapping,
  });
  const form = testFormOrder({ policy: testPolicy({ initialIntervalMs: 100, maxIntervalMs: 2_000 }) });
  const context = new MockActivityEnvironment({ attempt }, { logger: new DefaultLogger('ERROR') });
  const failure = await context.run(readApprovalForm, form).then(
    () => assert.fail('the read must fail'),
    (error: unknown) => error,
  );
  assert.ok(failure instanceof ApplicationFailure, `an ApplicationFailure, not ${String(failure)}`);
  return { failure, instanceId: form.formSource.instanceId };
}

describe('reading an order from its approval form', () => {
  it('reads the instance the order names, and refuses one not APPROVED as no order, for compensation at once', async () => {
    for (const status of ['PENDING', 'REJECTED', 'CANCELED'] as const) {
      const reader = feishuReader(instance(status));
      const { failure, instanceId } = await failedRead(reader);
      assert.deepEqual(reader.reads, [instanceId], status);
      assert.equal(failure.type, 'UnmappableForm', status);
      assert.equal(failure.nonRetryable, true, status);
      assert.match(failure.message, new RegExp(`the approval instance is ${status}, not APPROVED`), status);
    }
  });

  it('refuses a form that does not map, naming what is missing, and never retries it', async () => {
    const { failure } = await failedRead(feishuReader(instance('APPROVED', { Remarks: 'no customer, no lines' })));
    assert.equal(failure.type, 'UnmappableForm');
    assert.equal(failure.nonRetryable, true);
    assert.match(failure.message, /does not map to an order: .+/);
  });

  it("retries a read the OA's API could not answer just now, after its Retry-After when it gave one", async () => {
    const { failure: unavailable } = await failedRead(
      feishuReader(new OaApiError('feishu', 503, undefined, 'bad gateway')),
      2,
    );
    assert.equal(unavailable.type, 'OaApiUnavailable');
    assert.equal(unavailable.nonRetryable, false);
    const delay = Number(unavailable.nextRetryDelay);
    assert.ok(delay > 0 && delay <= 2_000, `${delay} ms`);
    assert.equal((unavailable.details?.[0] as { attempt: number }).attempt, 2);

    const { failure: limited } = await failedRead(feishuReader(new OaApiError('feishu', 429, 1_500, 'slow down')));
    assert.equal(limited.type, 'OaApiRateLimited');
    assert.equal(Number(limited.nextRetryDelay), 1_500);
  });

  it("never retries a read the OA's API refused", async () => {
    const { failure } = await failedRead(feishuReader(new OaApiError('feishu', 403, undefined, 'no permission')));
    assert.equal(failure.type, 'OaApiRefused');
    assert.equal(failure.nonRetryable, true);
  });

  it('fails for good on a worker whose connector for the vendor is off', async () => {
    const { failure } = await failedRead(undefined);
    assert.equal(failure.nonRetryable, true);
    assert.match(failure.message, /this worker has no feishu reader or no OA_FORM_MAPPING/);
  });
});
