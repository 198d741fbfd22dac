import { SentenceCutter } from '../src/voice/sentences';

/** The sentences of a whole reply given in one piece. */
function sentencesOf(text: string): string[] {
  const cutter = new SentenceCutter();
  return [...cutter.push(text), ...cutter.flush()];
}

/** The sentences of a reply streamed in pieces of the given sizes (in UTF-16 code units: a pair may be split). */
function streamed(text: string, sizes: () => number): string[] {
  const cutter = new SentenceCutter();
  const sentences: string[] = [];
  for (let offset = 0; offset < text.length;) {
    const size = sizes();
    sentences.push(...cutter.push(text.slice(offset, offset + size)));
    offset += size;
  }
  return [...sentences, ...cutter.flush()];
}

const graphemes = (text: string) => [...new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)].map((g) => g.segment);

const REPLIES = {
  english: 'Hello there. How can I help you today? We open at 9 am on weekdays!',
  abbreviations: 'Dr. Rao will see you at 3.5 pm. Bring Rs. 500 and your card, e.g. a debit card. Mr. A. P. Singh will meet you.',
  numbered: '1. Open the app.\n2. Tap Book.\n3. Pick a time and confirm it.',
  hindi: 'नमस्ते। आपकी क्या सहायता कर सकती हूँ? हम रविवार को बंद रहते हैं। सोमवार को सुबह 9 बजे खुलते हैं॥',
  tamil: 'வணக்கம். நாங்கள் ஞாயிற்றுக்கிழமை மூடியிருப்போம். திங்கள் காலை 9.30 மணிக்கு திறப்போம்.',
  emoji: 'Great news! 🎉 Your order is on its way. 👩‍👩‍👧‍👦 The family pack serves four. 🇮🇳 Made in India!',
  numbers: 'The total is ₹1,250.75 for 2.5 kg. Version 3.10.2 is installed. Call 080-4567-8901 before 5.30 pm.',
  quotes: 'He said "We are closed." Then he left! Really?! (See the notice.) Thank you.',
  long: `${'We deliver to every part of the city, '.repeat(6)}and to the suburbs as well on weekends. ${'word '.repeat(60)}`,
  unspaced: `${'क्षत्रिय'.repeat(30)}${'👩🏽‍💻'.repeat(40)}${'e\u0301'.repeat(90)}`,
};

