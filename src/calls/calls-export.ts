import { Transform, TransformCallback } from 'node:stream';
import type { CallRow } from './calls.repository';
import { csvLine } from './csv';
import { CALL_LIST_ITEM_FIELDS, CallListItemResponse, toCallListItemResponse } from './dto/call-response.dto';

export const EXPORT_FORMATS = ['csv', 'ndjson'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** How one format writes a file: its media type, its file name's extension, a first line, and a batch of calls. */
interface ExportWriter {
  contentType: string;
  extension: string;
  header: string;
  write(calls: CallListItemResponse[]): string;
}

/** A call as the cells of a CSV line, in the list's field order; JSON values as JSON text. */
function csvCells(call: CallListItemResponse): string[] {
  return CALL_LIST_ITEM_FIELDS.map((field) => {
    const value = call[field];
    if (field === 'feedback' || field === 'extractedData') return JSON.stringify(value);
    return value === null ? '' : String(value);
  });
}

const WRITERS: Record<ExportFormat, ExportWriter> = {
  csv: {
    contentType: 'text/csv; charset=utf-8',
    extension: 'csv',
    // RFC 4180 (src/calls/csv.ts): CRLF line ends, quotes doubled, formulas neutralised.
    header: csvLine(CALL_LIST_ITEM_FIELDS),
    write: (calls) => calls.map((call) => csvLine(csvCells(call))).join(''),
  },
  ndjson: {
    contentType: 'application/x-ndjson',
    extension: 'ndjson',
    header: '',
    write: (calls) => calls.map((call) => `${JSON.stringify(call)}\n`).join(''),
  },
};

export function exportWriter(format: ExportFormat): ExportWriter {
  return WRITERS[format];
}

/** `calls-2026-11-22.csv`: the UTC date of the export. */
export function exportFileName(format: ExportFormat, now = new Date()): string {
  return `calls-${now.toISOString().slice(0, 10)}.${WRITERS[format].extension}`;
}

/** Rows per piece of text pushed: about 25 KB of CSV. */
const ROWS_PER_CHUNK = 100;

/**
 * Turns the batches of rows of CallsRepository.streamAll into the file's text, one chunk per batch, the
 * format's first line before the first (also when there are no calls). Backpressure passes through: the next
 * batch is fetched only when the response has taken this one.
 */
export class ExportFormatter extends Transform {
  private started = false;

  constructor(private readonly writer: ExportWriter) {
    super({ writableObjectMode: true, writableHighWaterMark: 1 });
  }

  override _transform(rows: CallRow[], _encoding: BufferEncoding, callback: TransformCallback): void {
    this.start();
    // In slices, so that each piece of text stays a young, short-lived string: a whole batch's text (over 128 KB)
    // would be allocated in V8's large-object space, which only full collections free, and the heap would swell.
    for (let start = 0; start < rows.length; start += ROWS_PER_CHUNK) {
      this.push(this.writer.write(rows.slice(start, start + ROWS_PER_CHUNK).map(toCallListItemResponse)));
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.start();
    callback();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    if (this.writer.header) this.push(this.writer.header);
  }
}
