// The operator tools, offered only when the server is started with them (--operator-tools or
// MCP_OPERATOR_TOOLS=1): the orders whose write failed for good and wait in compensation, and the
// decision on one of them. Both go through submission/operator-decisions.ts, the operator path
// every surface shares; a decision is the compensation workflow's own `decide` update.
import { z } from 'zod';
import { DECIDED_BY_MAX_LENGTH } from '../../domain/decided-by.js';
import { COMPENSATION_DECISIONS, ORDER_STATUSES } from '../../domain/order-status.js';
import { OPERATIONS } from '../../domain/idempotency-key.js';
import { PRINTABLE_ASCII } from '../../domain/order-input.js';
import { decideCompensation, listOrdersAwaitingDecision } from '../../submission/operator-decisions.js';
import { statusSentence } from '../status-sentences.js';
import { defineTool, idempotencyKeyArgument, type McpDeps, type Tool } from '../tool.js';

const awaitingOutputSchema = z.strictObject({
  orders: z.array(
    z.strictObject({
      idempotencyKey: z.string(),
      workflowId: z.string().describe('the compensation workflow that takes the decision'),
      approvalNo: z.string(),
      operation: z.enum(OPERATIONS),
      customerId: z.string(),
      currency: z.string(),
      totalAmount: z.string(),
      reason: z.string().describe('why the write failed for good'),
      attempts: z.number().int(),
      waitingSince: z.string().describe('ISO 8601'),
    }),
  ),
});

const decisionOutputSchema = z.strictObject({
  idempotencyKey: z.string(),
  decision: z.enum(COMPENSATION_DECISIONS),
  status: z.enum(ORDER_STATUSES).describe('the order status after the decision was carried out'),
  outcome: z.string().optional(),
});

export function listOrdersAwaitingDecisionTool(deps: McpDeps): Tool {
  return defineTool(deps.log, {
    name: 'list_orders_awaiting_decision',
    title: 'List orders waiting for an operator decision',
    description:
      'Lists orders whose write failed for good (for example insufficient stock, or attempts exhausted) and ' +
      'that wait in compensation for an operator to resubmit or abandon them, the longest waiting first. ' +
      'Nothing of these orders was written. Read-only; decide with decide_compensation.',
    inputSchema: z.strictObject({
      limit: z.number().int().min(1).max(100).default(20).describe('at most this many orders (default 20)'),
    }),
    outputSchema: awaitingOutputSchema,
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run({ limit }) {
      const orders = await listOrdersAwaitingDecision(deps.prisma, limit);
      const sentence =
        orders.length === 0
          ? 'No order is waiting for a decision.'
          : `${orders.length} order(s) wait for a decision; decide_compensation resubmits or abandons one.`;
      return { structured: { orders }, sentence };
    },
  });
}

export function decideCompensationTool(deps: McpDeps): Tool {
  return defineTool(deps.log, {
    name: 'decide_compensation',
    title: 'Resubmit or abandon an order waiting in compensation',
    description:
      'Carries out an operator decision on an order listed by list_orders_awaiting_decision. resubmit writes it ' +
      'again under the same idempotencyKey (it can never be written twice), for when the cause was fixed, e.g. ' +
      'the stock arrived; abandon gives it up for good (status COMPENSATED), and later submissions of the same ' +
      'approval will not write it. One decision per failure: a second one is refused. Only decide what the ' +
      'operator you act for has decided; decidedBy names them and is recorded with the decision.',
    inputSchema: z.strictObject({
      idempotencyKey: idempotencyKeyArgument,
      decision: z.enum(COMPENSATION_DECISIONS),
      decidedBy: z
        .string()
        .min(1)
        .max(DECIDED_BY_MAX_LENGTH)
        .regex(PRINTABLE_ASCII, 'must be printable ASCII')
        .describe('the operator who decided'),
    }),
    outputSchema: decisionOutputSchema,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async run(request) {
      const result = await decideCompensation(deps.temporal, request);
      deps.log.info({ ...request, status: result.status }, 'operator decision taken through MCP');
      const structured = {
        idempotencyKey: result.idempotencyKey,
        decision: request.decision,
        status: result.status,
        ...(result.outcome ? { outcome: result.outcome } : {}),
      };
      const sentence =
        `The decision ${request.decision} was carried out. ` +
        statusSentence({ idempotencyKey: result.idempotencyKey, status: result.status, attempts: 0 });
      return { structured, sentence };
    },
  });
}
