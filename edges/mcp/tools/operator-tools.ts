// The operator tools, offered over stdio when the bin is started with them (--operator-tools or
// MCP_OPERATOR_TOOLS=1) and over HTTP to MCP_OPERATOR_TOKEN alone: every key waiting for a person,
// and the decisions on them — resubmit or abandon a write that failed for good, redeliver or mark
// handled a delivery that failed. All go through submission/operator-decisions/, the
// operator path every surface shares; each decision is recorded with the door it came through.
import { z } from 'zod';
import {
  type DecisionDoor,
  decidedThrough,
  doorPrefixProblem,
  DOOR_PREFIXES,
  MARKED_DECIDED_BY_MAX_LENGTH,
} from '../../../domain/decided-by.js';
import { COMPENSATION_DECISIONS, ORDER_STATUSES } from '../../../domain/order-status.js';
import { OPERATIONS } from '../../../domain/idempotency-key.js';
import { PRINTABLE_ASCII } from '../../../domain/order-input.js';
import { listOrdersAwaitingDecision } from '../../../submission/operator-decisions/awaiting.js';
import { resubmit } from '../../../submission/operator-decisions/claims.js';
import { decideCompensation } from '../../../submission/operator-decisions/compensation.js';
import { decideDelivery } from '../../../submission/operator-decisions/delivery.js';
import type { OperatorDeps } from '../../../submission/operator-decisions/shared.js';
import { type DecisionResult, DELIVERY_DECISIONS } from '../../../workflows/definitions.js';
import { statusSentence } from '../status-sentences.js';
import { defineTool, idempotencyKeyArgument, type McpDeps, type Tool } from '../tool.js';

const awaitingOutputSchema = z.strictObject({
  orders: z.array(
    z.strictObject({
      idempotencyKey: z.string(),
      workflowId: z.string().describe('the workflow that takes the decision'),
      approvalNo: z.string(),
      operation: z.enum(OPERATIONS),
      customerId: z.string(),
      currency: z.string(),
      totalAmount: z.string(),
      reason: z.string().describe('why it waits: the last error, or the door refused and the one holding the key'),
      attempts: z.number().int().describe("the write's attempts; for KEY_SOURCE_CONFLICT, the deliveries refused"),
      waitingSince: z.string().describe('ISO 8601'),
      status: z.enum(['COMPENSATING', 'DELIVERY_FAILED', 'FAILED', 'RECEIVED', 'KEY_SOURCE_CONFLICT']),
      nextActions: z.array(z.string()).describe('what moves it on, the usual first'),
    }),
  ),
});

const decidedBy = z
  .string()
  .min(1)
  .max(MARKED_DECIDED_BY_MAX_LENGTH)
  .regex(PRINTABLE_ASCII, 'must be printable ASCII')
  // The door is recorded before the name, so `mcp-operator:mcp-stdio:bob` would only read oddly; a
  // name is held to the rule orders-cli --by is, so no door's mark starts any name a person gives.
  .superRefine((name, context) => {
    const problem = doorPrefixProblem(name);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  })
  .describe(
    'the operator who decided; recorded after the door the decision came through, e.g. mcp-operator:alice; ' +
      `may not begin with a door's mark (${DOOR_PREFIXES.join(', ')})`,
  );

function operatorDeps(deps: McpDeps): OperatorDeps {
  return {
    prisma: deps.prisma,
    temporal: deps.temporal,
    taskQueue: deps.config.temporal.taskQueue,
    writePolicy: deps.config.writePolicy,
  };
}

/** What a decision tool answers: the key, the decision taken and where the key stands after it. */
function decisionOutput<const D extends readonly [string, ...string[]]>(decisions: D) {
  return z.strictObject({
    idempotencyKey: z.string(),
    decision: z.enum(decisions),
    status: z.enum(ORDER_STATUSES).describe('the order status after the decision was carried out'),
    outcome: z.string().optional(),
  });
}

const decisionOutputSchema = decisionOutput(COMPENSATION_DECISIONS);

/** A decision carried out: the structured answer and the sentence a model reads. */
function decisionAnswer<D extends string>(decision: D, result: DecisionResult) {
  const structured = {
    idempotencyKey: result.idempotencyKey,
    decision,
    status: result.status,
    ...(result.outcome ? { outcome: result.outcome } : {}),
  };
  const sentence =
    `The decision ${decision} was carried out. ` +
    statusSentence({ idempotencyKey: result.idempotencyKey, status: result.status, attempts: 0 });
  return { structured, sentence };
}

