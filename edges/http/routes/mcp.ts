// The Streamable HTTP transport at `/mcp`, on the API's own port, guarded by the bearer token
// MCP_TOKEN (without it the route does not exist: `/mcp` answers 404). Stateless: every POST gets a
// server of its own, so nothing ties a client to one API instance and the service scales out as
// the webhook does. A browser's request from an origin MCP_ALLOWED_ORIGINS does not list is refused
// first, then the token is checked; a refused request runs no tool. The token decides the tools:
// MCP_TOKEN submits and reads statuses, MCP_OPERATOR_TOKEN also lists and calls the operator tools
// (docs/architecture.md, decision 39); to the submit token they do not exist, and a call of one is
// refused as a call of any unknown tool is. What passes both checks goes to the SDK's
// web-standard handler, which answers each revision in its own: 2026-07-28 (the `_meta` envelope
// and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers it checks) and 2025-11-25,
// 2025-06-18 and older (the `MCP-Protocol-Version` header after `initialize`).
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { webOrigin } from '../../../domain-node/web-origin.js';
import { HttpProblem, problem, refusedAtTheDoor } from '../problem.js';
import { inRequestSpan } from '../request-spans.js';
import { bearerTokenHolder } from '../../mcp/bearer-token.js';
import { mcpServerFactory, toolsFor } from '../../mcp/server.js';
import type { McpDeps } from '../../mcp/tool.js';

export const MCP_PATH = '/mcp';

export function registerMcpRoute(app: FastifyInstance, deps: McpDeps): void {
  const { token, previousToken, operatorToken, operatorTools, allowedOrigins } = deps.config.mcp;
  if (!token) {
    deps.log.warn(
      `MCP_TOKEN is not set: the MCP HTTP transport is off and ${MCP_PATH} answers 404` +
        (operatorToken ? ' (MCP_OPERATOR_TOKEN is not used without it)' : ''),
    );
    return;
  }
  deps.log.info(
    { operatorTools: operatorToken ? 'MCP_OPERATOR_TOKEN only' : 'off', allowedOrigins },
    `MCP Streamable HTTP transport at ${MCP_PATH} (bearer token required)`,
  );
  // MCP_OPERATOR_TOOLS switches the stdio bin's tools only: an API that has it without the operator
  // token says so at start, so whoever set it for /mcp learns why the tools are not there.
  if (operatorTools && !operatorToken) {
    deps.log.warn(
      `MCP_OPERATOR_TOOLS is set but MCP_OPERATOR_TOKEN is not: ${MCP_PATH} offers no operator tools ` +
        '(over HTTP only MCP_OPERATOR_TOKEN lists and calls them)',
    );
  }
  const allowed = new Set(allowedOrigins);
  const handlerFor = (tools: Parameters<typeof mcpServerFactory>[0]) =>
    createMcpHandler(mcpServerFactory(tools), {
      // What the SDK refused (a revision it does not speak, headers that disagree with the body)
      // or failed at: the caller has its JSON-RPC error, the log says what.
      onerror: (error) => deps.log.warn({ err: error }, `${MCP_PATH}: the MCP transport refused or failed a request`),
    });
  // One server per right: the submit token's has no operator tool to list, run or name.
  const handlers = {
    MCP_TOKEN: handlerFor(toolsFor(deps, { operatorTools: false })),
    MCP_OPERATOR_TOKEN: handlerFor(toolsFor(deps, { operatorTools: 'mcp-operator' })),
  };
  app.addHook('onClose', () => Promise.all(Object.values(handlers).map((handler) => handler.close())));

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
      const bearer = bearerTokenHolder(request.headers.authorization, {
        MCP_TOKEN: [token, previousToken],
        MCP_OPERATOR_TOKEN: operatorToken,
      });
      if ('refusal' in bearer) {
        // One answer whatever was wrong with the token; the log says what.
        deps.log.warn({ reason: bearer.refusal }, `${MCP_PATH} refused: the request could not be authenticated`);
        throw refusedAtTheDoor('invalid-token', { 'www-authenticate': 'Bearer realm="mcp"' });
      }
      const mcp = handlers[bearer.holder];
      if (request.method !== 'POST') {
        // Stateless: no session to end and no stream for server-initiated messages.
        throw new HttpProblem(problem('method-not-allowed', 405, 'Method not allowed', `${MCP_PATH} takes POST only`), {
          allow: 'POST',
        });
      }
      // A client that leaves ends the wait; a submission already under way goes on regardless.
      const left = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) left.abort();
      });
      // A tool call's span is the request span's child. The answer is JSON, or an event stream
      // carrying progress before it.
      const answer = await inRequestSpan(request, () => mcp.fetch(webRequestOf(request, left.signal)));
      return reply.send(answer);
    },
  });
}

/** Never forwarded: the token was checked here, and nothing past this door needs a credential. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie']);

/**
 * The request as the web-standard handler takes it. Its URL is not the caller's: the handler reads
 * the method, the headers and the body only, and a forged `Host` must not make it unparsable.
 */
function webRequestOf(request: FastifyRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || CREDENTIAL_HEADERS.has(name)) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const body = Buffer.isBuffer(request.body) ? request.body : undefined;
  return new Request(new URL(MCP_PATH, 'http://localhost'), { method: request.method, headers, body, signal });
}
