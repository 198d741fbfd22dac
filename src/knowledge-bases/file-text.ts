import * as path from 'node:path';
import { codePointLength } from '../common/code-points';
import { CsvRows } from './csv';
import { FileReadError } from './file-read-error';
import { FileKind, textEncodingOf } from './file-type';
import { indexPieces, MAX_TEXT_CONTENT_LENGTH, toPassages } from './indexed-passages';
import type { NewPassage } from './knowledge-bases.repository';
import { PASSAGE_LENGTH, splitIntoPassages } from './passages';
import { checkDocxArchive } from './zip-archive';

/**
 * Reading an uploaded file: its text, then its passages. CPU-heavy and fed untrusted files, so it runs only in a
 * worker thread of its own (file-reading.worker.ts), never on the service's event loop.
 */

/** What a file yields: its text (what the source's `content` shows) and that text's passages. */
export interface FileReading {
  content: string;
  passages: NewPassage[];
}

/** Text read past this is not kept: a little more than what is indexed, so that the cut falls at a passage boundary. */
const MAX_READ_LENGTH = MAX_TEXT_CONTENT_LENGTH + PASSAGE_LENGTH;

export async function readFile(buffer: Buffer, kind: FileKind): Promise<FileReading> {
  if (kind === 'csv') return csvReading(decodeText(buffer));
  // Cut before it is split: what lies past what is indexed is not worth the work (two UTF-16 units per character at most).
  const text = storable((await fileText(buffer, kind)).slice(0, 2 * MAX_READ_LENGTH));
  const passages = toPassages(text);
  if (passages.length === 0) throw new FileReadError(NO_TEXT[kind]);
  return { content: cut(text), passages };
}

const NO_TEXT: Record<FileKind, string> = {
  pdf: 'The PDF has no text to read: it may hold only scanned images. Upload a PDF whose text can be selected',
  docx: 'The Word document has no text',
  html: 'The HTML file has no readable text',
  csv: 'The CSV file has no rows',
  markdown: 'The file has no text',
  text: 'The file has no text',
};

/** The parsers are loaded only for the files that need them (each worker reads one file). */
async function fileText(buffer: Buffer, kind: Exclude<FileKind, 'csv'>): Promise<string> {
  switch (kind) {
    case 'pdf':
      return pdfText(buffer);
    case 'docx':
      return docxText(buffer);
    case 'html':
      // The same reduction to readable text as a url source's page.
      return (await import('./readable-text.js')).readableText(decodeText(buffer));
    default:
      return decodeText(buffer);
  }
}

/** A text file's characters: UTF-8 (its byte order mark dropped), or UTF-16 with its mark; anything else is refused. */
export function decodeText(buffer: Buffer): string {
  const encoding = textEncodingOf(buffer);
  try {
    return new TextDecoder(encoding, { fatal: true }).decode(buffer);
  } catch {
    throw new FileReadError('The file is not valid UTF-8 text: save it as UTF-8 and upload it again');
  }
}

/** pdf.js's legacy build (the one for Node.js), loaded once a PDF is read. */
type PdfJs = typeof import('pdfjs-dist/legacy/build/pdf.mjs');
const PDFJS_DIR = path.dirname(require.resolve('pdfjs-dist/package.json'));

/**
 * The text of a PDF, page by page (pdf.js): a line break where pdf.js ends a line, a blank line where the gap
 * between two lines is wider than a line (a new paragraph) and between pages. Reading stops once MAX_READ_LENGTH
 * characters are read.
 */
async function pdfText(buffer: Buffer): Promise<string> {
  const pdfjs: PdfJs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const task = pdfjs.getDocument({
    data: new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength),
    // Nothing from the file runs as code, no font is installed, no request is made.
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    disableAutoFetch: true,
    // Text in CJK fonts is mapped to Unicode through these.
    cMapUrl: `${PDFJS_DIR}/cmaps/`,
    cMapPacked: true,
    standardFontDataUrl: `${PDFJS_DIR}/standard_fonts/`,
    verbosity: 0,
  });
  let document;
  try {
    document = await task.promise;
  } catch (error) {
    await task.destroy();
    const name = (error as Error).name;
    if (name === 'PasswordException') throw new FileReadError('The PDF is protected by a password: upload a copy without one');
    throw new FileReadError('The file is not a readable PDF: it is damaged, or not a PDF');
  }
  try {
    const pages: string[] = [];
    let length = 0;
    for (let number = 1; number <= document.numPages && length < MAX_READ_LENGTH; number++) {
      const page = await document.getPage(number);
      const text = pageText((await page.getTextContent()).items);
      page.cleanup();
      pages.push(text);
      length += text.length;
    }
    return pages.join('\n\n');
  } catch {
    throw new FileReadError('The PDF is damaged: its pages could not be read');
  } finally {
    await document.destroy();
  }
}

