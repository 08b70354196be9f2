// `get_order_status`: where an order stands, by its idempotency key or by the approval it came
// from (the key is derived, never guessed). Read-only: the same public view as `GET /orders/<key>`,
// its last error told by code and sentence, never in its own words.
import { z } from 'zod';
import { APPROVAL_NO_PATTERN, idempotencyKeyFor, OPERATIONS } from '../../../domain/idempotency-key.js';
import { ORDER_STATUSES } from '../../../domain/order-status.js';
import { KnownFailure, orderNotFound } from '../../../submission/failure-outcome.js';
import { publicStatusView, readOrderStatus } from '../../../submission/order-status-view.js';
import { statusSentence } from '../status-sentences.js';
import { defineTool, idempotencyKeyArgument, type McpDeps, type Tool } from '../tool.js';

// Either form names one key; the parsed input is that key.
const statusInputSchema = z
  .strictObject({
    idempotencyKey: idempotencyKeyArgument
      .optional()
      .describe('the idempotencyKey a submit_approved_order answer gave'),
    approvalNo: z.string().regex(APPROVAL_NO_PATTERN, 'must be an approval number').optional(),
    operation: z.enum(OPERATIONS).optional(),
  })
  .transform((input, ctx) => {
    const { idempotencyKey, approvalNo, operation } = input;
    if (idempotencyKey !== undefined) {
      if (approvalNo === undefined && operation === undefined) return idempotencyKey;
      ctx.addIssue({ code: 'custom', path: [], message: 'pass either idempotencyKey or approvalNo + operation' });
      return z.NEVER;
    }
    if (approvalNo !== undefined && operation !== undefined) return idempotencyKeyFor(approvalNo, operation);
    for (const field of ['approvalNo', 'operation'] as const) {
      if (input[field] === undefined) {
        ctx.addIssue({ code: 'custom', path: [field], message: 'required unless idempotencyKey is given' });
      }
    }
    return z.NEVER;
  });

export const statusOutputSchema = z.strictObject({
  idempotencyKey: z.string(),
  workflowId: z.string(),
  status: z.enum(ORDER_STATUSES),
  orderId: z.string().optional(),
  orderNo: z.string().optional(),
  attempts: z.number().int().describe('write attempts so far'),
  lastError: z
    .strictObject({
      code: z.string().describe('stable, e.g. insufficient-stock or connection-lost'),
      message: z.string().describe('one sentence saying what the code means'),
    })
    .optional()
    .describe('why the last attempt failed, while one did'),
});

export function getOrderStatusTool(deps: McpDeps): Tool {
  return defineTool(deps.log, {
    name: 'get_order_status',
    title: 'Get the status of a submitted order',
    description:
      'Reads where an order submitted with submit_approved_order (or by the OA webhook) stands. Pass either ' +
      'idempotencyKey (from a submit_approved_order answer), or approvalNo and operation. Statuses: RECEIVED ' +
      '(accepted, still being written), SUBMITTED (written), DELIVERED (written, downstream system informed), ' +
      'DELIVERY_FAILED (written, informing the downstream failed), COMPENSATING (could not be written, waits for an ' +
      'operator), COMPENSATED (abandoned by an operator), FAILED (not completed, needs an operator). Read-only.',
    inputSchema: statusInputSchema,
    outputSchema: statusOutputSchema,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async run(key) {
      const view = await readOrderStatus(deps, key);
      if (!view) throw new KnownFailure(orderNotFound(key));
      const told = publicStatusView(view);
      return { structured: told, sentence: statusSentence(told) };
    },
  });
}
