// Loaded with `--import` into every test file's process by `npm test`: at the file's exit, writes
// the CPU time its process and the children it waited for (API and worker processes, stacks of its
// own, the release build) spent, and how long the process lived, so the runner can print both per
// file beside its tests' time (a process that lives well past its tests holds a place in its lane
// for nothing: a timer or a handle left behind). The suite
// is bound by the machine's two cores, so a file's CPU is what it costs the others.
// JavaScript, not TypeScript: loaded before any loader, into the worker's threads as well.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { testFileName } from './test-file-name.mjs';
import { isMainThread } from 'node:worker_threads';

const dir = process.env.TEST_CPU_DIR;
const file = process.argv[1];
const isRunner = process.argv[1]?.endsWith('test-lane.mjs') ?? false;

if (dir && file && isMainThread && !isRunner) {
  process.once('exit', () => {
    // /proc/self/stat after the command's name: fields 14–17 are utime, stime, cutime, cstime in
    // the kernel's ticks (100 a second on Linux).
    try {
      const stat = readFileSync('/proc/self/stat', 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = fields.slice(11, 15).reduce((sum, value) => sum + Number(value), 0);
      const name = testFileName(path.resolve(file));
      writeFileSync(
        path.join(dir, `${process.pid}.json`),
        JSON.stringify({ [name]: { cpu: ticks / 100, lived: process.uptime() } }),
      );
    } catch {
      // Not Linux, or the folder gone: the table goes without this file's CPU.
    }
  });
}
