/**
 * What is kept of an uploaded file's name. A browser sends the base name, but other clients may send a path
 * (`C:\Users\me\faq.pdf`, `../../etc/passwd`), control characters, NUL (which PostgreSQL text cannot hold) or
 * a name of any length; the name is only ever shown back, never used as a path, and is kept as follows:
 * - only its last path segment (after the last `/` or `\`);
 * - without control characters (C0, DEL, C1), lone surrogates, and white space at either end;
 * - at most MAX_FILE_NAME_LENGTH characters (code points), cut before its extension so that the extension stays;
 * - `file` when nothing is left.
 */

export const MAX_FILE_NAME_LENGTH = 255;
/** A source's `name` defaults to its file name, within the `name` limit. */
export const MAX_SOURCE_NAME_LENGTH = 200;

const FALLBACK_NAME = 'file';
// eslint-disable-next-line no-control-regex -- control characters are what this removes
const UNWANTED = /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** An extension worth keeping when the name is cut: a dot, then up to 10 letters or digits. */
const EXTENSION = /\.[\p{L}\p{N}]{1,10}$/u;

/** The file name as kept on the source (`fileName`). */
export function cleanFileName(raw: string): string {
  const base = raw.split(/[/\\]/).pop()!.replace(UNWANTED, '').trim();
  return shorten(base, MAX_FILE_NAME_LENGTH) || FALLBACK_NAME;
}

/** A kept file name as a source's default `name` (at most MAX_SOURCE_NAME_LENGTH characters). */
export const sourceNameOf = (fileName: string) => shorten(fileName, MAX_SOURCE_NAME_LENGTH);

/** At most `max` code points, cut before the extension so that it stays. */
function shorten(name: string, max: number): string {
  const codePoints = [...name];
  if (codePoints.length <= max) return name;
  const extension = [...(EXTENSION.exec(name)?.[0] ?? '')];
  return `${codePoints
    .slice(0, max - extension.length)
    .join('')
    .trimEnd()}${extension.join('')}`;
}
