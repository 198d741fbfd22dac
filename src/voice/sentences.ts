/** A sentence shorter than this is joined to the next ("Dr.", "1.", "Ok."), as LiveKit's sentence tokenizer does. */
const MIN_LENGTH = 8;
/** Past this, a sentence is cut at its last comma or space, so that speech starts without waiting for its end. */
const MAX_LENGTH = 200;

/**
 * Where a sentence may end: `.`, `?`, `!` (and their full-width and Arabic-script forms), the danda `।` and `॥`,
 * with closing quotes or brackets, followed by white space; or a line break. A full stop between digits (3.5) is
 * not one, since white space must follow.
 */
const END = /([.?!。？！؟।॥]+)["'”’)\]]*\s+|\n+/gu;

/** Words whose full stop is not the end of a sentence ("Dr. Rao", "Rs. 500"); matched without regard to case. */
const ABBREVIATIONS = new Set(['mr', 'mrs', 'ms', 'dr', 'prof', 'sr', 'jr', 'st', 'mt', 'vs', 'rs', 'e.g', 'i.e', 'approx']);
/** The word just before a full stop: letters and inner dots ("e.g"), or one capital letter (an initial, "A. P. J."). */
const WORD_BEFORE = /(?:^|[^\p{L}.])([\p{L}.]+)$/u;

/** A comma (Latin, Arabic-script, full-width, ideographic) and the space after it. */
const COMMA = /[,،，、]\s*/gu;

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Cuts a reply that arrives piece by piece into sentences for text-to-speech, each as soon as it is complete,
 * so that the first is spoken while the rest is still being written.
 */
export class SentenceCutter {
  private pending = '';

  /**
   * The sentences the new piece completed (possibly none). Each decision rests only on text that can no longer
   * change, so the sentences are the same however the reply was split into pieces.
   */
  push(piece: string): string[] {
    this.pending += piece;
    const sentences: string[] = [];
    for (;;) {
      this.pending = this.pending.trimStart();
      const end = sentenceEnd(this.pending);
      const cut = end !== -1 && end <= MAX_LENGTH ? end : this.pending.length > MAX_LENGTH ? cutPoint(this.pending) : -1;
      if (cut === -1) return sentences;
      sentences.push(this.pending.slice(0, cut).trimEnd());
      this.pending = this.pending.slice(cut);
    }
  }

  /** What is left once the reply is complete. */
  flush(): string[] {
    const rest = this.pending.trim();
    this.pending = '';
    return rest ? [rest] : [];
  }
}

/** Where the first sentence of `text` ends (after its punctuation), or -1 when it has not ended yet. */
function sentenceEnd(text: string): number {
  for (const match of text.matchAll(END)) {
    if (match[1] === '.' && isAbbreviation(text.slice(0, match.index))) continue;
    const end = match.index + match[0].trimEnd().length;
    if (text.slice(0, end).trim().length >= MIN_LENGTH) return end;
  }
  return -1;
}

function isAbbreviation(textBeforeStop: string): boolean {
  const word = WORD_BEFORE.exec(textBeforeStop)?.[1];
  if (!word) return false;
  return ABBREVIATIONS.has(word.toLowerCase()) || /^\p{Lu}$/u.test(word);
}

/** Where to cut an over-long sentence: after its last comma, else its last space, within MAX_LENGTH. */
function cutPoint(text: string): number {
  const head = text.slice(0, MAX_LENGTH);
  const afterComma = [...head.matchAll(COMMA)].reduce((last, match) => match.index + match[0].length, 0);
  if (afterComma > MIN_LENGTH) return afterComma;
  const space = head.lastIndexOf(' ');
  if (space >= MIN_LENGTH) return space + 1;
  return lastGraphemeBoundary(text, MAX_LENGTH);
}

/**
 * The last boundary between two user-perceived characters at or before `limit`, never inside one (a surrogate
 * pair, a letter and its combining marks, a conjunct, an emoji sequence): for text written without spaces.
 */
function lastGraphemeBoundary(text: string, limit: number): number {
  let boundary = 0;
  for (const { index } of graphemes.segment(text)) {
    if (index > limit) break;
    boundary = index;
  }
  // A single character longer than the limit (a run of combining marks) is cut after it rather than not at all.
  if (boundary === 0) {
    const [first] = graphemes.segment(text);
    return first.segment.length;
  }
  return boundary;
}
