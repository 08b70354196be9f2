// The MCP server, the same for both transports (stdio and Streamable HTTP) and for every revision
// of the specification the SDK serves (2026-07-28, 2025-11-25, 2025-06-18 and older). Built on the
// SDK's protocol `Server` with the tool table of this folder rather than `McpServer.registerTool`:
// `McpServer` validates arguments before a handler runs and words the refusal itself, while a
// model needs each bad field named by JSON pointer, like the webhook's 400, and unknown fields
// refused by the project's own strict schema; and it lists every schema in JSON Schema 2020-12,
// where a client of 2025-06-18 needs draft-07 (revisions.ts).
import {
  type McpServerFactory,
  type ProgressToken,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { DecisionDoor } from '../../domain/decided-by.js';
import { revisionOf, schemaDialectFor } from './revisions.js';
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
  /**
   * Offer list_orders_awaiting_decision, decide_compensation and decide_delivery, their decisions
   * recorded as taken through this door; false: not offered, and a call is refused as for any
   * tool that does not exist.
   */
  operatorTools: DecisionDoor | false;
}

export function toolsFor(deps: McpDeps, options: McpServerOptions): Tool[] {
  const door = options.operatorTools;
  return [
    submitApprovedOrderTool(deps),
    getOrderStatusTool(deps),
    ...(door
      ? [listOrdersAwaitingDecisionTool(deps), decideCompensationTool(deps, door), decideDeliveryTool(deps, door)]
      : []),
  ];
}

/**
 * What the SDK's serving entries (`createMcpHandler` over HTTP, `serveStdio`) call for a server:
 * one per HTTP request, one per stdio connection. Cheap to make.
 */
export function mcpServerFactory(offered: readonly Tool[]): McpServerFactory {
  return () => createMcpServer(offered);
}

/** A server offering `tools`, each request answered in the revision it speaks (revisions.ts). */
export function createMcpServer(offered: readonly Tool[]): Server {
  const tools = new Map(offered.map((tool) => [tool.name, tool]));
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  // The revision an stdio connection settled on at `initialize` (a 2026-07-28 request names its own;
  // the SDK marks this accessor deprecated for that reason, and keeps it for 2025 connections).
  const settled = () => server.getNegotiatedProtocolVersion();

  server.setRequestHandler('tools/list', (_request, context) => {
    const dialect = schemaDialectFor(revisionOf(context, settled()));
    return { tools: [...tools.values()].map((tool) => tool.listings[dialect]) };
  });

  server.setRequestHandler('tools/call', async (request, context) => {
    const tool = tools.get(request.params.name);
    // Calling a tool that was never listed is protocol misuse, not a tool failure.
    if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const result = await tool.call(request.params.arguments ?? {}, toolContext(context));
    // Whatever a revision asks of a result's shape is the SDK's to render.
    return server.projectCallToolResult(result, tool.listings['draft-2020-12'].outputSchema);
  });

  return server;
}

function toolContext(context: ServerContext): ToolContext {
  const request = context.mcpReq;
  return {
    signal: request.signal,
    reportProgress: progressReporter(request._meta?.progressToken, (notification) => request.notify(notification)),
  };
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
