import { missingV8Flags } from './v8-flags';

/**
 * Imported first by main.ts: says so when the server was started without its V8 flags (src/v8-flags.ts), for
 * instance with a bare `node dist/src/main.js`. It still runs, with a larger heap.
 */
const missing = missingV8Flags();
if (missing.length > 0) {
  process.emitWarning(
    `The server was started without the V8 flags ${missing.join(' ')}: its memory use will be higher. ` +
      'Start it with npm start, npm run start:prod or the Docker image, or pass the flags to node (src/v8-flags.ts).',
    { code: 'VOICE_AGENT_V8_FLAGS' },
  );
}
