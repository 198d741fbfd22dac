import { stemmer } from 'stemmer';
import { codePointLength } from '../common/code-points';

/**
 * The search tokens of a text, made here rather than by PostgreSQL's text-search parser or pg_trgm, which split
 * words at Indic combining marks (viramas, vowel signs) under the C.UTF-8 ctype (src/calls/name-search-key.ts)
 * and know no word boundaries in Chinese. Passages store their tokens with `array_to_tsvector` (no parser
 * involved) and queries are made of the same tokens, so both sides agree by construction in every script.
 *
 * - NFKC, then lowercase: full-width and compatibility forms become their plain letters and digits.
 * - Words are runs of letters, combining marks and digits (\p{L}\p{M}\p{N}), so `नमस्ते`, `ক্ষমা` and `தமிழ்`
 *   stay whole with their marks.
 * - Arabic short vowels (harakat) and the tatweel are dropped: they are optional in writing, and a question
 *   typed without them must find a text written with them.
 * - Words of plain ASCII letters are reduced to their English stem (Porter's algorithm, the `stemmer`
 *   package): `refunds` and `refund`, `opening` and `open` become one token. English is the Latin-script
 *   language of the service's reply languages; other words are matched as written.
 * - Han, Hiragana and Katakana have no spaces: each run becomes its overlapping character bigrams (`营业时间`
 *   → `营业 业时 时间`), a single character standing alone as itself. A query's bigrams are then found in any
 *   text that contains the query's words, without a dictionary.
 * - Tokens longer than MAX_TOKEN_LENGTH code points (base64, long hashes) are not words: dropped.
 */

export const MAX_TOKEN_LENGTH = 64;

const CJK = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}`;
/** A CJK run, or a run of other letters, marks and digits. */
const TOKEN_RUN = new RegExp(String.raw`[${CJK}]+|(?:(?![${CJK}])[\p{L}\p{M}\p{N}])+`, 'gu');
const ARABIC_OPTIONAL = /[\u0610-\u061A\u064B-\u065F\u0670\u06D6-\u06DC\u06DF-\u06E4\u06E7\u06E8\u06EA-\u06ED\u0640]/gu;
const IS_CJK = new RegExp(`^[${CJK}]`, 'u');
const ASCII_WORD = /^[a-z]+$/;

/** Every token of the text, in order, with repeats. */
export function searchTokens(text: string): string[] {
  const normalized = text.normalize('NFKC').toLowerCase().replace(ARABIC_OPTIONAL, '');
  const tokens: string[] = [];
  for (const [run] of normalized.matchAll(TOKEN_RUN)) {
    if (IS_CJK.test(run)) tokens.push(...bigrams(run));
    else if (codePointLength(run) <= MAX_TOKEN_LENGTH) tokens.push(ASCII_WORD.test(run) ? stemmer(run) : run);
  }
  return tokens;
}

/** The distinct tokens of the text. */
export const distinctSearchTokens = (text: string): string[] => [...new Set(searchTokens(text))];

function bigrams(run: string): string[] {
  const characters = [...run];
  if (characters.length === 1) return characters;
  return characters.slice(1).map((character, index) => characters[index] + character);
}
