// Loaded with `--import` into every test file's process by `npm test` while the Debian packages
// some files need (nginx, promtool, pgbouncer) are still being installed beside the run's start: a
// file that needs them waits here, before its first import, until the install has ended, and fails
// with the install's own words when it did not succeed. Every other file goes on at once.
// MACHINE_PACKAGES_GATE (set by tools/scripts/run-tests.ts) names the files and the file the
// install's outcome is written to: `ok`, or what went wrong.
// JavaScript, not TypeScript: loaded before any loader.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { testFileName } from './test-file-name.mjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isMainThread } from 'node:worker_threads';

const gate = process.env.MACHINE_PACKAGES_GATE;
const file = process.argv[1] ? path.resolve(process.argv[1]) : undefined;

if (gate && file && isMainThread) {
  /** @type {{ files: string[], outcome: string }} */
  const { files, outcome } = JSON.parse(gate);
  if (files.includes(testFileName(file))) {
    // The install ends in seconds to a minute; the file's own limit (TEST_FILE_LIMIT_S) bounds a hang.
    while (!existsSync(outcome)) await sleep(100);
    const said = readFileSync(outcome, 'utf8');
    if (said !== 'ok') {
      throw new Error(`${testFileName(file)} needs Debian packages whose install failed:\n${said}`);
    }
  }
}
