/**
 * A small RFC 4180 writer for the export: csv-stringify's per-field generality (multi-character delimiters,
 * quoting rules, casts) took a large share of the service's CPU in an export, which needs none of it
 * (docs/experiments.md). Tested against a real parser (csv-parse).
 */

/** A cell a spreadsheet would run as a formula: it begins with = + - @, a tab or a carriage return (or a full-width = + - @). */
const FORMULA_START = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;
/** A cell that must be quoted: it holds a quote, a comma or a line break. */
const NEEDS_QUOTES = /[",\r\n]/;
/** Either of the two: most cells are neither, and pay one test. */
const NEEDS_WORK = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]|[",\r\n]/;

/** One cell: a formula neutralised with a leading `'`, then quoted (quotes doubled) when it must be. */
export function csvCell(value: string): string {
  if (!NEEDS_WORK.test(value)) return value;
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One record, CRLF-terminated. */
export function csvLine(cells: readonly string[]): string {
  let line = '';
  for (let index = 0; index < cells.length; index++) line += (index ? ',' : '') + csvCell(cells[index]);
  return `${line}\r\n`;
}
