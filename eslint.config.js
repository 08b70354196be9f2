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
const NO_TOOLS = {
  group: ['../tools/**', '../../tools/**', '../../../tools/**'],
  message: 'Product code never imports a tool; tools import the product.',
};
const NO_EDGES = {
  group: ['**/edges/**'],
  message: 'Only an edge imports an edge: services, activities and the worker serve every edge alike.',
};
const NO_HEART = {
  group: ['**/submission/**', '**/vendors/**'],
  message: 'services/ is plumbing: it serves the start path and the vendors and never imports them.',
};
const NO_VENDORS = {
  group: ['**/vendors/**'],
  message: 'The start path knows no vendor: a vendor imports submission/, never the other way round.',
};
const NO_TESTS = { group: ['**/test/**'], message: 'Only tests import a test; shared helpers live in tools/harness.' };
const NO_NODE = { group: ['node:*'], message: 'Workflow code must be deterministic: no Node built-ins.' };
const NO_NODE_DOMAIN = {
  group: ['**/domain-node/**'],
  message: 'domain-node/ needs Node built-ins; workflow code and domain/ may not import it.',
};
const NO_IO = {
  group: ['**/services/**', '**/edges/**', '**/worker/**', 'pino', 'pg', '@prisma/*'],
  message: 'Workflow code does no I/O; call an activity.',
};

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '**/generated/', '.venv/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: {
          allowDefaultProject: ['eslint.config.js', 'tools/scripts/*.mjs', 'bin/*.mjs'],
          // The plain-JavaScript scripts and bins above, with room for a few more.
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 16,
        },
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
  // The house rules (docs/architecture.md, "The map of the root"): which folder may import which.
  {
    files: PRODUCT,
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_TOOLS, NO_TESTS] }] },
  },
  {
    files: ['activities/**/*.ts', 'worker/**/*.ts', 'domain-node/**/*.ts', 'vendors/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_TOOLS, NO_TESTS, NO_EDGES] }] },
  },
  {
    files: ['services/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_TOOLS, NO_TESTS, NO_EDGES, NO_HEART] }] },
  },
  {
    files: ['submission/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_TOOLS, NO_TESTS, NO_EDGES, NO_VENDORS] }] },
  },
  {
    files: ['domain/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_NODE, NO_IO, NO_NODE_DOMAIN, NO_TOOLS, NO_TESTS] }] },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            NO_NODE,
            NO_IO,
            NO_NODE_DOMAIN,
            NO_TOOLS,
            NO_TESTS,
            { group: ['**/activities/**'], message: 'Import activities as types only.', allowTypeImports: true },
          ],
        },
      ],
    },
  },
  {
    files: ['tools/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NO_TESTS] }] },
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
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
