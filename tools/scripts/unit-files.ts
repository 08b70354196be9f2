// `npm test` runs every unit test file in this one process instead of a process each: most of a
// unit file's cost is loading the modules it tests, which the files share. Each file's tests keep
// their own name and file in the report. A file named on the command line runs in its own process,
// and so do those of ./unit-own-process.ts.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { UNIT_FILES_OF_THEIR_OWN } from './unit-own-process.js';

const UNIT = fileURLToPath(new URL('../../test/unit', import.meta.url));

const files = readdirSync(UNIT, { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.test.ts'))
  .filter((name) => !UNIT_FILES_OF_THEIR_OWN.includes(`test/unit/${name}`))
  .sort();
for (const file of files) await import(pathToFileURL(path.join(UNIT, file)).href);
