// A reporter for node's test runner, beside the spec reporter: how long each test file took (the
// sum of its top-level tests and suites, which run one after another inside the file) and when its
// last one ended, written as one JSON object for the runner to print as a table. The suite's time
// budget is kept file by file, and the files that end last say what holds the run's end.
// JavaScript, not TypeScript: node loads reporters before any loader could compile them.
import { testFileName } from './test-file-name.mjs';

/** @param {AsyncIterable<{ type: string, data: { file?: string, nesting?: number, details?: { duration_ms?: number } } }>} source */
export default async function* fileTimes(source) {
  /** @type {Map<string, { seconds: number, endedAt: number }>} */
  const byFile = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (!file || nesting !== 0) continue;
    const name = testFileName(file);
    const seconds = (byFile.get(name)?.seconds ?? 0) + (details?.duration_ms ?? 0) / 1000;
    byFile.set(name, { seconds, endedAt: Date.now() });
  }
  yield JSON.stringify(Object.fromEntries(byFile)) + '\n';
}
