// Starts one entry point of this package for a bin. With NODE_ENV=production, the built JavaScript
// under dist/ (`npm run build`), which is what was deployed; otherwise the TypeScript source through
// tsx (a runtime dependency), so every bin works from a fresh clone right after `npm ci` and never
// runs a dist/ older than the source. A bin is then two lines naming its entry. Nothing here writes
// to stdout: a bin's stdout may carry a protocol (MCP stdio).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** `entry` is a path from the package root without extension, e.g. `mcp/stdio-main`. */
export async function launch(entry) {
  const built = path.join(ROOT, 'dist', `${entry}.js`);
  const source = path.join(ROOT, `${entry}.ts`);
  const useBuilt = existsSync(built) && (process.env.NODE_ENV === 'production' || !existsSync(source));
  if (useBuilt) return import(pathToFileURL(built).href);
  const { register } = await import('tsx/esm/api');
  register();
  return import(pathToFileURL(source).href);
}
