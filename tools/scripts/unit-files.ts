// `npm test` runs every unit test file in this one process instead of a process each: most of a
// unit file's cost is loading the modules it tests, which the files share. Each file's tests keep
// their own name and file in the report. A file named on the command line runs in its own process,
// and so do those of ./unit-own-process.ts.
//
// No test runs before every file is loaded: node's runner starts a file's tests as soon as they are
// registered, and an import on a cold cache holds the event loop for seconds — under a test that
// times its timers, or while a test has mocked the clock that a later file's module reads.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { UNIT_FILES_OF_THEIR_OWN } from './unit-own-process.js';

const UNIT = fileURLToPath(new URL('../../test/unit', import.meta.url));

const files = readdirSync(UNIT, { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.test.ts'))
  .filter((name) => !UNIT_FILES_OF_THEIR_OWN.includes(`test/unit/${name}`))
  .sort();

let everyFileLoaded = () => {};
const loading = new Promise<void>((resolve) => (everyFileLoaded = resolve));
// The first test of the process: the ones the files register queue behind it until all are loaded.
void test('every unit file loaded before any of their tests runs', () => loading);
for (const file of files) await import(pathToFileURL(path.join(UNIT, file)).href);
everyFileLoaded();
