// docs/bench/results.json is shared by the bench's modes: each writes its own top-level keys and
// keeps the others, and the burst and soak read the normal run's steady rate from it.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Where the normal run's figures are kept in the repository. */
export const COMMITTED_RESULTS = 'docs/bench/results.json';

function readJson(file: string): Record<string, unknown> | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** What `<out>/results.json` holds now, or undefined when there is none. */
export const readResults = (out: string) => readJson(path.join(out, 'results.json'));

/** Writes `update`'s keys into `<out>/results.json`, every other key as it was. */
export function mergeResults(out: string, update: Record<string, unknown>): string {
  const file = path.join(out, 'results.json');
  mkdirSync(out, { recursive: true });
  writeFileSync(file, `${JSON.stringify({ ...readJson(file), ...update }, null, 2)}\n`);
  return file;
}

/**
 * The normal run's throughput of `name` at c=32 (its median round), from `<out>/results.json` or,
 * when that has none, the committed results; with the file it came from.
 */
export function steadyRate(out: string, name: string): { perSecond: number; from: string } | undefined {
  for (const file of [path.join(out, 'results.json'), COMMITTED_RESULTS]) {
    const results = readJson(file)?.results;
    if (!Array.isArray(results)) continue;
    const found = (results as { name?: string; concurrency?: number; throughput?: number }[]).find(
      (result) => result.name === name && result.concurrency === 32,
    );
    if (typeof found?.throughput === 'number') return { perSecond: found.throughput, from: file };
  }
  return undefined;
}
