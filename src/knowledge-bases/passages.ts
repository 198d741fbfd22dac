import { codePointLength } from '../common/code-points';

/**
 * Splits a source's text into passages of at most PASSAGE_LENGTH characters (code points), the unit that
 * search returns and that an agent quotes: whole paragraphs where they fit, packed together while the passage
 * stays within the length; a longer paragraph split into its sentences (Intl.Segmenter, which knows the
 * Devanagari danda, the CJK full stop and the Arabic question mark), packed the same way; a longer sentence
 * cut at the last space before the limit, or at the limit where there is none (CJK).
 */

export const PASSAGE_LENGTH = 1_000;

const sentenceSegmenter = new Intl.Segmenter(undefined, { granularity: 'sentence' });
/**
 * Text is segmented this many UTF-16 units at a time: V8 gives every segment a copy of the whole input, so
 * segmenting a 500,000-character paragraph at once takes gigabytes.
 */
const SEGMENT_WINDOW = 8_192;
const STARTS_WITHOUT_SPACES = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;

/** The passages of a text, in order; blank text has none. */
export function splitIntoPassages(text: string, maxLength = PASSAGE_LENGTH): string[] {
  const paragraphs = text
    .replace(/\r\n?/g, '\n')
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.trim())
    .filter(Boolean);
  const pieces = paragraphs.flatMap((paragraph) =>
    codePointLength(paragraph) <= maxLength ? [paragraph] : splitParagraph(paragraph, maxLength),
  );
  return pack(pieces, () => '\n\n', maxLength);
}

/** Consecutive pieces (each within the length) joined while the result stays within it. */
function pack(pieces: string[], separator: (next: string) => string, maxLength: number): string[] {
  const passages: string[] = [];
  let current = '';
  let currentLength = 0;
  for (const piece of pieces) {
    const joint = separator(piece);
    const pieceLength = codePointLength(piece);
    if (current && currentLength + joint.length + pieceLength <= maxLength) {
      current += joint + piece;
      currentLength += joint.length + pieceLength;
    } else {
      if (current) passages.push(current);
      current = piece;
      currentLength = pieceLength;
    }
  }
  if (current) passages.push(current);
  return passages;
}

/** A paragraph longer than a passage: its sentences (each cut down to size), packed; joined by a space except in CJK. */
function splitParagraph(paragraph: string, maxLength: number): string[] {
  const sentences = sentencesOf(paragraph)
    .map((sentence) => sentence.trim())
    .filter(Boolean)
    .flatMap((sentence) => (codePointLength(sentence) <= maxLength ? [sentence] : splitSentence(sentence, maxLength)));
  return pack(sentences, (next) => (STARTS_WITHOUT_SPACES.test(next) ? '' : ' '), maxLength);
}

/**
 * The sentences of a text, segmented a window at a time: the last sentence of a window may be cut by the
 * window's end, so the next window starts where it starts (a window that is one sentence is taken whole).
 */
function sentencesOf(text: string): string[] {
  const sentences: string[] = [];
  let start = 0;
  while (start < text.length) {
    const end = Math.min(start + SEGMENT_WINDOW, text.length);
    const segments = [...sentenceSegmenter.segment(text.slice(start, end))];
    const complete = end === text.length || segments.length === 1 ? segments : segments.slice(0, -1);
    sentences.push(...complete.map(({ segment }) => segment));
    start += complete.reduce((length, { segment }) => length + segment.length, 0);
  }
  return sentences;
}

/** A sentence longer than a passage: cut at the last space before the limit (when not too early), or at the limit. */
function splitSentence(sentence: string, maxLength: number): string[] {
  const parts: string[] = [];
  let rest = [...sentence];
  while (rest.length > maxLength) {
    const space = rest.lastIndexOf(' ', maxLength);
    const cut = space > maxLength / 2 ? space : maxLength;
    parts.push(rest.slice(0, cut).join('').trim());
    rest = rest.slice(cut);
  }
  const last = rest.join('').trim();
  return last ? [...parts, last] : parts;
}
