// typescript-eslint's type-checked rules find defects the compiler does not (a promise nobody awaits, a promise
// where a callback must return void, a value of type any spreading unchecked); Prettier owns the layout, so no
// formatting rule is enabled here.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', 'node_modules/', 'clients/typescript/dist/', '**/*.js', '**/*.cjs', '**/*.mjs', 'src/metadata.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // An async function without await is how an interface's async method is implemented synchronously.
      '@typescript-eslint/require-await': 'off',
      // `_name` marks a binding left unused on purpose (a destructured field dropped from a copy).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // Tests, benchmarks and scripts read response bodies that HTTP clients type as any (supertest's `body`):
    // the assertions check their shape, and the typed client's own test checks the types.
    files: ['test/**', 'bench/**', 'scripts/**', '**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
