// The unit files `npm test` runs each in a process of its own rather than in the one unit process
// (tools/scripts/unit-files.ts): a file that mocks the process's clock and timers (`mock.timers`
// with `Date`) would have them mocked under every other file's tests there too.
export const UNIT_FILES_OF_THEIR_OWN = ['test/unit/submission/deadline.test.ts'];
