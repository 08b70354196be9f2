// The map in test/README.md, "Which test owns what", checked against the files: every product
// module has a row, every module and test file it names exists, every test file is in one of its
// tables, and every test a row names reaches the module — by importing it, directly or through
// other files, or by running an entry point (a file path in its source) that does. Beside it, the
// layout the map relies on: a unit test stands in the folder of what it tests. File-system reads only.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOC = 'test/README.md';
const SECTION = '## Which test owns what';
/** Generated at install by `prisma generate`, not source: no row. */
const GENERATED = 'services/db/generated/';

const exists = (file: string) => existsSync(path.join(ROOT, file)) && statSync(path.join(ROOT, file)).isFile();
const relative = (absolute: string) => path.relative(ROOT, absolute).split(path.sep).join('/');

function filesUnder(dir: string): string[] {
  if (!existsSync(path.join(ROOT, dir))) return [];
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = `${dir}/${entry.name}`;
    return entry.isDirectory() ? filesUnder(file) : [file];
  });
}

/** The folders the production build compiles, and the bins. */
function productFolders(): string[] {
  const { include } = JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as {
    include: string[];
  };
  return [...include, 'bin'];
}

function productModules(): string[] {
  return productFolders()
    .flatMap(filesUnder)
    .filter((file) => /\.(ts|mjs)$/.test(file) && !file.startsWith(GENERATED))
    .sort();
}

const testFiles = () => filesUnder('test').filter((file) => file.endsWith('.test.ts'));

const UNIT = 'test/unit';
/** The unit tests of the repository as a whole, the only ones at test/unit/ itself. */
const HOUSE_TESTS = ['house-rules.test.ts', 'linear-regexes.test.ts', 'test-map.test.ts'];
/** Folders outside the production build whose files unit tests check: the deployment examples, the docs, the reference consumers. */
const ALSO_MIRRORED = ['deploy', 'docs', 'examples'];

// ---- What a file reaches ----------------------------------------------------------------------

const edgeCache = new Map<string, string[]>();

function resolveImport(from: string, specifier: string): string | undefined {
  const base = path.resolve(path.dirname(path.join(ROOT, from)), specifier);
  const candidates = specifier.endsWith('.js')
    ? [base.replace(/\.js$/, '.ts'), base]
    : [base, `${base}.ts`, path.join(base, 'index.ts')];
  return candidates.map(relative).find(exists);
}

