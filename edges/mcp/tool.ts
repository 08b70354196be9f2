// What one MCP tool is: its description for a model, a strict input schema, an output schema,
// the spec's annotations and the work it does. The arguments are parsed here with the project's
// own zod schemas — the same ones the webhook uses — so a refusal names every bad field by JSON
// pointer, nothing runs before the arguments are whole, and unknown fields are refused.
import type { CallToolResult, Tool as ListedTool, ToolAnnotations } from '@modelcontextprotocol/server';
import type { BaseLogger } from 'pino';
import { z } from 'zod';
import type { SubmissionConfig } from '../../submission/settings.js';
import type { McpConfig } from './settings.js';
import type { PrismaClient } from '../../services/db/prisma-client.js';
import type { StartGuard } from '../../submission/start-path-types.js';
import type { IntakeLoad } from '../../submission/intake-load.js';
import type { ProductMetrics } from '../../services/metrics/product-metrics.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../domain/idempotency-key.js';
import { toFieldErrors } from '../../domain/order-input.js';
import type { Client } from '@temporalio/client';
import { inSpan } from '../../services/telemetry/tracing.js';
import { errorResult, invalidArgumentsResult, successResult } from './tool-results.js';

export type McpLogger = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

/** What every tool may use: the same clients and settings as the HTTP API. */
export interface McpDeps {
  /** The start path's settings, MCP's own, and whether the process hosts the worker. */
  config: SubmissionConfig & { mcp: McpConfig; http: { hostsWorker: boolean } };
  prisma: PrismaClient;
  temporal: Client;
  log: McpLogger;
  /** Which submissions may start their key's workflow; the product's own guard unless given. */
  startGuard?: StartGuard;
  /** The process's intake, shared with the other doors (edges/http/app.ts); none over stdio. */
  intake?: IntakeLoad;
  /** The process's metrics (edges/http/app.ts); none over stdio, which has no metrics endpoint. */
  metrics?: ProductMetrics;
}

/** An idempotency key as an argument: only a well-formed key is looked up. */
export const idempotencyKeyArgument = z
  .string()
  .regex(IDEMPOTENCY_KEY_PATTERN, 'must look like APPROVAL:<approvalNo>:MAIN or APPROVAL:<approvalNo>:SUPPLEMENT');

export interface ToolContext {
  /** Aborted when the client cancels the call or goes away. */
  signal: AbortSignal;
  /** A progress notification, sent only when the client asked for them (a progress token). */
  reportProgress: (progress: number, total: number, message: string) => Promise<void>;
}

export interface ToolAnswer<Output> {
  structured: Output;
  /** A plain sentence for the model: what happened and what to do next. */
  sentence: string;
}

/** The JSON Schema dialects a tool's schemas are listed in: which one a client gets is server.ts's choice. */
export type SchemaDialect = 'draft-7' | 'draft-2020-12';

export interface Tool {
  name: string;
  /** As `tools/list` shows it, in each dialect. */
  listings: Record<SchemaDialect, ListedTool>;
  call: (args: unknown, context: ToolContext) => Promise<CallToolResult>;
}

export interface ToolSpec<Input extends z.ZodType, Output extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  inputSchema: Input;
  outputSchema: Output;
  /**
   * All four hints, always: a client decides from them whether a call may be repeated after a
   * timeout, and an absent hint means the spec's default — `idempotentHint: false` — which would
   * tell it that retrying the same call does something again.
   */
  annotations: Required<Pick<ToolAnnotations, 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint'>>;
  run: (args: z.output<Input>, context: ToolContext) => Promise<ToolAnswer<z.output<Output>>>;
}

export function defineTool<Input extends z.ZodType, Output extends z.ZodObject>(
  log: McpLogger,
  spec: ToolSpec<Input, Output>,
): Tool {
  const listing = (dialect: SchemaDialect): ListedTool => ({
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: jsonSchemaOf(spec.inputSchema, 'input', dialect),
    outputSchema: jsonSchemaOf(spec.outputSchema, 'output', dialect),
    annotations: { title: spec.title, ...spec.annotations },
  });
  return {
    name: spec.name,
    listings: { 'draft-7': listing('draft-7'), 'draft-2020-12': listing('draft-2020-12') },
    async call(args, context) {
      const parsed = spec.inputSchema.safeParse(args);
      if (!parsed.success) return invalidArgumentsResult(spec.name, toFieldErrors(parsed.error));
      try {
        // With tracing on, each call is a trace of its own (or the /mcp request's child); the
        // submission tags it with the key.
        const answer = await inSpan(`MCP tools/call ${spec.name}`, 'server', { 'mcp.tool.name': spec.name }, () =>
          spec.run(parsed.data, context),
        );
        return successResult(answer.structured, answer.sentence);
      } catch (error) {
        const { result, expected } = errorResult(spec.name, error);
        if (expected) log.warn({ err: error, tool: spec.name }, 'tool call refused');
        else log.error({ err: error, tool: spec.name }, 'tool call failed');
        return result;
      }
    },
  };
}

/** The schema in `dialect`, which its `$schema` names. Strict zod objects become `additionalProperties: false`. */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output', dialect: SchemaDialect): ListedTool['inputSchema'] {
  return z.toJSONSchema(schema, { target: dialect, io }) as ListedTool['inputSchema'];
}
