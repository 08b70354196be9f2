// What the decision card tests share: a key that waits for a person, made through the real stack,
// and one run of the scan that starts the cards' workflows.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { idempotencyKeyFor } from '../../domain/idempotency-key.js';
import { listOrdersAwaitingDecision } from '../../submission/operator-decisions/awaiting.js';
import { decisionCardScanWorkflow } from '../../workflows/decision-card-workflows.js';
import {
  approval,
  createSku,
  eventually,
  postApproval,
  statusReaches,
  type TestService,
  uniqueApprovalNo,
} from './service.js';

/** A key whose write failed for good (one in stock, two ordered): it waits in COMPENSATING for a person, listed. */
export async function keyAwaitingCompensation(service: TestService, prefix = 'CARD'): Promise<string> {
  const approvalNo = uniqueApprovalNo(prefix);
  const sku = await createSku(service.prisma, 1);
  assert.equal((await postApproval(service, approval(approvalNo, sku))).statusCode, 202);
  const key = idempotencyKeyFor(approvalNo, 'MAIN');
  await statusReaches(service, key, 'COMPENSATING');
  // Listed once its compensation waits for a decision.
  await eventually(`${key} in the awaiting list`, async () =>
    (await listOrdersAwaitingDecision(service.prisma, 500)).find((entry) => entry.idempotencyKey === key),
  );
  return key;
}

/** One run of the scan: a card workflow started for every waiting key's episode, at every vendor with cards. */
export function scanForDecisionCards(service: TestService): Promise<{ waiting: number; started: number }> {
  return service.temporal.workflow.execute(decisionCardScanWorkflow, {
    taskQueue: service.config.temporal.taskQueue,
    workflowId: `card-scan-${randomUUID()}`,
  });
}
