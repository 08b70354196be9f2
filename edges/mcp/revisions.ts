// Which revision of the MCP specification a client speaks, and what follows from it here: the JSON
// Schema dialect its tools are listed in. Over Streamable HTTP every request after `initialize`
// names its revision (the `MCP-Protocol-Version` header); over stdio the revision is the one
// settled at `initialize`, remembered for the session.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  isInitializeRequest,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
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
export function schemaDialectFor(revision: string | undefined): SchemaDialect {
  // A request that names no revision is one of 2025-03-26, as the specification says to assume.
  return atLeast(revision ?? DEFAULT_NEGOTIATED_PROTOCOL_VERSION, FIRST_2020_12_REVISION) ? 'draft-2020-12' : 'draft-7';
}

/** What `initialize` settles on: the client's revision when the server speaks it, else the latest. */
function negotiated(requested: string): string {
  return SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}

/**
 * `transport`, remembering the revision its session settles on at `initialize`: the server's
 * message handler is wrapped as the server installs it, so no message reaches the server first.
 */
export function rememberingRevision(transport: Transport): {
  transport: Transport;
  revision: () => string | undefined;
} {
  let revision: string | undefined;
  let deliver: Transport['onmessage'];
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => deliver,
    set: (handler: Transport['onmessage']) => {
      deliver =
        handler &&
        ((message, extra) => {
          if (isInitializeRequest(message)) revision = negotiated(message.params.protocolVersion);
          handler(message, extra);
        });
    },
  });
  return { transport, revision: () => revision };
}
