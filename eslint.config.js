// Lint rules that catch real bugs here: a forgotten `await` on a Temporal or Prisma call, type
// imports that drag runtime code into the workflow bundle, and Node built-ins in workflow code
// (workflows must stay deterministic; the tool enforces it, not memory).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Product code: what is built and deployed, plus the reference consumer an adopter copies.
const PRODUCT = [
  'activities/**/*.ts',
  'app/**/*.ts',
  'domain/**/*.ts',
  'domain-node/**/*.ts',
  'edges/**/*.ts',
  'examples/**/*.ts',
  'services/**/*.ts',
  'submission/**/*.ts',
  'vendors/**/*.ts',
  'worker/**/*.ts',
  'workflows/**/*.ts',
];
// The floors of the house, lowest first (docs/architecture.md, "The import rules lint enforces"). A
// folder imports the floors below its own and never one above it; the one exception is workflows/,
// which imports activities/ as types (the workflow bundle takes no activity code). test/ stands
// above everything.
const FLOORS = [
  ['domain'],
  ['domain-node', 'workflows'],
  ['services'],
  ['submission'],
  ['vendors'],
  ['activities'],
  ['worker'],
  ['edges'],
  ['app'],
  ['tools'],
  ['test'],
];
/** Why a folder lower down may not import this one. */
const WHY = {
  'domain-node': 'it needs Node built-ins, which domain/ may not use',
  workflows: 'the pure rules serve the workflows, not the other way round',
  services: 'it does I/O',
  submission: 'services/ is plumbing: it serves the start path and never imports it',
  vendors: 'the start path knows no vendor: a vendor imports submission/, never the other way round',
  activities: 'the start path and the vendors do not know what the workflows run',
  worker: 'what the worker runs does not know the process that runs it',
  edges: 'what serves every edge knows none of them',
  app: 'only tools/ and tests import the composition root: an entry point loads the settings and passes them down',
  tools: 'tools import the product, not the other way',
  test: 'only tests import a test; shared helpers live in tools/harness',
};
const floorOf = (folder) => FLOORS.findIndex((floor) => floor.includes(folder));
/** What an import of `folder` looks like; tools/ only from the root, not edges/mcp/tools/. */
const importsOf = (folder) =>
  folder === 'tools' ? ['../tools/**', '../../tools/**', '../../../tools/**'] : [`**/${folder}/**`];
/** One pattern per folder on a floor above `folder`'s. */
function above(folder) {
  return FLOORS.slice(floorOf(folder) + 1)
    .flat()
    .map((higher) => ({
      group: importsOf(higher),
      message: `${higher}/ stands on a floor above ${folder}/: ${WHY[higher]}.`,
      ...(folder === 'workflows' && higher === 'activities' ? { allowTypeImports: true } : {}),
    }));
}
const NO_NODE = { group: ['node:*'], message: 'Workflow code must be deterministic: no Node built-ins.' };
const NO_NODE_DOMAIN = {
  group: ['**/domain-node/**'],
  message: 'domain-node/ needs Node built-ins; workflow code and domain/ may not import it.',
};
const NO_IO = { group: ['pino', 'pg', '@prisma/*'], message: 'Workflow code does no I/O; call an activity.' };
/** What a folder may not import beyond the floors above it. */
const BESIDES = {
  domain: [NO_NODE, NO_IO],
  workflows: [NO_NODE, NO_IO, NO_NODE_DOMAIN],
};

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '**/generated/', '.venv/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // The TypeScript files of tsconfig.json; the plain-JavaScript scripts and bins are linted
        // without types (the last block).
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after'] },
          ],
        },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/only-throw-error': 'off',
    },
  },
  // The house rules: one rule per folder, refusing every floor above its own.
  ...FLOORS.flat()
    .filter((folder) => folder !== 'test')
    .map((folder) => ({
      files: [`${folder}/**/*.ts`],
      rules: { 'no-restricted-imports': ['error', { patterns: [...(BESIDES[folder] ?? []), ...above(folder)] }] },
    })),
  // The reference consumers run beside the service, as an adopter's would: on services/ and below.
  {
    files: ['examples/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: above('services') }] },
  },
  {
    files: PRODUCT,
    // The readers of the environment: the service's settings, their composition into one (and the
    // operator's, which may take the dev stack's addresses), and the reference consumers' own.
    ignores: ['services/config/**', 'app/env.ts', 'app/operator-config.ts', 'examples/consumer/consumer-config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Only services/config and app/env.ts read the environment; take the parsed setting from there.',
        },
      ],
    },
  },
  {
    files: ['tools/scripts/*.mjs', 'bin/*.mjs', 'eslint.config.js'],
    ...tseslint.configs.disableTypeChecked,
    // Its parser options kept (no TypeScript project for these files), the globals added.
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly' },
    },
  },
);
