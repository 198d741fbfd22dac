import { encodeExtended } from 'content-disposition';

/**
 * The download's `Content-Disposition`: the caller's name made into a file name here (the contract's rules);
 * the `content-disposition` package encodes `filename*` (RFC 8187).
 */

/** Longest file name stem, in characters (before `.mp3`). */
const MAX_STEM_LENGTH = 100;

/** Control and invisible format characters (bidi overrides, zero-width), quotes, slashes, backslashes. */
const REMOVED = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}"'`/\\]/gu;

/**
 * The caller's name made safe for a file name: whitespace runs (newlines too) become one space; other control
 * and format characters, quotes, slashes and backslashes are removed; the length is capped.
 */
export function sanitizeFileStem(name: string): string {
  const collapse = (value: string) => value.replace(/\s+/gu, ' ');
  const cleaned = collapse(collapse(name.normalize('NFC')).replace(REMOVED, '')).trim();
  return Array.from(cleaned).slice(0, MAX_STEM_LENGTH).join('').trim();
}

/** An ASCII rendering: accents dropped (é → e), anything else outside printable ASCII removed. */
export function asciiFileStem(stem: string): string {
  return stem
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]/g, '')
    .replace(/ +/g, ' ')
    .trim();
}

export interface RecordingFileName {
  /** Plain printable ASCII, for `filename`. */
  ascii: string;
  /** The full UTF-8 name for `filename*`, only when it differs from the ASCII one. */
  utf8: string | undefined;
}

/** The download's file name, from the caller's name; a blank (or wholly unusable) name gives `call-<callId>.mp3`. */
export function recordingFileName(callerName: string, callId: string): RecordingFileName {
  const fallback = `call-${callId}`;
  const stem = sanitizeFileStem(callerName);
  const ascii = asciiFileStem(stem);
  if (!stem) return { ascii: `${fallback}.mp3`, utf8: undefined };
  return {
    ascii: `${ascii || fallback}.mp3`,
    utf8: ascii === stem ? undefined : `${stem}.mp3`,
  };
}

/**
 * `attachment; filename="…"` plus `filename*=UTF-8''…` when the name is not plain ASCII. The ASCII name needs no
 * escaping (it has no quote or backslash left) and is always quoted, as the contract writes it: the package's
 * `create()` would leave a name made only of token characters unquoted (`filename=call-….mp3`).
 */
export function contentDisposition(type: 'attachment' | 'inline', callerName: string, callId: string): string {
  const { ascii, utf8 } = recordingFileName(callerName, callId);
  const header = `${type}; filename="${ascii}"`;
  return utf8 === undefined ? header : `${header}; filename*=${encodeExtended(utf8)}`;
}
