/**
 * The name's search key: what IDX_calls_account_name_key indexes, for searches written around an Indic
 * virama or nukta.
 *
 * pg_trgm splits text into words with the C library's character classes, and those take the viramas and
 * nuktas (combining marks inside a word: `श्र` is श + virama + र) for word breaks. A fragment such as `श्र`
 * then yields only the trigrams of the single letters around the mark, which a large share of the names in
 * the script contain, so most of them become candidates to recheck (docs/experiments.md). The key
 * replaces each of these marks with a letter (`x`), one character for one, so that the fragment stays one
 * word with trigrams of its own.
 *
 * One character for one: a fragment of a name is a fragment of its key, so the key can pre-select rows
 * through the index; the condition on the name itself (ILIKE) decides, since the key no longer tells a
 * virama from a nukta or from a written `x`.
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

const MARK = new RegExp(`[${WORD_JOINING_MARKS}]`, 'u');
const MARKS = new RegExp(MARK.source, 'gu');

/**
 * The key of a column in SQL: exactly the expression of IDX_calls_account_name_key and of the statistics
 * STAT_calls_name_key (migration CallsNameSearchKey), or the planner can use neither.
 */
export const nameSearchKeySql = (column: string) =>
  `translate(${column}, '${WORD_JOINING_MARKS}', '${'x'.repeat(WORD_JOINING_MARKS.length)}')`;

/** Whether a search has a mark that pg_trgm would take for a word break (it then goes through the key). */
export const hasWordJoiningMark = (text: string) => MARK.test(text);

/** The key of a search pattern: the SQL `translate` above, computed here. */
export const nameSearchKey = (text: string) => text.replace(MARKS, 'x');
