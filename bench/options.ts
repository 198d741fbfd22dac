/** A benchmark's command-line option as given: `--name value` gives 'value'; `fallback` when it is not given. */
export function stringOption(name: string, fallback: string): string;
export function stringOption(name: string): string | undefined;
export function stringOption(name: string, fallback?: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 && index + 1 < process.argv.length ? process.argv[index + 1] : fallback;
}

/** A benchmark's numeric command-line option: `--name 100` gives 100; `fallback` when it is not given. */
export function numberOption(name: string, fallback: number): number {
  const value = stringOption(name);
  return value === undefined ? fallback : Number(value);
}
