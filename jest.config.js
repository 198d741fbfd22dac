/** Tests run against a real PostgreSQL: test/global-setup.ts starts an embedded one (or uses DATABASE_URL). */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];

const ESM_ONLY_PACKAGES = [
  '@nestjs',
  'css-select',
  'css-what',
  'nth-check',
  'boolbase',
  'cssomnom',
  'stemmer',
  '@echogarden',
  'mpg123-decoder',
  '@wasm-audio-decoders',
  'simple-yenc',
];

module.exports = {
  rootDir: '.',
  testEnvironment: 'node',
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.spec.ts'],
  // NestJS 12 and linkedom's CSS selector engine (css-select and its dependencies, nested ones included) ship ES
  // modules only, which Node >= 20.19 requires natively but Jest (before Node 24.9) cannot: compile them to CommonJS.
  transform: { '^.+\\.(t|j)s$': swc },
  transformIgnorePatterns: [`^(?!.*/node_modules/(${ESM_ONLY_PACKAGES.join('|')})/).*/node_modules/`],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  setupFiles: ['<rootDir>/test/worker-database.setup.ts'],
  // Three on CI's two cores: the voice, socket and process tests spend most of their time waiting on real time
  // (test/voice-calls.spec.ts: 81 s for 22 s of CPU), so a third worker fills the cores. The whole suite here: 700 s
  // with two, 481 s with three, at a similar load of other work.
  maxWorkers: 3,
  testTimeout: 30_000,
};
