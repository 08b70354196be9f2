// One lane of `npm test`: node's test runner over the files given, in the order given, so many at
// a time. `node --test` sorts its files by name; its `run()` keeps the order, which lets the
// longest files start first. The spec reporter writes to stdout, the file-times reporter to the
// file given. Every file's process gets this process's `--import` flags (the TypeScript loader, the
// own database, the CPU figure). Exit 1 when a test failed.
// JavaScript, not TypeScript: started before any loader is in place.
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { parseArgs } from 'node:util';
import fileTimes from './test-file-times.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { concurrency: { type: 'string' }, times: { type: 'string' } },
});

let failed = false;
const stream = run({ files: positionals.map((file) => path.resolve(file)), concurrency: Number(values.concurrency) });
stream.on('test:fail', (data) => {
  if (!data.todo && !data.skip) failed = true;
});
const toSpec = new PassThrough({ objectMode: true });
const toTimes = new PassThrough({ objectMode: true });
stream.pipe(toSpec);
stream.pipe(toTimes);
// node 20 exports the spec reporter as a function of the stream, later versions as a class.
const specReporter = spec.prototype?._transform ? new spec() : spec;
const shown = toSpec.compose(specReporter);
shown.pipe(process.stdout, { end: false });
const timed = toTimes.compose(fileTimes).pipe(createWriteStream(values.times ?? '/dev/null'));
await Promise.all([
  new Promise((resolve) => shown.once('end', resolve)),
  new Promise((resolve) => timed.once('finish', resolve)),
]);
process.exitCode = failed ? 1 : 0;
