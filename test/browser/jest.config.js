/**
 * `npm run test:browser`: the embeddable widget in a real Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core). Same transform and test database as `npm test` (its globalSetup), run on its own.
 */
const base = require('../../jest.config.js');

module.exports = {
  ...base,
  rootDir: '../..',
  testMatch: ['<rootDir>/test/browser/**/*.browser.ts'],
  maxWorkers: 1,
  testTimeout: 60_000,
};
