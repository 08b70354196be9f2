// The MCP edge's settings: the bearer tokens of /mcp (submitting, and the operator tools), how long
// a submission waits for its write, whether the stdio bin offers the operator tools, and the
// browser origins /mcp serves.
import { z } from 'zod';
import { redactUrl } from '../../domain-node/redact-url.js';
import { webOrigin } from '../../domain-node/web-origin.js';
import { secretSetting, switchSetting } from '../../services/config/setting-types.js';

/**
 * Browser origins, comma-separated (`https://agent.example,http://localhost:6274`), each
 * `scheme://host[:port]` with no path; read as their normalised form.
 */
const originListSetting = z
  .string()
  .default('')
  .transform((value, context) => {
    const origins: string[] = [];
    for (const entry of value.split(',').map((part) => part.trim())) {
      if (entry === '') continue;
      const origin = webOrigin(entry);
      if (origin === undefined) {
        // Shown redacted: an entry written with credentials must not print them.
        context.addIssue({
          code: 'custom',
          message: `${redactUrl(entry)} is not an origin (scheme://host[:port], no path)`,
        });
      } else origins.push(origin);
    }
    return origins;
  });

export const mcpSettings = {
  MCP_TOKEN: secretSetting.optional(),
  // Accepted beside MCP_TOKEN while clients move to it (docs/security.md#rotating-each-secret-without-a-gap).
  MCP_TOKEN_PREVIOUS: secretSetting.optional(),
  // The tool wait's rung of the ladder: MCP clients commonly give up on a request after 60 s.
  MCP_SUBMIT_WAIT_MS: z.coerce
    .number()
    .int()
    .min(1)
    .max(50_000, 'must stay below the 60 s MCP clients wait')
    .default(8_000),
  // The stdio bin's switch for the operator tools (as its --operator-tools); over HTTP they exist
  // only with MCP_OPERATOR_TOKEN (docs/architecture.md, decision 39).
  MCP_OPERATOR_TOOLS: switchSetting,
  // The bearer token that alone lists and calls the operator tools over /mcp; unset: no operator
  // tools over HTTP. MCP_TOKEN keeps submitting and reading statuses.
  MCP_OPERATOR_TOKEN: secretSetting.optional(),
  // Browser origins /mcp serves (docs/mcp.md#browsers-and-origin); none by default.
  MCP_ALLOWED_ORIGINS: originListSetting,
};
type McpEnv = z.output<z.ZodObject<typeof mcpSettings>>;

export interface McpConfig {
  /** The bearer token of the HTTP transport; undefined turns `/mcp` off. */
  token: string | undefined;
  /** MCP_TOKEN_PREVIOUS: accepted beside `token` during a rotation. */
  previousToken: string | undefined;
  /** How long `submit_approved_order` waits for the write before answering with the status. */
  submitWaitMs: number;
  /**
   * MCP_OPERATOR_TOOLS: whether the stdio bin offers the operator tools (listing and deciding
   * compensations). Over HTTP they follow `operatorToken` alone.
   */
  operatorTools: boolean;
  /** MCP_OPERATOR_TOKEN: the only bearer token `/mcp` lists and runs the operator tools for; undefined: never. */
  operatorToken: string | undefined;
  /** The browser origins `/mcp` serves (normalised); a request with another `Origin` is refused. */
  allowedOrigins: readonly string[];
}

export function mcpFrom(env: McpEnv): McpConfig {
  return {
    token: env.MCP_TOKEN,
    previousToken: env.MCP_TOKEN_PREVIOUS,
    submitWaitMs: env.MCP_SUBMIT_WAIT_MS,
    operatorTools: env.MCP_OPERATOR_TOOLS,
    operatorToken: env.MCP_OPERATOR_TOKEN,
    allowedOrigins: env.MCP_ALLOWED_ORIGINS,
  };
}

/**
 * The operator token is a right of its own: equal to a submit token (the current one or the one
 * being replaced) it would hand the operator tools to every submitting client.
 */
export function operatorTokenProblems(env: McpEnv): string[] {
  const operator = env.MCP_OPERATOR_TOKEN;
  if (operator === undefined) return [];
  return (['MCP_TOKEN', 'MCP_TOKEN_PREVIOUS'] as const)
    .filter((name) => env[name] === operator)
    .map((name) => `MCP_OPERATOR_TOKEN: equals ${name}; the operator token must differ from the submit token`);
}
