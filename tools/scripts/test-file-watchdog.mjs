// Loaded with `--import` into every test file's process by `npm test`: a file still running after
// TEST_FILE_LIMIT_S seconds (900 by default) is stopped, with what keeps it alive, instead of
// holding its lane — and the whole run — until CI gives up. A file whose tests are done but whose
// process cannot exit (a child process or a socket nobody closed) ends the same way. The processes
// the file started go with it. No test waits anywhere near this long: it is a fuse, not a timer.
// JavaScript, not TypeScript: loaded before any loader, into the worker's threads as well.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { testFileName } from './test-file-name.mjs';
import { setTimeout } from 'node:timers';
import { isMainThread } from 'node:worker_threads';

const file = process.argv[1];
const isRunner = process.argv[1]?.endsWith('test-lane.mjs') ?? false;
const limitSeconds = Number(process.env.TEST_FILE_LIMIT_S ?? 900);

/** Every process below `pid`, children before their parents' siblings, from /proc. */
function descendants(pid) {
  let children = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
  return children.flatMap((child) => [Number(child), ...descendants(child)]);
}

if (file && isMainThread && !isRunner && Number.isFinite(limitSeconds) && limitSeconds > 0) {
  const fuse = setTimeout(() => {
    const name = testFileName(path.resolve(file));
    const alive = process.getActiveResourcesInfo().filter((kind) => kind !== 'Timeout');
    process.stderr.write(
      `\n${name} still running after ${limitSeconds} s: stopped. What kept it alive: ` +
        `${alive.join(', ') || 'nothing but timers'}\n`,
    );
    for (const pid of descendants(process.pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    process.exit(1);
  }, limitSeconds * 1000);
  fuse.unref();
}
