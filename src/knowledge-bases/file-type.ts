/**
 * The type of an uploaded file, decided by its first bytes (SNIFF_BYTES of them), never by the name or the
 * Content-Type the client gave: PDF and DOCX by their signatures, HTML by its opening tags, and anything else
 * only if it is text (UTF-8, or UTF-16 with its byte order mark). Plain text has no signature, so among text
 * files the name's extension (or the client's type) only tells CSV and Markdown from plain text.
 */

export type FileKind = 'pdf' | 'docx' | 'html' | 'csv' | 'markdown' | 'text';

/** The `contentType` a source of each kind reports. */
export const CONTENT_TYPES: Record<FileKind, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  html: 'text/html',
  csv: 'text/csv',
  markdown: 'text/markdown',
  text: 'text/plain',
};

/** How much of the start of a file decides its type. */
export const SNIFF_BYTES = 8 * 1024;

export const UNSUPPORTED_FILE_TYPE = 'Unsupported file type: only PDF, DOCX, Markdown, plain text (UTF-8), HTML and CSV files are read';

/** PDF readers accept the header anywhere in the first 1,024 bytes. */
const PDF_HEADER_WITHIN = 1024;
const ZIP_LOCAL_HEADER = Buffer.from('PK\x03\x04', 'latin1');
/** Parts that only other Office Open XML and OpenDocument files have: a spreadsheet or a presentation is not a DOCX. */
const NOT_WORD_PARTS = /^(xl\/|ppt\/|mimetype$)/;
const HTML_START = /^\s*(?:<!--[\s\S]*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]/i;
/** Control characters that text files do not hold (tab, line feed, form feed and carriage return aside). */
// eslint-disable-next-line no-control-regex -- control characters are what this finds
const BINARY_CONTROLS = /[\u0000-\u0008\u000b\u000e-\u001a\u001c-\u001f]/;

const extensionOf = (fileName: string) => /\.([^.]+)$/.exec(fileName)?.[1].toLowerCase() ?? '';
const declared = (mimeType: string) => mimeType.split(';')[0].trim().toLowerCase();

/**
 * The kind of a file from its first bytes (`head`: SNIFF_BYTES, or the whole file when it is shorter), or
 * undefined when it is not one that can be read.
 */
export function sniffFileKind(head: Buffer, fileName: string, mimeType: string): FileKind | undefined {
  if (head.subarray(0, PDF_HEADER_WITHIN).includes('%PDF-')) return 'pdf';
  if (head.subarray(0, 4).equals(ZIP_LOCAL_HEADER)) return firstZipEntry(head)?.match(NOT_WORD_PARTS) ? undefined : 'docx';
  const text = headText(head);
  if (text === undefined || BINARY_CONTROLS.test(text)) return undefined;
  if (HTML_START.test(text)) return 'html';
  const extension = extensionOf(fileName);
  const type = declared(mimeType);
  if (extension === 'csv' || type === 'text/csv') return 'csv';
  if (['md', 'markdown', 'mdown', 'mkd'].includes(extension) || type === 'text/markdown') return 'markdown';
  return 'text';
}

/** The name of a ZIP archive's first entry (from its local header), if the head holds it. */
function firstZipEntry(head: Buffer): string | undefined {
  if (head.length < 30) return undefined;
  const length = head.readUInt16LE(26);
  return head.length >= 30 + length ? head.toString('utf8', 30, 30 + length) : undefined;
}

/** The head decoded as text (UTF-8, or UTF-16 with its byte order mark), or undefined when it is not text. */
function headText(head: Buffer): string | undefined {
  const encoding = textEncodingOf(head);
  try {
    // `stream`: the head may end in the middle of a character, which is not an error.
    return new TextDecoder(encoding, { fatal: true }).decode(head, { stream: true });
  } catch {
    return undefined;
  }
}

/** The encoding of a text file: UTF-16 when it starts with that byte order mark, UTF-8 otherwise (its own mark is optional). */
export function textEncodingOf(start: Buffer): 'utf-8' | 'utf-16le' | 'utf-16be' {
  if (start[0] === 0xff && start[1] === 0xfe) return 'utf-16le';
  if (start[0] === 0xfe && start[1] === 0xff) return 'utf-16be';
  return 'utf-8';
}
