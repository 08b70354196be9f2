// The name `npm test` reports a test file by: its path from the checkout's root, also when the file
// runs from the run's build (ORDERS_TEST_BUILD, tools/harness/test-build.ts), where
// `<build>/test/x.test.js` is `test/x.test.ts`.
// JavaScript, not TypeScript: loaded before any loader.
import path from 'node:path';

/** @param {string} file an absolute path */
export function testFileName(file) {
  const build = process.env.ORDERS_TEST_BUILD;
  if (build && file.startsWith(`${build}${path.sep}`)) {
    const relative = path.relative(build, file);
    return relative.endsWith('.js') ? `${relative.slice(0, -'.js'.length)}.ts` : relative;
  }
  return path.relative(process.cwd(), file);
}
