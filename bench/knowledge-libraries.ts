/**
 * The knowledge files' hand-written pieces against the libraries that could replace them (issue 41), in one process,
 * each measured in turn, 15 times, the median and the fastest reported:
 * - the CSV reader (csv.ts, CsvRows) against csv-parse, streaming (so that, like CsvRows, it parses only the rows
 *   that are read: a file's reading stops at about 520,000 characters), on 18.5 MiB of rows with quoted commas and
 *   quotes, and on one quoted value of 2 MiB;
 * - the DOCX check's counting inflater (zip-archive.ts: node:zlib's stream) against fflate's streaming Inflate, on
 *   the most a DOCX may inflate to (100 MiB of Word XML).
 *   node -r ./scripts/register.js bench/knowledge-libraries.ts
 * Writes bench/results/<date>-knowledge-libraries.json.
 */
import { parse } from 'csv-parse';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { createInflateRaw } from 'node:zlib';
import { Inflate } from 'fflate';
import { repeatedDeflate } from '../scripts/knowledge-fixtures';
import { CsvRows } from '../src/knowledge-bases/csv';
import { median, round } from './stats';

const ROOT = path.resolve(__dirname, '..');
const RUNS = 15;
/** About what a file's reading keeps (MAX_READ_LENGTH): the rows are read until their text is this long. */
const READ_LENGTH = 520_000;

function csvRows(rows: number): string {
  const lines = ['Product,Price (INR),Notes,City,Code'];
  for (let index = 0; index < rows; index++)
    lines.push(`Item ${index},${(index * 7) % 5000},"Notes, with a comma ${index}; and ""quotes""",Chennai,C${index}`);
  return lines.join('\r\n');
}

/** The rows read by CsvRows until READ_LENGTH characters. */
function withCsvRows(text: string): number {
  const rows = new CsvRows(text);
  let [length, count] = [0, 0];
  for (let row = rows.next(); row && length < READ_LENGTH; row = rows.next(), count++) length += row.join('; ').length;
  return count;
}

/** The same with csv-parse, fed 64 KiB at a time and stopped once enough is read. */
async function withCsvParse(text: string): Promise<number> {
  const slices = function* () {
    for (let start = 0; start < text.length; start += 64 * 1024) yield text.slice(start, start + 64 * 1024);
  };
  const parser = Readable.from(slices()).pipe(
    parse({ delimiter: ',', relax_quotes: true, relax_column_count: true, skip_empty_lines: true }),
  );
  let [length, count] = [0, 0];
  for await (const row of parser as AsyncIterable<string[]>) {
    length += row.join('; ').length;
    count++;
    if (length >= READ_LENGTH) break;
  }
  parser.destroy();
  return count;
}

/** What a deflated stream inflates to, counted (zip-archive.ts's way: node:zlib's stream). */
function withZlib(data: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const inflater = createInflateRaw();
    let bytes = 0;
    inflater.on('data', (chunk: Buffer) => (bytes += chunk.length));
    inflater.once('end', () => resolve(bytes));
    inflater.once('error', reject);
    inflater.end(data);
  });
}

/** The same with fflate's streaming Inflate, fed 16 KiB at a time (so that no push inflates much at once). */
function withFflate(data: Buffer): number {
  let bytes = 0;
  const inflater = new Inflate((chunk) => (bytes += chunk.length));
  for (let start = 0; start < data.length; start += 16 * 1024)
    inflater.push(data.subarray(start, start + 16 * 1024), start + 16 * 1024 >= data.length);
  return bytes;
}

async function measure(name: string, run: () => unknown) {
  const ms: number[] = [];
  let result: unknown;
  for (let index = 0; index < RUNS; index++) {
    const started = process.hrtime.bigint();
    result = await run();
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  const figures = { name, result, medianMs: round(median(ms)), fastestMs: round(Math.min(...ms)) };
  process.stderr.write(`[bench:knowledge-libraries] ${JSON.stringify(figures)}\n`);
  return figures;
}

async function main(): Promise<void> {
  const rows = csvRows(250_000);
  const longValue = `a,"${'x'.repeat(2 * 1024 * 1024)}"\n`;
  const paragraphs = Buffer.from(
    Array.from(
      { length: 20_000 },
      (_, index) => `<w:p><w:r><w:t>Paragraph ${index} of the handbook, with its words.</w:t></w:r></w:p>`,
    ).join(''),
  );
  const xml = repeatedDeflate(paragraphs, Math.floor((100 * 1024 * 1024) / paragraphs.length));
  const results = [];
  // Each pair in turn, ours first then the library, so that the machine's load falls on both alike.
  for (const [text, what] of [
    [rows, `${round(rows.length / 2 ** 20)} MiB of CSV rows`],
    [longValue, 'one quoted CSV value of 2 MiB'],
  ] as const) {
    results.push(await measure(`CsvRows: ${what}`, () => withCsvRows(text)));
    results.push(await measure(`csv-parse: ${what}`, () => withCsvParse(text)));
  }
  const what = `${round(xml.size / 2 ** 20)} MiB of Word XML (${round(xml.deflated.length / 2 ** 20, 2)} MiB deflated)`;
  results.push(await measure(`node:zlib stream: ${what}`, () => withZlib(xml.deflated)));
  results.push(await measure(`fflate Inflate: ${what}`, () => withFflate(xml.deflated)));
  const report = {
    benchmark: 'knowledge-libraries',
    date: new Date().toISOString(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
    machine: { node: process.version, cpus: os.cpus().length, loadAverage: os.loadavg() },
    runs: RUNS,
    results,
  };
  const file = path.join(ROOT, 'bench', 'results', `${report.date.slice(0, 10)}-knowledge-libraries.json`);
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  process.stderr.write(`[bench:knowledge-libraries] wrote ${path.relative(ROOT, file)}\n`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
