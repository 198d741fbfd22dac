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
   * marked: every request then left garbage in the old generation, which swelled between full collections, and
   * each young collection took longer, stalling every request in flight (docs/experiments.md).
   */
  '--no-allocation-site-pretenuring',
  /**
   * The old generation grows to at most 3.5 × what survived the last full collection (V8 chooses up to 4 ×
   * on a machine with this much memory): the survivors are mostly code and module sources and what grows beyond
   * them is nearly all garbage of finished requests, so this lowers the RSS's peak for a little more frequent
   * marking, mostly on V8's helper threads (docs/experiments.md). V8 reads this flag at each full collection.
   */
  '--heap-growing-percent=250',
] as const;

/** The flags of V8_FLAGS missing from a process's command line (its `process.execArgv`). */
export function missingV8Flags(execArgv: readonly string[] = process.execArgv): string[] {
  return V8_FLAGS.filter((flag) => !execArgv.includes(flag));
}
