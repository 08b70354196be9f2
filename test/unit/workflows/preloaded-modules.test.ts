// The workflow modules are preloaded: evaluated once in the worker's reused V8 context and shared by
// every run (worker/workflow-bundle.ts). A module scope that held anything a run could change would
// leak it into the next run, and a replay would then decide differently from the run it replays. So
// the module scope of every file the bundle reaches from workflows/index.ts may hold only what no run
// can write: constants, functions, read-only tables, and the SDK's definitions and activity proxies.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { ROOT } from '../../../tools/scripts/test-map.js';

/** Calls allowed at module scope: each returns a definition or a proxy that holds nothing of a run. */
const DEFINERS = new Set([
  'proxyActivities',
  'proxyLocalActivities',
  'defineQuery',
  'defineUpdate',
  'defineSignal',
  'defineSearchAttributeKey',
  'declareVersioningBehaviour',
]);

/** A type annotation that makes every write a compile error. */
const READ_ONLY_TYPE = /^(Readonly(Map|Set|Array)?<|readonly )/;

/** What in `source`'s module scope a run could write, one line each; empty when nothing. */
function writableModuleState(file: string, source: string): string[] {
  const sourceFile = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) =>
    found.push(`${file}:${sourceFile.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${what}`);
  const isDefinerCall = (node: ts.Expression) =>
    ts.isCallExpression(node) && ts.isIdentifier(node.expression) && DEFINERS.has(node.expression.text);
  for (const statement of sourceFile.statements) {
    if (ts.isExpressionStatement(statement) && !isDefinerCall(statement.expression)) {
      at(statement, `runs ${statement.expression.getText(sourceFile).slice(0, 40)} at module scope`);
    }
    if (ts.isClassDeclaration(statement)) {
      for (const member of statement.members) {
        const modifiers = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : [];
        const isStatic = modifiers.some((modifier) => modifier.kind === ts.SyntaxKind.StaticKeyword);
        const isReadonly = modifiers.some((modifier) => modifier.kind === ts.SyntaxKind.ReadonlyKeyword);
        if (ts.isPropertyDeclaration(member) && isStatic && !isReadonly) {
          at(
            member,
            `${statement.name?.text ?? 'a class'}.${member.name.getText(sourceFile)} is a writable static field`,
          );
        }
      }
    }
    if (!ts.isVariableStatement(statement)) continue;
    if (!(statement.declarationList.flags & ts.NodeFlags.Const)) {
      at(statement, 'declares a let or var at module scope');
      continue;
    }
    for (const declaration of statement.declarationList.declarations) {
      const name = declaration.name.getText(sourceFile);
      if (!declaration.initializer) continue;
      // What the value is under its parentheses and casts; a cast to a read-only type counts as one.
      let initializer = declaration.initializer;
      let type = declaration.type?.getText(sourceFile);
      let constant = false;
      for (;;) {
        if (ts.isParenthesizedExpression(initializer)) initializer = initializer.expression;
        else if (ts.isAsExpression(initializer) || ts.isSatisfiesExpression(initializer)) {
          const named = initializer.type.getText(sourceFile);
          if (named === 'const') constant = true;
          else if (ts.isAsExpression(initializer)) type = named;
          initializer = initializer.expression;
        } else break;
      }
      const readOnly = constant || (type !== undefined && READ_ONLY_TYPE.test(type));
      if (ts.isNewExpression(initializer) && !readOnly) {
        at(declaration, `${name} is a writable ${initializer.expression.getText(sourceFile)}`);
      }
      if ((ts.isArrayLiteralExpression(initializer) || ts.isObjectLiteralExpression(initializer)) && !readOnly) {
        at(declaration, `${name} is a writable ${ts.isArrayLiteralExpression(initializer) ? 'array' : 'object'}`);
      }
      if (ts.isRegularExpressionLiteral(initializer) && /\/[a-z]*[gy][a-z]*$/.test(initializer.text)) {
        at(declaration, `${name} is a regular expression that keeps its lastIndex`);
      }
      if (ts.isCallExpression(initializer) && !isDefinerCall(initializer)) {
        at(declaration, `${name} is what ${initializer.expression.getText(sourceFile)}() returned`);
      }
    }
  }
  return found;
}

/** The project's files the bundle holds: the value imports from workflows/index.ts, followed. */
function bundledFiles(): string[] {
  const seen = new Set<string>();
  const queue = ['workflows/index.ts'];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const sourceFile = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest);
    for (const statement of sourceFile.statements) {
      const valueImport =
        (ts.isImportDeclaration(statement) && !statement.importClause?.isTypeOnly) ||
        (ts.isExportDeclaration(statement) && !statement.isTypeOnly);
      const specifier = (statement as ts.ImportDeclaration | ts.ExportDeclaration).moduleSpecifier;
      if (!valueImport || !specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) continue;
      const target = path.posix.join(path.posix.dirname(file), specifier.text.replace(/\.js$/, '.ts'));
      if (existsSync(path.join(ROOT, target))) queue.push(target);
    }
  }
  return [...seen];
}

describe('the preloaded workflow modules hold nothing a run can write', () => {
  it('reaches the workflows and the domain modules they use', () => {
    const files = bundledFiles();
    for (const expected of [
      'workflows/order-workflow.ts',
      'workflows/compensation-workflow.ts',
      'domain/error-classification.ts',
    ]) {
      assert.ok(files.includes(expected), `${expected} among ${files.join(', ')}`);
    }
    assert.ok(!files.some((file) => file.startsWith('activities/')), 'activities are imported as types only');
  });

  it('finds no writable state in any of their module scopes', () => {
    const found = bundledFiles().flatMap((file) =>
      writableModuleState(file, readFileSync(path.join(ROOT, file), 'utf8')),
    );
    assert.deepEqual(found, []);
  });

  it('would refuse a counter, a cache, a list, an object, a call, a stateful regex and a static field at module scope', () => {
    const broken = [
      'let runs = 0;',
      'const seen = new Map<string, number>();',
      'const orders: string[] = [];',
      'const settings = { retries: 3 };',
      'const clock = makeClock();',
      'track(runs);',
      'const table: ReadonlyMap<string, number> = new Map();',
      "const KINDS = ['a', 'b'] as const;",
      "const { writeOrder } = proxyLocalActivities({ startToCloseTimeout: '1s' });",
      'const cache = new Map() as Map<string, number>;',
      'const NEXT = /x/g;',
      'class Counter {',
      '  static count = 0;',
      '  static readonly LIMIT = 3;',
      '}',
      "const STATUSES = (['A', 'B'] as const) satisfies readonly string[];",
    ].join('\n');
    assert.deepEqual(writableModuleState('broken.ts', broken), [
      'broken.ts:1 declares a let or var at module scope',
      'broken.ts:2 seen is a writable Map',
      'broken.ts:3 orders is a writable array',
      'broken.ts:4 settings is a writable object',
      'broken.ts:5 clock is what makeClock() returned',
      'broken.ts:6 runs track(runs) at module scope',
      'broken.ts:10 cache is a writable Map',
      'broken.ts:11 NEXT is a regular expression that keeps its lastIndex',
      'broken.ts:13 Counter.count is a writable static field',
    ]);
  });
});