const SCRIPTS = (
  JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts;

/** The files `file` imports, and the files it names as paths (the entry points it runs). */
function edges(file: string): string[] {
  const cached = edgeCache.get(file);
  if (cached) return cached;
  const source = readFileSync(path.join(ROOT, file), 'utf8');
  const found = new Set<string>();
  for (const [, specifier] of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = resolveImport(file, specifier!);
    if (target) found.add(target);
  }
  // A path in a string: from the file's folder (new URL(…, import.meta.url)), the root, or bin/.
  for (const [, named] of source.matchAll(/['"`]([\w./-]+\.(?:ts|mjs))['"`]/g)) {
    const target = [path.resolve(path.dirname(path.join(ROOT, file)), named!), path.join(ROOT, named!)]
      .concat(path.join(ROOT, 'bin', named!))
      .map(relative)
      .find(exists);
    if (target) found.add(target);
  }
  // A bin names its entry without extension: launch('app/cli-main').
  for (const [, entry] of source.matchAll(/\blaunch\(\s*['"]([\w./-]+)['"]\s*\)/g)) {
    if (exists(`${entry}.ts`)) found.add(`${entry}.ts`);
  }
  // An npm script it runs (execFile('npm', ['run', '--silent', 'build'])): the files the script names,
  // built ones (dist/x.js) by their source.
  for (const [, script] of source.matchAll(/['"]run['"],\s*(?:['"]--silent['"],\s*)?['"]([\w:-]+)['"]/g)) {
    const command = SCRIPTS[script!] ?? '';
    for (const [, named] of command.matchAll(/(?:dist\/)?([\w./-]+)\.(?:js|ts)\b/g)) {
      if (exists(`${named}.ts`)) found.add(`${named}.ts`);
    }
  }
  const list = [...found].filter((target) => target !== file);
  edgeCache.set(file, list);
  return list;
}

function reached(from: string): Set<string> {
  const seen = new Set([from]);
  const pending = [from];
  for (let file = pending.pop(); file; file = pending.pop()) {
    for (const next of edges(file)) {
      if (seen.has(next)) continue;
      seen.add(next);
      pending.push(next);
    }
  }
  return seen;
}

// ---- The map ----------------------------------------------------------------------------------

interface Row {
  module: string;
  tests: string[];
}

function section(): string {
  const doc = readFileSync(path.join(ROOT, DOC), 'utf8');
  const start = doc.indexOf(`\n${SECTION}\n`);
  assert.ok(start >= 0, `${DOC} has the section "${SECTION}"`);
  const end = doc.indexOf('\n## ', start + SECTION.length + 2);
  return doc.slice(start, end === -1 ? undefined : end);
}

const testPathsIn = (text: string) => [...text.matchAll(/`(test\/[\w./-]+\.test\.ts)`/g)].map(([, file]) => file!);

/** The module rows: table lines whose first cell is one file path outside test/. */
function moduleRows(text: string): Row[] {
  return text.split('\n').flatMap((line) => {
    const cells = line.split('|').map((cell) => cell.trim());
    const module = /^`([\w./-]+\.(?:ts|mjs))`$/.exec(cells[1] ?? '')?.[1];
    if (!line.startsWith('|') || !module || module.startsWith('test/')) return [];
    return [{ module, tests: testPathsIn(cells[2] ?? '') }];
  });
}

describe('the test map in test/README.md', () => {
  const text = section();
  const rows = moduleRows(text);

  it('has a row for every product module', () => {
    const named = new Set(rows.map((row) => row.module));
    const missing = productModules().filter((module) => !named.has(module));
    assert.deepEqual(missing, [], `product modules without a row in "${SECTION}": ${missing.join(', ')}`);
    assert.ok(rows.length >= 50, `the module rows are read (${rows.length})`);
  });

  it('names only modules that exist, each once', () => {
    const gone = rows.map((row) => row.module).filter((module) => !exists(module));
    assert.deepEqual(gone, [], `rows for modules that do not exist: ${gone.join(', ')}`);
    const twice = rows.map((row) => row.module).filter((module, i, all) => all.indexOf(module) !== i);
    assert.deepEqual(twice, [], `modules with two rows: ${twice.join(', ')}`);
  });

  it('names only test files that exist', () => {
    const gone = [...new Set(testPathsIn(text))].filter((file) => !exists(file));
    assert.deepEqual(gone, [], `test files named in "${SECTION}" that do not exist: ${gone.join(', ')}`);
  });

  it('has every test file under test/ in one of its tables', () => {
    const named = new Set(testPathsIn(text));
    const unlisted = testFiles().filter((file) => !named.has(file));
    assert.deepEqual(unlisted, [], `test files in no table of "${SECTION}": ${unlisted.join(', ')}`);
  });

  it('names for each module only tests that reach it, and says so when none does', () => {
    const reach = new Map<string, Set<string>>();
    const reaches = (test: string, module: string) => {
      if (!reach.has(test)) reach.set(test, reached(test));
      return reach.get(test)!.has(module);
    };
    const wrong = rows.flatMap((row) =>
      row.tests.filter((test) => exists(test) && !reaches(test, row.module)).map((test) => `${row.module}: ${test}`),
    );
    assert.deepEqual(wrong, [], `tests named for a module they neither import nor run: ${wrong.join('; ')}`);
    const untested = rows.filter((row) => row.tests.length === 0).map((row) => row.module);
    const reachedAfterAll = untested.filter((module) => testFiles().some((test) => reaches(test, module)));
    assert.deepEqual(
      reachedAfterAll,
      [],
      `rows saying no test reaches a module one does: ${reachedAfterAll.join(', ')}`,
    );
  });
});

describe("the unit tests' layout", () => {
  it('puts each unit test at the path of a source folder, or at test/unit/ when it tests the house', () => {
    const mirrored = [...productFolders(), ...ALSO_MIRRORED];
    const isFolder = (dir: string) => existsSync(path.join(ROOT, dir)) && statSync(path.join(ROOT, dir)).isDirectory();
    const astray = filesUnder(UNIT)
      .filter((file) => file.endsWith('.test.ts'))
      .filter((file) => {
        const dir = path.posix.dirname(path.posix.relative(UNIT, file));
        if (dir === '.') return !HOUSE_TESTS.includes(path.posix.basename(file));
        const underSource = mirrored.some((folder) => dir === folder || dir.startsWith(`${folder}/`));
        return !underSource || !isFolder(dir);
      });
    assert.deepEqual(
      astray,
      [],
      `unit tests in a folder that mirrors no source folder (test/unit/<folder>/x.test.ts for <folder>/, or one of ${HOUSE_TESTS.join(', ')} at ${UNIT}/): ${astray.join(', ')}`,
    );
  });
});
