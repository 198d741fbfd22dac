import * as v8 from 'node:v8';

/**
 * V8 settings of the server process, set before anything else is loaded (main.ts imports this first), so
 * that `npm start`, the Docker image and the benchmark run the same runtime. Only flags V8 reads while
 * running can be set here; none that size the heap at start-up (BENCHMARKS.md, "Performance").
 */
export const V8_FLAGS = [
  /**
   * No allocation-site pretenuring. V8 marks an allocation site "long-lived" when most of its objects
   * survived two young-generation collections, and from then on allocates its objects directly in the old
   * generation. Sites shared by start-up code (module loading, decorator metadata) and per-request code got
   * marked: every request then left garbage in the old generation (about 2 MB per young collection under
   * load), the old generation swelled to 150 MB between full collections, and each young collection took 4–7
   * ms instead of 1–2 ms, stalling every request in flight. Measured again after the adapter's prototype fix
   * (BENCHMARKS.md, change 14): without this flag the RSS under `GET /calls/{id}` was 213–250 MiB, not 184–190.
   */
  '--no-allocation-site-pretenuring',
  /**
   * The old generation grows to at most 3.5 × what survived the last full collection (V8 chooses up to 4 ×
   * on a machine with this much memory). Under load ~45 MB survives (mostly code and module sources), so the
   * old generation reached ~185 MB, nearly all garbage, before each full collection, and RSS peaked at
   * 305–308 MiB. At 3.5 × it peaked at 277–278 MiB (264–273 in the full runs since change 14; A/B under the
   * 200-row list since then: 260–263 MiB with the flag, 282–309 without). The price: full collections ~1.2 ×
   * as often, about 3 % more CPU on the smallest reads (marking, mostly on V8's helper threads). V8 reads this
   * flag at each full collection.
   */
  '--heap-growing-percent=250',
] as const;

for (const flag of V8_FLAGS) v8.setFlagsFromString(flag);
