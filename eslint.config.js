// Lint rules that catch real bugs here: a forgotten `await` on a Temporal or Prisma call, type
// imports that drag runtime code into the workflow bundle, and Node built-ins in workflow code
// (workflows must stay deterministic; the tool enforces it, not memory).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'generated/', '.venv/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['eslint.config.js', 'scripts/*.mjs', 'bin/*.mjs'] },
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
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'Workflow code must be deterministic: no Node built-ins.' },
            {
              group: ['**/db/**', '**/api/**', '**/temporal/**', '**/submission/**', 'pino', 'pg', '@prisma/*'],
              message: 'Workflow code does no I/O; call an activity.',
            },
            { group: ['**/activities/**'], message: 'Import activities as types only.', allowTypeImports: true },
          ],
        },
      ],
    },
  },
  {
    files: ['scripts/*.mjs', 'bin/*.mjs', 'eslint.config.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