describe('SentenceCutter', () => {
  it('cuts English at full stops, question and exclamation marks followed by a space, and at the end', () => {
    expect(sentencesOf(REPLIES.english)).toEqual(['Hello there.', 'How can I help you today?', 'We open at 9 am on weekdays!']);
  });

  it('cuts Hindi at the danda and the double danda, joining a sentence too short to stand alone to the next', () => {
    expect(sentencesOf(REPLIES.hindi)).toEqual([
      'नमस्ते। आपकी क्या सहायता कर सकती हूँ?', // नमस्ते। alone is 7 characters
      'हम रविवार को बंद रहते हैं।',
      'सोमवार को सुबह 9 बजे खुलते हैं॥',
    ]);
  });

  it('cuts Tamil at its full stops, not inside 9.30', () => {
    expect(sentencesOf(REPLIES.tamil)).toEqual(['வணக்கம்.', 'நாங்கள் ஞாயிற்றுக்கிழமை மூடியிருப்போம்.', 'திங்கள் காலை 9.30 மணிக்கு திறப்போம்.']);
  });

  it('does not cut at decimals, version numbers, abbreviations or initials', () => {
    expect(sentencesOf(REPLIES.numbers)).toEqual([
      'The total is ₹1,250.75 for 2.5 kg.',
      'Version 3.10.2 is installed.',
      'Call 080-4567-8901 before 5.30 pm.',
    ]);
    expect(sentencesOf(REPLIES.abbreviations)).toEqual([
      'Dr. Rao will see you at 3.5 pm.',
      'Bring Rs. 500 and your card, e.g. a debit card.',
      'Mr. A. P. Singh will meet you.',
    ]);
  });

  it('does not take "Dr." or "1." alone for a sentence, and cuts at line breaks', () => {
    expect(sentencesOf('Dr. Smith is in.')).toEqual(['Dr. Smith is in.']);
    expect(sentencesOf(REPLIES.numbered)).toEqual(['1. Open the app.', '2. Tap Book.', '3. Pick a time and confirm it.']);
    expect(sentencesOf('Opening hours\nMonday to Friday\n\nSaturday')).toEqual(['Opening hours', 'Monday to Friday', 'Saturday']);
    expect(sentencesOf('Ok. Yes. Fine.')).toEqual(['Ok. Yes.', 'Fine.']); // the last one is whatever is left
  });

  it('keeps emoji, flags and closing quotes with their sentences', () => {
    expect(sentencesOf(REPLIES.emoji)).toEqual([
      'Great news!',
      '🎉 Your order is on its way.',
      '👩‍👩‍👧‍👦 The family pack serves four.',
      '🇮🇳 Made in India!',
    ]);
    expect(sentencesOf(REPLIES.quotes)).toEqual([
      'He said "We are closed."',
      'Then he left!',
      'Really?!',
      '(See the notice.)',
      'Thank you.',
    ]);
  });

  it('cuts a sentence longer than 200 characters at its last comma, else at its last space', () => {
    const sentences = sentencesOf(REPLIES.long);
    expect(sentences[0]).toBe('We deliver to every part of the city, '.repeat(5).trimEnd());
    expect(sentences.every((sentence) => sentence.length <= 200)).toBe(true);
    expect(sentences.join(' ')).toBe(REPLIES.long.trim());
    const withoutCommas = sentencesOf('word '.repeat(100));
    expect(withoutCommas.map((sentence) => sentence.length)).toEqual([199, 199, 99]);
  });

  it('cuts text without spaces between characters, never inside a conjunct, a surrogate pair, an emoji sequence or a combining mark', () => {
    const sentences = sentencesOf(REPLIES.unspaced);
    expect(sentences.length).toBeGreaterThan(2);
    expect(sentences.join('')).toBe(REPLIES.unspaced);
    for (const sentence of sentences) {
      expect(sentence.length).toBeLessThanOrEqual(200);
      expect(sentence).not.toMatch(/^[\p{M}\u200d\udc00-\udfff]|[\u200d\ud800-\udbff]$/u);
    }
    // Every cut falls between two graphemes of the whole text.
    expect(sentences.flatMap(graphemes)).toEqual(graphemes(REPLIES.unspaced));
  });

  it('gives the same sentences however the reply is streamed: code unit by code unit, word by word, or in random pieces', () => {
    let seed = 17;
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
    for (const [name, reply] of Object.entries(REPLIES)) {
      const whole = sentencesOf(reply);
      expect({ name, sentences: streamed(reply, () => 1) }).toEqual({ name, sentences: whole });
      expect({ name, sentences: streamed(reply, () => 4) }).toEqual({ name, sentences: whole });
      for (let round = 0; round < 20; round++) {
        expect({ name, sentences: streamed(reply, () => 1 + Math.floor(random() * 30)) }).toEqual({ name, sentences: whole });
      }
    }
  });

  it('gives each sentence as soon as the space after it arrives', () => {
    const cutter = new SentenceCutter();
    expect(cutter.push('Hello there')).toEqual([]);
    expect(cutter.push('.')).toEqual([]); // "there.5" could still follow
    expect(cutter.push(' How')).toEqual(['Hello there.']);
    expect(cutter.push(' are you?')).toEqual([]);
    expect(cutter.flush()).toEqual(['How are you?']);
  });

  it('leaves nothing behind after a flush, and gives nothing for white space alone', () => {
    const cutter = new SentenceCutter();
    expect(cutter.push('  \n ')).toEqual([]);
    expect(cutter.flush()).toEqual([]);
    expect(cutter.push('Half a sentence')).toEqual([]);
    expect(cutter.flush()).toEqual(['Half a sentence']);
    expect(cutter.flush()).toEqual([]);
    expect(cutter.push('A new reply starts here. ')).toEqual(['A new reply starts here.']);
  });
});
