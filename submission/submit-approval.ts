// The doors into the path from an approved document to its one workflow, shared by every entry
// point (the signed OA webhook, the MCP tool, the Feishu, DingTalk and WeCom connectors):
// `submitApproval` and `submitApprovalForm`, the defaults of the options a delivery is taken with
// (the options themselves are in ./start-path-types.ts), and the workflow input it starts. The key
// is computed here from business identifiers — the only place besides domain/idempotency-key.ts
// that touches it — and travels as workflow input. The path itself, phase by phase, is
// ./take-delivery.ts.
import type { Client } from '@temporalio/client';
import type { SubmissionConfig, WritePolicy } from './settings.js';
import { canonicalOrder, totalAmountOf } from '../domain/canonical-order.js';
import { fingerprintOf } from '../domain-node/fingerprint.js';
import { idempotencyKeyFor } from '../domain/idempotency-key.js';
import type { Approval } from '../domain/order-input.js';
import type { IdempotencyRecord } from '../services/db/idempotency-records.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { FormOrderWorkflowInput, OrderWorkflowInput, OrderWorkflowStart } from '../workflows/definitions.js';
import { shedUnderLoad } from './load-shedding.js';
import type {
  ApprovalDelivery,
  DeliveryClaim,
  DeliveryOptions,
  FormDelivery,
  SettledDeliveryOptions,
  StartGuard,
  Submission,
  SubmissionDeps,
} from './start-path-types.js';
import { claimStoreOn } from './claim-store.js';
import { takeDelivery } from './take-delivery.js';
import { isOaVendor, type OaVendor } from '../domain/oa-approval.js';

/**
 * The product's guard: a key whose workflow is known to exist — answered before, marked started, or
 * past RECEIVED — is answered from it and never started again, and a start never replaces a closed
 * run. A redelivery never overrides an operator, also after the closed run left Temporal's retention.
 */
export const oneStartPerKey: StartGuard = {
  mayStart: (record) => !record.firstDeliveryAt && !record.workflowStartedAt && record.status === 'RECEIVED',
  reusePolicy: 'REJECT_DUPLICATE',
};

/** Every entry point submits with the same settings: the configured task queue, policy and deadline. */
export function submissionDepsFrom(config: SubmissionConfig, prisma: PrismaClient, temporal: Client): SubmissionDeps {
  return {
    prisma,
    claims: claimStoreOn(prisma),
    temporal,
    taskQueue: config.temporal.taskQueue,
    writePolicy: config.writePolicy,
    startTimeoutMs: config.http.startTimeoutMs,
  };
}

/** The one place the defaults of `DeliveryOptions` are filled in. */
export function withDefaults(options: DeliveryOptions): SettledDeliveryOptions {
  const { deadline } = options;
  return {
    waitUntil: options.waitUntil,
    onClaimed: options.onClaimed ?? (() => {}),
    deadline: deadline && { ...deadline, goesOnAfterAnswer: deadline.goesOnAfterAnswer ?? false },
    workerInProcess: options.workerInProcess ?? false,
    startGuard: options.startGuard ?? oneStartPerKey,
    intake: options.intake,
  };
}

export function workflowInputFor(approval: Approval, policy: WritePolicy): OrderWorkflowInput {
  const order = canonicalOrder(approval.order);
  return orderInput(
    {
      idempotencyKey: idempotencyKeyFor(approval.approvalNo, approval.operation),
      approvalNo: approval.approvalNo,
      operation: approval.operation,
      approvedAt: approval.approvedAt,
      fingerprint: fingerprintOf(order),
      order,
      totalAmount: totalAmountOf(order),
    },
    policy,
  );
}

/**
 * The workflow input for a key the edge already accepted, rebuilt from its record (same key): the
 * order it names, or — for an OA connector's key whose form was never mapped — the form to read.
 */
