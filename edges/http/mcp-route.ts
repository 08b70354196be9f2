// The Streamable HTTP transport at `/mcp`, on the API's own port, guarded by the bearer token
// MCP_TOKEN (without it the route does not exist: `/mcp` answers 404). Stateless: every POST gets a
// server and transport of its own, so nothing ties a client to one API instance and the service
// scales out as the webhook does. A browser's request from an origin MCP_ALLOWED_ORIGINS does not
// list is refused first, then the token is checked; a refused request runs no tool.
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { webOrigin } from '../../domain-node/web-origin.js';
import { HttpProblem, problem, refusedAtTheDoor } from './problem.js';
import { inRequestSpan } from './request-spans.js';
import { bearerTokenRefusal } from '../mcp/bearer-token.js';
import { createMcpServer, toolsFor } from '../mcp/server.js';
import type { McpDeps, McpLogger, Tool } from '../mcp/tool.js';

export const MCP_PATH = '/mcp';

export function registerMcpRoute(app: FastifyInstance, deps: McpDeps): void {
  const { token, previousToken, operatorTools, allowedOrigins } = deps.config.mcp;
  if (!token) {
    deps.log.warn(`MCP_TOKEN is not set: the MCP HTTP transport is off and ${MCP_PATH} answers 404`);
    return;
  }
  deps.log.info(
    { operatorTools, allowedOrigins },
    `MCP Streamable HTTP transport at ${MCP_PATH} (bearer token required)`,
  );
  const allowed = new Set(allowedOrigins);
  const tools = toolsFor(deps, { operatorTools });

  app.route({
    method: ['POST', 'GET', 'DELETE'],
    url: MCP_PATH,
    handler: async (request, reply) => {
      // The Origin first: the answer depends on no secret, and a page a browser was tricked into
      // calling us from (DNS rebinding) gets 403 whatever it sends, so it cannot use the token
      // check's answers to probe for the token. The MCP specification requires 403 here.
      const origin = request.headers.origin;
      if (origin !== undefined && !allowed.has(webOrigin(origin) ?? '')) {
        deps.log.warn({ origin }, `${MCP_PATH} refused: Origin not in MCP_ALLOWED_ORIGINS`);
        throw new HttpProblem(
          problem(
            'origin-not-allowed',
            403,
            'Forbidden',
            `${MCP_PATH} does not serve this browser origin (MCP_ALLOWED_ORIGINS lists those it serves)`,
          ),
        );
      }
      const refusal = bearerTokenRefusal(request.headers.authorization, [token, previousToken]);
      if (refusal) {
        // One answer whatever was wrong with the token; the log says what.
        deps.log.warn({ reason: refusal }, `${MCP_PATH} refused: the request could not be authenticated`);
        throw refusedAtTheDoor('invalid-token', { 'www-authenticate': 'Bearer realm="mcp"' });
      }
      if (request.method !== 'POST') {
        // Stateless: no session to end and no stream for server-initiated messages.
        throw new HttpProblem(problem('method-not-allowed', 405, 'Method not allowed', `${MCP_PATH} takes POST only`), {
          allow: 'POST',
        });
      }
      let message: unknown;
      try {
        message = JSON.parse(Buffer.isBuffer(request.body) ? request.body.toString('utf8') : '');
      } catch {
        return reply.code(400).send({
          jsonrpc: '2.0',
          error: { code: -32700, message: 'Parse error: the body is not valid JSON' },
          id: null,
        });
      }
      // A tool call's span is the request span's child.
      await inRequestSpan(request, () => answer(reply, tools, deps.log, message));
    },
  });
}

async function answer(reply: FastifyReply, tools: readonly Tool[], log: McpLogger, message: unknown): Promise<void> {
  // Every request after `initialize` names the client's revision (the specification requires it).
  const revision = reply.request.headers['mcp-protocol-version'];
  const server = createMcpServer(tools, () => (typeof revision === 'string' ? revision : undefined));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  // The transport writes the answer itself (JSON, or an event stream carrying progress).
  reply.hijack();
  // A client that leaves ends the wait; a submission already under way goes on regardless.
  reply.raw.once('close', () => void server.close().catch(() => undefined));
  try {
    await server.connect(transport);
    await transport.handleRequest(reply.request.raw, reply.raw, message);
  } catch (error) {
    log.error({ err: error }, 'MCP request failed');
    if (!reply.raw.headersSent) {
      reply.raw.writeHead(500, { 'content-type': 'application/json' });
      reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }));
    }
  }
}
