import { codePointLength } from '../common/code-points';
import type { NewPassage } from './knowledge-bases.repository';
import { splitIntoPassages } from './passages';
import { distinctSearchTokens } from './search-tokens';

/** The most text a source holds: a text source's limit, and how much of a fetched page or a file is indexed. */
export const MAX_TEXT_CONTENT_LENGTH = 500_000;

/**
 * The passages of a text, with their search tokens: at most MAX_TEXT_CONTENT_LENGTH characters are indexed
 * (a text source cannot be longer; a fetched page or a file can, and its text is cut at a passage boundary), and
 * a passage without a single token (punctuation only) is left out, since nothing could find it.
 */
export function toPassages(text: string): NewPassage[] {
  return indexPieces(splitIntoPassages(text));
}

/** Passages already cut (each at most PASSAGE_LENGTH characters: a CSV file's groups of rows), with their tokens, as toPassages. */
export function indexPieces(pieces: Iterable<string>): NewPassage[] {
  const passages: NewPassage[] = [];
  let length = 0;
  for (const passage of pieces) {
    length += codePointLength(passage);
    if (length > MAX_TEXT_CONTENT_LENGTH) break;
    // Joined here, where it is cheap (a worker thread, for files), rather than where the passages are stored.
    const tokens = distinctSearchTokens(passage);
    if (tokens.length) passages.push({ text: passage, tokens: tokens.join(' ') });
  }
  return passages;
}
