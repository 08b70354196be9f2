// Starts one entry point of this package for a bin. With NODE_ENV=production, or where the sources
// are absent (an installed release: docs/production.md, "Release build"), the built JavaScript under
// dist/, which needs nothing beyond the runtime dependencies. Otherwise the TypeScript source
// through tsx (a development dependency), so every bin works from a fresh clone right after
// `npm ci` and never runs a dist/ older than the source. A bin is then two lines naming its entry.
// Nothing here writes to stdout: a bin's stdout may carry a protocol (MCP stdio).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** `entry` is a path from the package root without extension, e.g. `app/cli-main`. */
export async function launch(entry) {
  const built = path.join(ROOT, 'dist', `${entry}.js`);
  const source = path.join(ROOT, `${entry}.ts`);
  const useBuilt = existsSync(built) && (process.env.NODE_ENV === 'production' || !existsSync(source));
  if (useBuilt) return import(pathToFileURL(built).href);
  if (!existsSync(source) || !tsxInstalled()) {
    const bin = path.basename(process.argv[1] ?? 'launch', '.mjs');
    console.error(
      `${bin}: cannot start: dist/${entry}.js is missing (\`npm run build\` writes it) and ` +
        (existsSync(source)
          ? `${entry}.ts needs tsx, a development dependency that is not installed (\`npm ci\` with development dependencies)`
          : `there is no ${entry}.ts to run instead`),
    );
    process.exit(1);
  }
  const { register } = await import('tsx/esm/api');
  register();
  return import(pathToFileURL(source).href);
}

function tsxInstalled() {
  try {
    import.meta.resolve('tsx/esm/api');
    return true;
  } catch {
    return false;
  }
}
