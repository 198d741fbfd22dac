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

const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/;

/**
 * Reads a `Range` header (RFC 9110 §14) for an object of `size` bytes. Only one range is honoured; a header
 * that cannot be understood is ignored, as the RFC allows, and the whole object is sent.
 */
export function parseRange(header: string | undefined, size: number): RangeRequest {
  const match = header === undefined ? null : SINGLE_RANGE.exec(header.trim());
  if (!match) return { kind: 'whole' };
  const [, first, last] = match;
  if (first === '' && last === '') return { kind: 'whole' };
  if (first === '') {
    // Suffix: the last N bytes.
    const length = Number(last);
    if (length === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', range: { start: Math.max(0, size - length), end: size - 1 } };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (last !== '' && Number(last) < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', range: { start, end } };
}
