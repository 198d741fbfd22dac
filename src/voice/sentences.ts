/** A sentence shorter than this is joined to the next ("Dr.", "1.", "Ok."). */
const MIN_LENGTH = 8;
/** Past this, a sentence is cut at its last comma or space, so that speech starts without waiting for its end. */
const MAX_LENGTH = 200;

/**
 * Where a sentence ends: `.`, `?`, `!` (and their full-width and Arabic-script forms), the danda `।` and `॥`,
 * followed by white space; or a line break. A full stop between digits (3.5) is not one: white space must follow.
 */
const END = /[.?!。？！؟।॥]+["'”’)\]]*\s+|\n+/gu;

/**
 * Cuts a reply that arrives piece by piece into sentences for text-to-speech, each as soon as it is complete,
 * so that the first is spoken while the rest is still being written.
 */
export class SentenceCutter {
  private pending = '';

  /** The sentences the new piece completed (possibly none). */
  push(piece: string): string[] {
    this.pending += piece;
    const sentences: string[] = [];
    let start = 0;
    for (const match of this.pending.matchAll(END)) {
      const end = match.index + match[0].length;
      const sentence = this.pending.slice(start, end).trim();
      if (sentence.length >= MIN_LENGTH) {
        sentences.push(sentence);
        start = end;
      }
    }
    this.pending = this.pending.slice(start);
    while (this.pending.length > MAX_LENGTH) {
      const cut = cutPoint(this.pending);
      sentences.push(this.pending.slice(0, cut).trim());
      this.pending = this.pending.slice(cut);
    }
    return sentences.filter(Boolean);
  }

  /** What is left once the reply is complete. */
  flush(): string[] {
    const rest = this.pending.trim();
    this.pending = '';
    return rest ? [rest] : [];
  }
}

/** Where to cut an over-long sentence: after its last comma or space within MAX_LENGTH, never inside a character. */
function cutPoint(text: string): number {
  const head = text.slice(0, MAX_LENGTH);
  const comma = Math.max(head.lastIndexOf(', '), head.lastIndexOf('، '));
  if (comma >= MIN_LENGTH) return comma + 2;
  const space = head.lastIndexOf(' ');
  if (space >= MIN_LENGTH) return space + 1;
  // No space (a script written without them): cut between two code points, before any combining mark.
  let cut = MAX_LENGTH;
  while (cut > 1 && (/\p{M}|\u200d|\ufe0f/u.test(text[cut]) || isLowSurrogate(text.charCodeAt(cut)))) cut--;
  return cut;
}

const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;
