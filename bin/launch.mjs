// Starts one entry point of this package for a bin: the built JavaScript under dist/ when
// `npm run build` made it, else the TypeScript source through tsx (a runtime dependency), so every
// bin works from a fresh clone right after `npm ci`. ORDERS_BIN_FROM_SOURCE=1 runs the source even
// when dist/ exists, which may be older than the source (the tests use it). A bin is then two lines
// naming its entry. Nothing here writes to stdout: a bin's stdout may carry a protocol (MCP stdio).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** `entry` is a path from the package root without extension, e.g. `mcp/stdio-main`. */
export async function launch(entry) {
  const built = path.join(ROOT, 'dist', `${entry}.js`);
  if (process.env.ORDERS_BIN_FROM_SOURCE !== '1' && existsSync(built)) return import(pathToFileURL(built).href);
  const { register } = await import('tsx/esm/api');
  register();
  return import(pathToFileURL(path.join(ROOT, `${entry}.ts`)).href);
}