export function workflowInputFromRecord(record: IdempotencyRecord, policy: WritePolicy): OrderWorkflowStart {
  if (record.fingerprint !== null && record.request !== null) {
    return orderInput(
      {
        idempotencyKey: record.idempotencyKey,
        approvalNo: record.approvalNo,
        operation: record.operation,
        approvedAt: record.request.approvedAt,
        fingerprint: record.fingerprint,
        order: record.request.order,
        totalAmount: record.request.totalAmount,
      },
      policy,
    );
  }
  if (!isOaVendor(record.source)) {
    throw new Error(`idempotency record ${record.idempotencyKey} names no order and no approval form`);
  }
  // The key of an OA approval is built from its instance id: the approval number is the instance.
  return formInput(record.source, record.approvalNo, policy);
}

/** The workflow input of an OA approval instance: the order is read from its form by the workflow. */
export function formInput(vendor: OaVendor, instanceId: string, policy: WritePolicy): FormOrderWorkflowInput {
  return {
    idempotencyKey: idempotencyKeyFor(instanceId, 'MAIN'),
    approvalNo: instanceId,
    operation: 'MAIN',
    formSource: { vendor, instanceId },
    policy: policyInput(policy),
  };
}

function orderInput(order: Omit<OrderWorkflowInput, 'policy'>, policy: WritePolicy): OrderWorkflowInput {
  return { ...order, policy: policyInput(policy) };
}

function policyInput(policy: WritePolicy): OrderWorkflowInput['policy'] {
  return {
    maxAttempts: policy.maxAttempts,
    initialIntervalMs: policy.initialIntervalMs,
    maxIntervalMs: policy.maxIntervalMs,
    backoffCoefficient: policy.backoffCoefficient,
    startToCloseMs: policy.startToCloseMs,
    scheduleToCloseMs: policy.scheduleToCloseMs,
    decisionTimeoutMs: policy.decisionTimeoutMs,
    localRetryThresholdMs: policy.localRetryThresholdMs,
  };
}

/**
 * Accepts one delivery of an approval that names its order (the signed webhook, the MCP tool).
 * See `takeDelivery` (./take-delivery.ts) for what happens; a key reused for a different order is a
 * conflict, and so is a key an OA connector claimed. The same order through the other of the two
 * is a duplicate.
 */
export async function submitApproval({ deps, approval, door, options }: ApprovalDelivery): Promise<Submission> {
  const input = workflowInputFor(approval, deps.writePolicy);
  return deliver(
    deps,
    input,
    {
      fingerprint: input.fingerprint,
      request: { approvedAt: input.approvedAt, order: input.order, totalAmount: input.totalAmount },
      source: door,
    },
    options,
  );
}

/**
 * Accepts one delivery of an approved OA instance (Feishu, DingTalk, WeCom), whose event names only
 * the instance: the key is claimed with no order yet, and the workflow reads the order from the form
 * (docs/architecture.md, decision 17). Every delivery of the instance from its OA — a redelivered
 * event or a second event — is the same order: a duplicate. A key another source claimed (a webhook
 * approval number equal to the instance id, another vendor's instance) is a conflict, kept for an
 * operator (docs/architecture.md, decision 38). An OA connector's `deadline` is when the vendor's
 * reply is due: the key must be claimed by then (the start may go on).
 */
export async function submitApprovalForm({ deps, form, options }: FormDelivery): Promise<Submission> {
  const input = formInput(form.vendor, form.instanceId, deps.writePolicy);
  return deliver(deps, input, { fingerprint: null, request: null, source: form.vendor }, options);
}

/** Every delivery is taken through the process's intake (./load-shedding.ts), then the start path. */
function deliver(
  deps: SubmissionDeps,
  input: OrderWorkflowStart,
  claim: DeliveryClaim,
  options: DeliveryOptions = {},
): Promise<Submission> {
  const { intake, ...taking } = withDefaults(options);
  return shedUnderLoad(intake, (place) => takeDelivery({ deps, input, claim, options: taking, place }));
}
