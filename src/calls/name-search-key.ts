/**
 * The form of a caller's name the search index holds (IDX_calls_account_search).
 *
 * pg_trgm splits text into words with the C library's character classes, and those take the Indic viramas
 * and nuktas (combining marks inside a word: `श्र` is श + virama + र) for word breaks. A fragment such as
 * `श्र` then yields only the trigrams of the single letters around the virama, which half the names in the
 * script contain, and the search rechecks thousands of rows. The key replaces each of these marks with a
 * letter (`x`), one character for one, so that the fragment stays one word with trigrams of its own.
 *
 * One character for one: a fragment of a name is a fragment of its key, so the key can pre-select rows
 * through the index, and the real condition on the name (ILIKE) decides.
 */
const WORD_JOINING_MARKS = [
  '\u093C', // Devanagari nukta
  '\u094D', // Devanagari virama
  '\u09BC', // Bengali nukta
  '\u09CD', // Bengali virama (hasanta)
  '\u0A3C', // Gurmukhi nukta
  '\u0A4D', // Gurmukhi virama
  '\u0ABC', // Gujarati nukta
  '\u0ACD', // Gujarati virama
  '\u0B3C', // Oriya nukta
  '\u0B4D', // Oriya virama
  '\u0BCD', // Tamil virama (pulli)
  '\u0C3C', // Telugu nukta
  '\u0C4D', // Telugu virama
  '\u0CBC', // Kannada nukta
  '\u0CCD', // Kannada virama
  '\u0D4D', // Malayalam virama
].join('');

const REPLACEMENT = 'x'.repeat([...WORD_JOINING_MARKS].length);
const MARKS = new RegExp(`[${WORD_JOINING_MARKS}]`, 'gu');

/** The key of a column or expression in SQL: exactly the expression of the index, or the planner cannot use it. */
export const nameSearchKeySql = (column: string) => `translate(${column}, '${WORD_JOINING_MARKS}', '${REPLACEMENT}')`;

/** The same key, computed here for a search pattern (the SQL `translate` above maps the same characters). */
export const nameSearchKey = (text: string) => text.replace(MARKS, 'x');
