// Runs TypeScript sources directly (CLI, scripts, tests that spawn the server): `node -r ./scripts/register.js file.ts`.
// Compiles with swc, and resolves `./x.js` imports (as tsc's node20 module mode wants them written) to `./x.ts`.
require('@swc-node/register');
const Module = require('node:module');

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  try {
    return resolveFilename.call(this, request, ...rest);
  } catch (error) {
    if (request.startsWith('.') && request.endsWith('.js')) return resolveFilename.call(this, request.slice(0, -3), ...rest);
    throw error;
  }
};
