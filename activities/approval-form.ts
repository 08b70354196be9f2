// The first step of an order whose content is in an OA approval form (docs/architecture.md,
// decision 17): read the instance through its vendor's reader, refuse one that is not APPROVED,
// map the form (OA_FORM_MAPPING) and validate the order, then record the canonical order and its
// fingerprint on the key's record. From here the workflow writes it as any other order.
import { Context, log } from '@temporalio/activity';
import { canonicalOrder, totalAmountOf } from '../domain/canonical-order.js';
import { UnmappableFormError } from '../domain/errors.js';
import { type FormMappingFile, mapForm, mappingFor } from '../domain/form-mapping.js';
import type { OaVendor } from '../domain/oa-approval.js';
import { fingerprintOf } from '../domain-node/fingerprint.js';
import { recordMappedOrder } from '../services/db/idempotency-records.js';
import type { PrismaClient } from '../services/db/prisma-client.js';
import type { ApprovalReader } from '../vendors/approval-reader.js';
import type { FormOrderWorkflowInput, OrderWorkflowInput } from '../workflows/definitions.js';
import { toActivityFailure } from './activity-failure.js';

export interface ApprovalFormDeps {
  prisma: PrismaClient;
  /** One reader per OA whose connector is on. */
  readers: Partial<Record<OaVendor, ApprovalReader>>;
  /** The mapping file; undefined when no connector is on. */
  formMapping: FormMappingFile | undefined;
}

export function createApprovalFormActivities(deps: ApprovalFormDeps) {
  /**
   * Reads and maps the form. A read that failed is thrown for the classification table to judge
   * (an OA API's 5xx is retried, a 403 is not); an instance not APPROVED, or a form that does not
   * map, is an `UnmappableFormError` with its reasons — a business failure for compensation.
   */
  async function readApprovalForm(input: FormOrderWorkflowInput): Promise<OrderWorkflowInput> {
    const { attempt } = Context.current().info;
    const { vendor, instanceId } = input.formSource;
    const key = input.idempotencyKey;
    try {
      const reader = deps.readers[vendor];
      if (!reader || !deps.formMapping) {
        throw new Error(`this worker has no ${vendor} reader or no OA_FORM_MAPPING: the ${vendor} connector is off`);
      }
      const instance = await reader.readInstance(instanceId);
      if (instance.status !== 'APPROVED') {
        throw new UnmappableFormError(instanceId, [
          `the approval instance is ${instance.status}, not APPROVED: only an approved instance is an order`,
        ]);
      }
      const mapped = mapForm(instance.form, mappingFor(deps.formMapping, vendor));
      if (!mapped.ok) throw new UnmappableFormError(instanceId, mapped.reasons);
      const order = canonicalOrder(mapped.order);
      const read: OrderWorkflowInput = {
        idempotencyKey: key,
        approvalNo: input.approvalNo,
        operation: input.operation,
        // The vendor's approval time when it says; else when the form was read.
        approvedAt: instance.approvedAt ?? new Date().toISOString(),
        fingerprint: fingerprintOf(order),
        order,
        totalAmount: totalAmountOf(order),
        policy: input.policy,
      };
      const recorded = await recordMappedOrder(deps.prisma, key, {
        fingerprint: read.fingerprint,
        request: { approvedAt: read.approvedAt, order, totalAmount: read.totalAmount },
      });
      log.info('approval form read and mapped', { idempotencyKey: key, vendor, lines: order.lines.length, attempt });
      // What the record holds is the order: the same as `read`, unless an earlier attempt recorded first.
      return { ...read, fingerprint: recorded.fingerprint, ...recorded.request };
    } catch (error) {
      throw toActivityFailure(error, attempt, input.policy);
    }
  }

  return { readApprovalForm };
}
