import * as v8 from 'node:v8';

/**
 * V8 settings of the server process, set before anything else is loaded (main.ts imports this first), so
 * that `npm start`, the Docker image and the benchmark run the same runtime.
 *
 * No allocation-site pretenuring: V8 marks an allocation site "long-lived" when most of its objects survived
 * two young-generation collections, and from then on allocates its objects directly in the old generation.
 * Sites shared by start-up code (module loading, decorator metadata) and per-request code got marked: every
 * request then left garbage in the old generation (about 2 MB per young collection under load), the old
 * generation swelled to 150 MB between full collections, and each young collection took 4–7 ms instead of
 * 1–2 ms, stalling every request in flight (BENCHMARKS.md, "Performance").
 */
v8.setFlagsFromString('--no-allocation-site-pretenuring');