export function listOrdersAwaitingDecisionTool(deps: McpDeps): Tool {
  return defineTool(deps.log, {
    name: 'list_orders_awaiting_decision',
    title: 'List orders waiting for an operator decision',
    description:
      'Lists every order waiting for a person, the longest waiting first, each with its status and nextActions: ' +
      'COMPENSATING (the write failed for good, e.g. insufficient stock; nothing was written; decide_compensation ' +
      'resubmits or abandons), DELIVERY_FAILED (written, but the downstream refused it; decide_delivery ' +
      'redelivers or marks it handled), FAILED (compensation ended without a decision; an operator runs ' +
      '`orders-cli recompensate`, then decides), and RECEIVED (accepted but its start was never confirmed; the ' +
      'sender should send it again, or decide_compensation resubmit starts it), and KEY_SOURCE_CONFLICT (a ' +
      'delivery through another door than the one that claimed the key was refused; a person checks the claim ' +
      'and clears it with `orders-cli clear-conflict`). Read-only.',
    inputSchema: z.strictObject({
      limit: z.number().int().min(1).max(100).default(20).describe('at most this many orders (default 20)'),
    }),
    outputSchema: awaitingOutputSchema,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async run({ limit }) {
      const orders = await listOrdersAwaitingDecision(deps.prisma, limit);
      const sentence =
        orders.length === 0
          ? 'No order is waiting for a decision.'
          : `${orders.length} order(s) wait for a decision; each row names its nextActions.`;
      return { structured: { orders }, sentence };
    },
  });
}

export function decideCompensationTool(deps: McpDeps, door: DecisionDoor): Tool {
  return defineTool(deps.log, {
    name: 'decide_compensation',
    title: 'Resubmit or abandon an order waiting in compensation',
    description:
      'Carries out an operator decision on an order listed by list_orders_awaiting_decision. resubmit writes it ' +
      'again under the same idempotencyKey (it can never be written twice), for when the cause was fixed, e.g. ' +
      'the stock arrived; abandon gives it up for good (status COMPENSATED), and later submissions of the same ' +
      'approval will not write it. One decision per failure: a second one is refused. Only decide what the ' +
      'operator you act for has decided; decidedBy names them and is recorded with the decision. resubmit also ' +
      'starts an order listed as RECEIVED whose start was never confirmed.',
    inputSchema: z.strictObject({
      idempotencyKey: idempotencyKeyArgument,
      decision: z.enum(COMPENSATION_DECISIONS),
      decidedBy,
    }),
    outputSchema: decisionOutputSchema,
    // Destructive (abandon gives an order up for good), and idempotent in effect: a failure takes one
    // decision, so the same call again is refused and changes nothing.
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async run(request) {
      const recorded = { ...request, decidedBy: decidedThrough(door, request.decidedBy) };
      const result =
        request.decision === 'resubmit'
          ? await resubmit(operatorDeps(deps), recorded)
          : await decideCompensation(deps.temporal, recorded);
      deps.log.info({ ...recorded, status: result.status }, 'operator decision taken through MCP');
      return decisionAnswer(request.decision, result);
    },
  });
}

const deliveryDecisionOutputSchema = decisionOutput(DELIVERY_DECISIONS);

export function decideDeliveryTool(deps: McpDeps, door: DecisionDoor): Tool {
  return defineTool(deps.log, {
    name: 'decide_delivery',
    title: 'Redeliver or mark handled an order whose delivery failed',
    description:
      'Carries out an operator decision on an order listed by list_orders_awaiting_decision with status ' +
      'DELIVERY_FAILED: the order is written, but the downstream system refused its event. redeliver sends the ' +
      'same event again (same idempotencyKey, same event id, so the downstream applies it at most once), for ' +
      'when the downstream was fixed; mark-handled records it as DELIVERED without sending, for when it was ' +
      'handled by other means. Any other status is refused and nothing is done; a decision already carried out ' +
      'is not repeated. Only decide what the operator you act for has decided; decidedBy names them.',
    inputSchema: z.strictObject({
      idempotencyKey: idempotencyKeyArgument,
      decision: z.enum(DELIVERY_DECISIONS),
      decidedBy,
    }),
    outputSchema: deliveryDecisionOutputSchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    async run(request) {
      const recorded = { ...request, decidedBy: decidedThrough(door, request.decidedBy) };
      const result = await decideDelivery(operatorDeps(deps), recorded);
      deps.log.info({ ...recorded, status: result.status }, 'delivery decision taken through MCP');
      return decisionAnswer(request.decision, result);
    },
  });
}
