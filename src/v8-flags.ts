/**
 * V8 settings of the server process. They go on its command line, `node <flags> dist/src/main.js`: in the
 * `start:prod` script (which `npm start` runs), the Dockerfile's CMD, and wherever bench/ and scripts/ start
 * the server; src/runtime-flags.ts warns when the server was started without them, and
 * test/runtime-flags.spec.ts starts the server as `start:prod` does and expects no warning. (Setting them with
 * v8.setFlagsFromString after start-up is unsupported: Node documents that behaviour as undefined.)
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

/** The flags of V8_FLAGS missing from a process's command line (its `process.execArgv`). */
export function missingV8Flags(execArgv: readonly string[] = process.execArgv): string[] {
  return V8_FLAGS.filter((flag) => !execArgv.includes(flag));
}
