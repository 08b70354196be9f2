// The MCP server, the same for both transports (stdio and Streamable HTTP). Built on the SDK's
// protocol `Server` with the tool table of this folder rather than `McpServer.registerTool`:
// `McpServer` validates arguments before a handler runs and words the refusal itself, while a
// model needs each bad field named by JSON pointer, like the webhook's 400, and unknown fields
// refused by the project's own strict schema.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type ProgressToken,
} from '@modelcontextprotocol/sdk/types.js';
import { schemaDialectFor } from './revisions.js';
import type { McpDeps, Tool, ToolContext } from './tool.js';
import { getOrderStatusTool } from './tools/get-order-status.js';
import { decideCompensationTool, decideDeliveryTool, listOrdersAwaitingDecisionTool } from './tools/operator-tools.js';
import { submitApprovedOrderTool } from './tools/submit-approved-order.js';

export const SERVER_INFO = { name: 'exactly-once-orders', version: '0.1.0' };

/** At most one progress notification a second: a poll every 200 ms need not reach the client. */
const PROGRESS_INTERVAL_MS = 1_000;

const INSTRUCTIONS =
  'Submits orders of approved OA documents exactly once. Every call is safe to repeat with the same ' +
  'arguments: submit_approved_order derives its idempotency key from approvalNo + operation, so a retry never ' +
  'writes a second order. When a submission answers with status RECEIVED, follow up with get_order_status.';

export interface McpServerOptions {
  /** Offer list_orders_awaiting_decision, decide_compensation and decide_delivery. */
  operatorTools: boolean;
}

export function toolsFor(deps: McpDeps, options: McpServerOptions): Tool[] {
  return [
    submitApprovedOrderTool(deps),
    getOrderStatusTool(deps),
    ...(options.operatorTools
      ? [listOrdersAwaitingDecisionTool(deps), decideCompensationTool(deps), decideDeliveryTool(deps)]
      : []),
  ];
}

/**
 * A server offering `tools`; cheap to make, so the HTTP transport makes one per request.
 * `revision`: the revision of the specification the client speaks, when known (revisions.ts).
 */
export function createMcpServer(offered: readonly Tool[], revision: () => string | undefined): Server {
  const tools = new Map(offered.map((tool) => [tool.name, tool]));
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });

  server.setRequestHandler(ListToolsRequestSchema, () => {
    const dialect = schemaDialectFor(revision());
    return { tools: [...tools.values()].map((tool) => tool.listings[dialect]) };
  });

  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const tool = tools.get(request.params.name);
    // Calling a tool that was never listed is protocol misuse, not a tool failure.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const context: ToolContext = {
      signal: extra.signal,
      reportProgress: progressReporter(request.params._meta?.progressToken, (notification) =>
        extra.sendNotification(notification),
      ),
    };
    return tool.call(request.params.arguments ?? {}, context);
  });

  return server;
}

interface ProgressNotification {
  method: 'notifications/progress';
  params: { progressToken: ProgressToken; progress: number; total: number; message: string };
}

/** Sends progress only when the client asked for it, at most once a second, never failing the call. */
function progressReporter(
  token: ProgressToken | undefined,
  send: (notification: ProgressNotification) => Promise<void>,
): ToolContext['reportProgress'] {
  if (token === undefined) return () => Promise.resolve();
  let lastSentAt = 0;
  return async (progress, total, message) => {
    if (Date.now() - lastSentAt < PROGRESS_INTERVAL_MS) return;
    lastSentAt = Date.now();
    try {
      await send({ method: 'notifications/progress', params: { progressToken: token, progress, total, message } });
    } catch {
      // The client went away: the answer will not reach it either, and the submission stands.
    }
  };
}
