// `submit_approved_order`: the webhook's body, through the webhook's own path to the workflow
// (submission/submit-approval.ts), so the key is computed in the one place it is ever computed and
// the model can neither pass nor change it. The tool then waits — at most MCP_SUBMIT_WAIT_MS, one
// rung of the timeout ladder, well inside an MCP client's request timeout — for the write's
// outcome, and otherwise answers at once with the status and what to call next. An agent's retry
// (a timed-out client, the model calling again, a second session) lands on the same key.
import { z } from 'zod';
import { approvalSchema } from '../../../domain/order-input.js';
import { ORDER_STATUSES } from '../../../domain/order-status.js';
import { publicErrorOf } from '../../../domain/error-classification.js';
import { publicStatusView, readOrderStatus } from '../../../submission/order-status-view.js';
import { submissionDepsFrom, submitApproval } from '../../../submission/submit-approval.js';
import { waitForOutcome } from '../../../submission/wait-for-outcome.js';
import { statusSentence } from '../status-sentences.js';
import { defineTool, type McpDeps, type Tool } from '../tool.js';

export const submissionOutputSchema = z.strictObject({
  idempotencyKey: z.string().describe('APPROVAL:<approvalNo>:<operation>, computed by the server'),
  workflowId: z.string(),
  duplicate: z.boolean().describe('true when this approval had been submitted before: nothing new was started'),
  status: z.enum(ORDER_STATUSES),
  orderNo: z.string().optional().describe('set once the order is written'),
});

export function submitApprovedOrderTool(deps: McpDeps): Tool {
  const waitMs = deps.config.mcp.submitWaitMs;
  return defineTool(deps.log, {
    name: 'submit_approved_order',
    title: 'Submit an approved order, exactly once',
    description:
      'Writes the order of one approved OA document. Pass the approval exactly as approved: approvalNo, ' +
      'operation (MAIN for the main order of the approval, SUPPLEMENT for its supplementary order), approvedAt ' +
      '(RFC 3339 with offset) and the order (customerId, currency, lines with sku, integer quantity and unitPrice ' +
      'as a decimal string). Each approvalNo + operation is written at most once: calling again with the same ' +
      'arguments — after a timeout, an error, or from another session — never creates a second order; it answers ' +
      'with the same idempotencyKey and duplicate: true. The key is computed by the server and cannot be passed. ' +
      'The same approvalNo + operation with a different order is refused as a conflict and nothing is written. ' +
      `Waits up to ${Math.round(waitMs / 1000)} s for the write; if the answer's status is still RECEIVED, call ` +
      'get_order_status with the idempotencyKey later instead of submitting again.',
    inputSchema: approvalSchema,
    outputSchema: submissionOutputSchema,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async run(approval, context) {
      const deadline = Date.now() + waitMs;
      // The start path waits for the write (the writeOutcome update rides on the start); meanwhile
      // the key's record says how the write goes, for the client's progress notifications.
      const progressDone = new AbortController();
      let progress: Promise<unknown> = Promise.resolve();
      const reportProgress = (key: string) => {
        progress = waitForOutcome(deps.prisma, key, {
          deadline,
          signal: AbortSignal.any([progressDone.signal, context.signal]),
          onPoll: (snapshot) =>
            context.reportProgress(
              snapshot.elapsedMs,
              waitMs,
              `status ${snapshot.status}` +
                (snapshot.attempts > 1 ? `, attempt ${snapshot.attempts}` : '') +
                (snapshot.lastError ? `, last error: ${publicErrorOf(snapshot.lastError).code}` : ''),
            ),
        }).catch((error: unknown) => deps.log.warn({ err: error }, 'MCP submission progress could not be read'));
      };
      let submission;
      try {
        submission = await submitApproval({
          deps: { ...submissionDepsFrom(deps.config, deps.prisma, deps.temporal), metrics: deps.metrics },
          approval,
          door: 'mcp',
          options: {
            workerInProcess: deps.config.http.hostsWorker,
            startGuard: deps.startGuard,
            intake: deps.intake,
            waitUntil: deadline,
            onClaimed: reportProgress,
          },
        });
      } finally {
        progressDone.abort();
        await progress;
      }
      deps.log.info(
        { idempotencyKey: submission.idempotencyKey, duplicate: submission.duplicate },
        submission.duplicate ? 'MCP submission answered from the existing workflow' : 'MCP submission started',
      );
      // The record adds the attempts and the last error. It lags the run when the write failed
      // for good (compensation records COMPENSATING once it has reconciled): the run's word wins.
      const read = await readOrderStatus(deps, submission.idempotencyKey);
      const stored = read ? publicStatusView(read) : { ...submission, attempts: 0 };
      const view =
        stored.status === 'RECEIVED' && submission.status !== 'RECEIVED'
          ? { ...stored, status: submission.status, orderNo: submission.orderNo }
          : stored;
      const structured = {
        idempotencyKey: submission.idempotencyKey,
        workflowId: submission.workflowId,
        duplicate: submission.duplicate,
        status: view.status,
        ...(view.orderNo ? { orderNo: view.orderNo } : {}),
      };
      const opening = submission.duplicate
        ? 'This approval was submitted before; nothing new was started. '
        : 'Submitted. ';
      return { structured, sentence: opening + statusSentence(view) };
    },
  });
}
