import { HttpException, HttpStatus } from '@nestjs/common';
import { Transform, TransformCallback } from 'node:stream';
import type { ExportRow } from './calls.repository';
import { csvLine } from './csv';
import { CALL_LIST_ITEM_FIELDS } from './dto/call-response.dto';

export const EXPORT_FORMATS = ['csv', 'ndjson'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/**
 * An export of the account is already running (on any instance): one at a time per account, so that one account
 * cannot hold every export connection. A 429 with Retry-After: a limit on what one account uses at once (as the
 * rate limit is), to retry once the other export is done, not a conflict with the calls' state (a 409).
 */
export class AccountExportRunningException extends HttpException {
  readonly retryAfterSeconds = 10;

  constructor() {
    super('Another export of this account is running; one at a time per account: try again once it is done', HttpStatus.TOO_MANY_REQUESTS);
  }
}

/** How one format writes a file: its media type, its file name's extension, a first line, and a batch of calls. */
interface ExportWriter {
  contentType: string;
  extension: string;
  header: string;
  write(calls: ExportRow[]): string;
}

/** The fields whose values the export has as JSON text already. */
const JSON_TEXT_FIELDS: ReadonlySet<string> = new Set(['feedback', 'extractedData']);

/** The list item's value of one field, for the export: the callDate in ISO 8601, JSON values as JSON text. */
function exportValue(call: ExportRow, field: (typeof CALL_LIST_ITEM_FIELDS)[number]): string | number | boolean | null {
  if (field === 'callDate') return call.callDate.toISOString();
  if (field === 'feedback') return call.feedback ?? 'null';
  return call[field];
}

/**
 * A call as a CSV record: the list item's fields in the list's order (CALL_LIST_ITEM_FIELDS), JSON values as
 * JSON text, a null agentId as an empty cell.
 */
function csvRecord(call: ExportRow): string {
  return csvLine(CALL_LIST_ITEM_FIELDS.map((field) => String(exportValue(call, field) ?? '')));
}

/**
 * A call as one NDJSON line: exactly the list item's JSON (its fields in order), built field by field so that
 * the JSON values are written as the database gives them, never parsed and serialised again.
 */
function ndjsonLine(call: ExportRow): string {
  let line = '{';
  for (const field of CALL_LIST_ITEM_FIELDS) {
    const value = exportValue(call, field);
    line += `${line.length > 1 ? ',' : ''}"${field}":${JSON_TEXT_FIELDS.has(field) ? value : JSON.stringify(value)}`;
  }
  return `${line}}\n`;
}

const WRITERS: Record<ExportFormat, ExportWriter> = {
  csv: {
    contentType: 'text/csv; charset=utf-8',
    extension: 'csv',
    // RFC 4180 (src/calls/csv.ts): CRLF line ends, quotes doubled, formulas neutralised.
    header: csvLine(CALL_LIST_ITEM_FIELDS),
    write: (calls) => calls.map(csvRecord).join(''),
  },
  ndjson: {
    contentType: 'application/x-ndjson',
    extension: 'ndjson',
    header: '',
    write: (calls) => calls.map(ndjsonLine).join(''),
  },
};

export function exportWriter(format: ExportFormat): ExportWriter {
  return WRITERS[format];
}

/** `calls-2026-11-22.csv`: the UTC date of the export. */
export function exportFileName(format: ExportFormat, now = new Date()): string {
  return `calls-${now.toISOString().slice(0, 10)}.${WRITERS[format].extension}`;
}

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

  override _transform(rows: ExportRow[], _encoding: BufferEncoding, callback: TransformCallback): void {
    this.start();
    callback(null, this.writer.write(rows));
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
