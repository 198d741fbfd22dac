/** A benchmark's numeric command-line option: `--name 100` gives 100; `fallback` when it is not given. */
export function numberOption(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
}
