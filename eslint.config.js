// Flat config: typescript-eslint's recommended rules on every TypeScript file of the repository, and the
// layers' import arrows (docs/architecture.md): the kernel imports no adapter, production code no demo or test kit,
// adapters no worker.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import {
  adapterImportRule,
  kernelImportRule,
  productionImportRule,
  WORKER_FREE_FOLDERS,
} from './scripts/import-layers.js';

export default tseslint.config(
  { ignores: ['node_modules/**', '**/dist/**', 'reports/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/kernel/**', 'src/demo/**', 'src/testing/**', 'src/testing.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': productionImportRule },
  },
  {
    files: WORKER_FREE_FOLDERS.map((folder) => `src/${folder}/**/*.ts`),
    rules: { '@typescript-eslint/no-restricted-imports': adapterImportRule },
  },
  {
    files: ['src/kernel/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': kernelImportRule },
  },
);
