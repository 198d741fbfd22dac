import rangeParser from 'range-parser';

/** An inclusive byte range of an object. */
export interface ByteRange {
  start: number;
  end: number;
}

export type RangeRequest =
  /** No Range header, or one this server ignores (malformed, several ranges, another unit): send it all. */
  | { kind: 'whole' }
  | { kind: 'partial'; range: ByteRange }
  /** Well-formed but outside the object: 416. */
  | { kind: 'unsatisfiable' };

const WHOLE: RangeRequest = { kind: 'whole' };

/**
 * `bytes=-N`: the last N bytes. range-parser 1.3 calls a suffix longer than the object unsatisfiable, where
 * RFC 9110 §14.1.2 says it means the whole object (jshttp/range-parser#66; not in 1.3.0).
 */
const SUFFIX = /^bytes=\s*-\s*(\d+)\s*$/;

/**
 * Reads a `Range` header (RFC 9110 §14) for an object of `size` bytes with range-parser. One range is honoured;
 * a header that cannot be understood, names another unit or several ranges is ignored, as the RFC allows, and
 * the whole object is sent (no multipart/byteranges).
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  if (header === undefined) return WHOLE;
  // Parsed against an unbounded size, nothing can be out of range: what fails is malformed (-2), or a range whose
  // last byte comes before its first (-1), which the RFC calls invalid rather than unsatisfiable.
  const shape = rangeParser(Infinity, header);
  if (shape === -2 || shape === -1 || shape.type !== 'bytes' || shape.length !== 1) return WHOLE;
  const suffix = SUFFIX.exec(header);
  const ranges = rangeParser(size, suffix && Number(suffix[1]) > size ? `bytes=-${size}` : header);
  if (ranges === -2) return WHOLE;
  if (ranges === -1) return { kind: 'unsatisfiable' };
  return { kind: 'partial', range: { start: ranges[0].start, end: ranges[0].end } };
}