/** The part of pdf.js's text items read here; marked-content items (`{ type, id }`) carry no text. */
type PdfTextItem = { str: string; height: number; transform: number[] } | { type: string };

/**
 * A page's text items as lines, by their position rather than pdf.js's end-of-line marks (which it also sets
 * inside a line, before a shaped cluster of Indic text): a line break where the baseline moves, a blank line
 * (a new paragraph) where it moves by more than 1.5 lines.
 */
function pageText(items: PdfTextItem[]): string {
  let text = '';
  let lastY: number | undefined;
  let lineHeight = 0;
  for (const item of items) {
    if (!('str' in item) || !item.str) continue;
    const y = item.transform[5];
    const height = item.height || lineHeight;
    const moved = lastY === undefined ? 0 : Math.abs(lastY - y);
    if (lastY !== undefined && moved > 0.3 * height) text += moved > 1.5 * Math.max(height, lineHeight) ? '\n\n' : '\n';
    text += item.str;
    lastY = y;
    lineHeight = height;
  }
  return text.trim();
}

/** The text of a Word document (mammoth), once its archive has passed checkDocxArchive. */
async function docxText(buffer: Buffer): Promise<string> {
  await checkDocxArchive(buffer);
  const mammoth = (await import('mammoth')).default;
  try {
    return (await mammoth.extractRawText({ buffer })).value;
  } catch {
    throw new FileReadError('The file is not a readable Word document (.docx): it is damaged');
  }
}

/**
 * A CSV file as passages of whole rows: each row a line of `column: value` pairs (empty values left out), so
 * that each passage carries its header; rows packed into a passage while it stays within PASSAGE_LENGTH, and a
 * longer row cut like any text. Its content is those passages, a blank line apart.
 */
function csvReading(text: string): FileReading {
  const rows = new CsvRows(text);
  const header = rows.next();
  if (!header) throw new FileReadError('The CSV file is empty');
  const columns = header.map((name, index) => name.trim() || `Column ${index + 1}`);
  const pieces: string[] = [];
  let group = '';
  let length = 0;
  for (let row = rows.next(); row && length < MAX_READ_LENGTH; row = rows.next()) {
    const line = row
      .map((value, index) => [columns[index] ?? `Column ${index + 1}`, value.trim()])
      .filter(([, value]) => value)
      .map(([column, value]) => `${column}: ${value}`)
      .join('; ');
    if (!line) continue;
    const lineLength = codePointLength(line);
    length += lineLength;
    if (group && codePointLength(group) + 1 + lineLength <= PASSAGE_LENGTH) {
      group += `\n${line}`;
      continue;
    }
    if (group) pieces.push(group);
    group = lineLength <= PASSAGE_LENGTH ? line : '';
    if (!group) pieces.push(...splitIntoPassages(line));
  }
  if (group) pieces.push(group);
  const passages = indexPieces(pieces.map(storable));
  if (passages.length === 0) throw new FileReadError(NO_TEXT.csv);
  return { content: passages.map((passage) => passage.text).join('\n\n'), passages };
}

// eslint-disable-next-line no-control-regex -- NUL is what this removes
const UNSTORABLE_CHARACTERS = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Without what PostgreSQL text cannot hold (NUL, unpaired surrogates), which extracted text may contain. */
const storable = (text: string) => text.replace(UNSTORABLE_CHARACTERS, '');

/** The text as a source's `content`: at most MAX_TEXT_CONTENT_LENGTH characters (what is indexed). */
function cut(text: string): string {
  if (text.length <= MAX_TEXT_CONTENT_LENGTH) return text;
  return [...text].slice(0, MAX_TEXT_CONTENT_LENGTH).join('');
}
