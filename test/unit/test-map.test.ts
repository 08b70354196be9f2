// The map in test/README.md, "Which test owns what", held to the import graph: the committed tables
// are what `npm run test-map` writes now (tools/scripts/test-map.ts computes them), and every product
// module has a test but the named exemptions. Beside it, the layout the map relies on: a unit test
// stands in the folder of what it tests. File-system reads only.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import {
  MAP_END,
  MAP_START,
  ROOT,
  TEST_README,
  computeTestMap,
  filesUnder,
  generatedPart,
  productFolders,
  renderTestMap,
  withTestMap,
  type MapTable,
} from '../../tools/scripts/test-map.js';

const UNIT = 'test/unit';
/** The unit tests of the repository as a whole, the only ones at test/unit/ itself. */
const HOUSE_TESTS = ['house-rules.test.ts', 'linear-regexes.test.ts', 'test-map.test.ts'];
/**
 * Folders outside the production build whose files unit tests check: the deployment examples, the
 * docs, the reference consumers, and the pure logic of the project's tools (the bench's figures).
 */
const ALSO_MIRRORED = ['deploy', 'docs', 'examples', 'tools/bench'];
/** Modules no test reaches, and why that is enough. */
const UNTESTED: Record<string, string> = {
  'examples/consumer/main.ts':
    'the HTTP consumer as a process, a few lines of wiring; test/integration/consumer-doors.test.ts serves its consumer.ts in process',
};

const committedReadme = () => readFileSync(path.join(ROOT, TEST_README), 'utf8');

/** Why `doc`'s map is not the one `tables` make, or undefined when it is. */
async function staleMap(doc: string, tables: MapTable[]): Promise<string | undefined> {
  const committed = generatedPart(doc);
  if (committed === undefined) return `${TEST_README} lacks the markers ${MAP_START} … ${MAP_END}`;
  const expected = generatedPart(await withTestMap(doc, renderTestMap(tables)));
  if (committed === expected) return undefined;
  const committedLines = new Set(committed.split('\n'));
  const expectedLines = new Set(expected!.split('\n'));
  const changed = [
    ...[...committedLines].filter((line) => !expectedLines.has(line)).map((line) => `- ${line.slice(0, 100)}`),
    ...[...expectedLines].filter((line) => !committedLines.has(line)).map((line) => `+ ${line.slice(0, 100)}`),
  ];
  return `the map in ${TEST_README} is not what the imports give: run \`npm run test-map\` and commit it.\n${changed.slice(0, 20).join('\n')}`;
}

/** The modules without a test that are not exempt, and the exemptions that have one now. */
function untestedProblems(tables: MapTable[], exemptions: Record<string, string>): string[] {
  const rows = tables.flatMap((table) => table.rows);
  const untested = rows.filter((row) => row.tests.length === 0).map((row) => row.module);
  return [
    ...untested.filter((module) => !(module in exemptions)).map((module) => `no test reaches ${module}`),
    ...Object.keys(exemptions)
      .filter((module) => !untested.includes(module))
      .map((module) => `${module} is exempt, but a test reaches it now (or it is gone): drop the exemption`),
  ];
}

describe('the test map in test/README.md', () => {
  const tables = computeTestMap();

  it('is what `npm run test-map` writes', async () => {
    const problem = await staleMap(committedReadme(), tables);
    assert.equal(problem, undefined, problem);
  });

  it('is refused when a row is missing or a module has no row', async () => {
    const doc = committedReadme();
    const withoutRow = tables.map((table, i) => (i === 0 ? { ...table, rows: table.rows.slice(1) } : table));
    assert.match((await staleMap(doc, withoutRow)) ?? '', /run `npm run test-map`/);
    const extraRow = { module: 'domain/not-there.ts', tests: ['test/unit/domain/not-there.test.ts'], more: 0 };
    const withExtra = tables.map((table, i) => (i === 0 ? { ...table, rows: [...table.rows, extraRow] } : table));
    assert.match((await staleMap(doc, withExtra)) ?? '', /domain\/not-there\.ts/);
    assert.match((await staleMap('# no map here\n', tables)) ?? '', /lacks the markers/);
  });

  it('has a row for every module, with a test but for the named exemptions', () => {
    const rows = tables.flatMap((table) => table.rows);
    assert.ok(rows.length >= 150, `the module rows are computed (${rows.length})`);
    const problems = untestedProblems(tables, UNTESTED);
    assert.deepEqual(problems, [], `modules and their tests: ${problems.join('; ')}`);
  });

  it('refuses a module no test reaches, and an exemption a test reaches', () => {
    const emptied = tables.map((table, i) =>
      i === 0 ? { ...table, rows: table.rows.map((row, j) => (j === 0 ? { ...row, tests: [] } : row)) } : table,
    );
    const first = tables[0]!.rows[0]!.module;
    assert.ok(untestedProblems(emptied, UNTESTED).includes(`no test reaches ${first}`));
    const stale = untestedProblems(tables, { ...UNTESTED, [first]: 'tested after all' });
    assert.match(stale.join('; '), new RegExp(`${first.replace(/[.]/g, '\\.')} is exempt, but a test reaches it`));
  });

  it('names the tests that reach a module only by running an entry point', () => {
    const row = tables.flatMap((table) => table.rows).find((row) => row.module === 'app/worker-main.ts');
    assert.ok(row && row.tests.some((test) => test.startsWith('test/integration/')), JSON.stringify(row));
  });
});

/** The unit tests among `files` that stand in a folder mirroring no source folder. */
function astrayUnitTests(files: string[]): string[] {
  const mirrored = [...productFolders(), ...ALSO_MIRRORED];
  const isFolder = (dir: string) => existsSync(path.join(ROOT, dir)) && statSync(path.join(ROOT, dir)).isDirectory();
  return files
    .filter((file) => file.endsWith('.test.ts'))
    .filter((file) => {
      const dir = path.posix.dirname(path.posix.relative(UNIT, file));
      if (dir === '.') return !HOUSE_TESTS.includes(path.posix.basename(file));
      const underSource = mirrored.some((folder) => dir === folder || dir.startsWith(`${folder}/`));
      return !underSource || !isFolder(dir);
    });
}

describe("the unit tests' layout", () => {
  it('puts each unit test at the path of a source folder, or at test/unit/ when it tests the house', () => {
    const astray = astrayUnitTests(filesUnder(UNIT));
    assert.deepEqual(
      astray,
      [],
      `unit tests in a folder that mirrors no source folder (test/unit/<folder>/x.test.ts for <folder>/, or one of ${HOUSE_TESTS.join(', ')} at ${UNIT}/): ${astray.join(', ')}`,
    );
  });

  it('refuses a unit test in a folder no source has, or loose at test/unit/', () => {
    const astray = ['test/unit/domian/backoff.test.ts', 'test/unit/tools/x.test.ts', 'test/unit/backoff.test.ts'];
    assert.deepEqual(astrayUnitTests([...astray, 'test/unit/domain/backoff.test.ts']), astray);
  });
});
