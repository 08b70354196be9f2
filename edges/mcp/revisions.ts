// Which revision of the MCP specification a request speaks, and what follows from it here: the JSON
// Schema dialect its tools are listed in. A request of 2026-07-28 names its revision itself (the
// `_meta` envelope every request of that revision carries); an earlier one over Streamable HTTP
// names it in its `MCP-Protocol-Version` header; over stdio an earlier one speaks the revision
// settled at `initialize`, which the SDK keeps for the connection.
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  PROTOCOL_VERSION_META_KEY,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { SchemaDialect } from './tool.js';

/** The revision that made JSON Schema 2020-12 the default dialect of tool schemas. */
const FIRST_2020_12_REVISION = '2025-11-25';

/** Revisions are dates (YYYY-MM-DD), so they order as strings. */
const atLeast = (revision: string, first: string) => revision >= first;

/**
 * 2020-12 for a client of 2025-11-25 or later, which the specification gives that default. An
 * older client gets draft-07, as every client got before: its revision names no dialect, and a
 * client that compiles schemas with a draft-07 validator (Ajv's default instance among them)
 * fails on a `$schema` of 2020-12 it does not know, so the tools would be unusable to it. The
 * schemas say the same in both dialects: they use no keyword whose meaning differs between them.
 */
export function schemaDialectFor(revision: string): SchemaDialect {
  return atLeast(revision, FIRST_2020_12_REVISION) ? 'draft-2020-12' : 'draft-7';
}

/**
 * The revision the request in `context` speaks. `settled`: the revision the connection settled on
 * at `initialize`, when it had one (stdio). A request that names none is one of 2025-03-26, as the
 * specification says to assume.
 */
export function revisionOf(context: ServerContext, settled: string | undefined): string {
  const envelope = context.mcpReq.envelope as Record<string, unknown> | undefined;
  const named = envelope?.[PROTOCOL_VERSION_META_KEY];
  if (typeof named === 'string') return named;
  return context.http?.req?.headers.get('mcp-protocol-version') ?? settled ?? DEFAULT_NEGOTIATED_PROTOCOL_VERSION;
}
