import { PASSAGE_LENGTH, splitIntoPassages } from '../src/knowledge-bases/passages';
import { distinctSearchTokens, searchTokens } from '../src/knowledge-bases/search-tokens';
import { readableText } from '../src/knowledge-bases/readable-text';
import { searchPlan } from '../src/knowledge-bases/knowledge.service';

const codePoints = (text: string) => [...text].length;
/** The words of a text, whatever the white space between them. */
const words = (text: string) => text.split(/\s+/).filter(Boolean);

describe('search tokens', () => {
  it.each([
    ['Devanagari with viramas and a nukta', 'क्षमा करें, फ़ोन', ['क्षमा', 'करें', 'फ़ोन']],
    ['Bengali with a hasanta', 'ক্ষমা করবেন', ['ক্ষমা', 'করবেন']],
    ['Tamil with pulli', 'தமிழ் நாடு', ['தமிழ்', 'நாடு']],
    ['Arabic, short vowels and tatweel dropped', 'مَتْجَرُنا مـــفتوح', ['متجرنا', 'مفتوح']],
    ['Chinese as overlapping bigrams', '营业时间', ['营业', '业时', '时间']],
    ['a lone Han character', '在 营', ['在', '营']],
    ['Japanese kana and kanji', 'カタカナ日本', ['カタ', 'タカ', 'カナ', 'ナ日', '日本']],
    ['mixed runs split by script', 'abc中文def', ['abc', '中文', 'def']],
    ['full-width forms folded (NFKC), lowercased', 'ＡＢＣ１２３ Ｈｅｌｌｏ', ['abc123', 'hello']],
    ['English words stemmed', 'Refunds refund opening open', ['refund', 'refund', 'open', 'open']],
    ['digits of any script kept', 'Call 9876 or ९८७६', ['call', '9876', 'or', '९८७६']],
  ])('%s', (_name, text, tokens) => {
    expect(searchTokens(text)).toEqual(tokens);
  });

  it('drops runs longer than 64 characters (not words) and all punctuation', () => {
    expect(searchTokens(`${'x'.repeat(65)} ok ${'क'.repeat(70)} — !?… 😀`)).toEqual(['ok']);
  });

  it('gives the distinct tokens once, in order of first appearance', () => {
    expect(distinctSearchTokens('the shop, the hours, the shop')).toEqual(['the', 'shop', 'hour']);
  });
});

describe('passages', () => {
  it('keeps short paragraphs together, up to the length', () => {
    expect(splitIntoPassages('First paragraph.\n\nSecond paragraph.\r\n\r\nThird.')).toEqual([
      'First paragraph.\n\nSecond paragraph.\n\nThird.',
    ]);
    expect(splitIntoPassages('  \n\n ')).toEqual([]);
  });

  it('never cuts a paragraph that fits, and starts a new passage instead', () => {
    const first = 'a'.repeat(600);
    const second = 'b'.repeat(600);
    expect(splitIntoPassages(`${first}\n\n${second}`)).toEqual([first, second]);
  });

  it.each([
    ['English', 'This is one sentence of the manual. ', ' '],
    ['Hindi (danda)', 'यह नियमावली का एक वाक्य है। ', ' '],
    ['Chinese (full stop, no spaces)', '这是手册中的一句话。', ''],
    ['Arabic (question mark)', 'هل هذه جملة من الدليل؟ ', ' '],
  ])('cuts a long paragraph at sentence ends: %s', (_name, sentence, joiner) => {
    const paragraph = sentence.repeat(200).trim();
    const passages = splitIntoPassages(paragraph);
    expect(passages.length).toBeGreaterThan(1);
    for (const [index, passage] of passages.entries()) {
      expect(codePoints(passage)).toBeLessThanOrEqual(PASSAGE_LENGTH);
      // Full passages, but for the last: a sentence is added while it fits.
      if (index < passages.length - 1) expect(codePoints(passage)).toBeGreaterThan(PASSAGE_LENGTH - codePoints(sentence));
      expect(paragraph).toContain(passage);
      expect(passage.endsWith(sentence.trim().slice(-1))).toBe(true);
    }
    // Nothing lost, nothing added.
    expect(passages.join(joiner)).toBe(paragraph);
  });

  it('cuts a sentence longer than a passage at a space, or at the length where there is none', () => {
    const spaced = Array.from({ length: 400 }, (_, index) => `w${index}`).join(' ');
    const passages = splitIntoPassages(spaced);
    for (const passage of passages) expect(codePoints(passage)).toBeLessThanOrEqual(PASSAGE_LENGTH);
    expect(passages.flatMap(words)).toEqual(words(spaced));
    const unspaced = '字'.repeat(2500);
    expect(splitIntoPassages(unspaced).map(codePoints)).toEqual([1000, 1000, 500]);
  });

  it('splits 500,000 characters of one paragraph without running out of memory', () => {
    const unit = 'नमस्ते दुनिया। வணக்கம் উদাহরণ 😀 ';
    const text = unit.repeat(Math.ceil(500_000 / unit.length)).slice(0, 500_000);
    const passages = splitIntoPassages(text);
    expect(passages.length).toBeGreaterThan(480);
    expect(passages.flatMap(words)).toEqual(words(text));
  });
});

describe('readable text of HTML', () => {
  it("keeps the article's text with its paragraphs, and leaves the navigation, scripts and footer out", () => {
    const paragraph = (n: number) =>
      `<p>Paragraph ${n} of the returns policy: bring the receipt and the product to any branch within thirty days of purchase.</p>`;
    const html = `<!doctype html><html><head><title>Returns policy</title><script>var tracking = 1;</script></head><body>
      <nav><a href="/">Home</a> <a href="/menu">Menu item</a></nav>
      <article><h1>Returns policy</h1>${[1, 2, 3, 4, 5].map(paragraph).join('')}</article>
      <footer>Copyright footer text</footer></body></html>`;
    const text = readableText(html);
    expect(text).toContain('Paragraph 1 of the returns policy');
    expect(text).toContain('Paragraph 5 of the returns policy');
    expect(text).toMatch(/thirty days of purchase\.\n\nParagraph 2/);
    expect(text).not.toMatch(/Menu item|tracking|Copyright footer/);
  });

  it('converts a page without an article whole, still without navigation and scripts', () => {
    const text = readableText('<html><body><nav>Menu item</nav><script>var x;</script><p>नमस्ते, हम सुबह नौ बजे खुलते हैं।</p></body></html>');
    expect(text).toBe('नमस्ते, हम सुबह नौ बजे खुलते हैं।');
  });
});

describe('search plan', () => {
  const frequencies = new Map([
    ['the', 9_000],
    ['store', 700],
    ['pune', 200],
    ['sunday', 400],
  ]);

  it('keeps the tokens found in the corpus, rarest first, with weights that fall as they get common', () => {
    const { terms } = searchPlan(['the', 'store', 'in', 'pune', 'sunday'], frequencies, 10_000);
    expect(terms.map(({ token }) => token)).toEqual(['pune', 'sunday', 'store', 'the']);
    const weights = terms.map(({ weight }) => weight);
    expect([...weights].sort((a, b) => b - a)).toEqual(weights);
    expect(Math.min(...weights)).toBeGreaterThan(0);
  });

  it('looks up the rarest tokens while their passages stay within the budget, and always the rarest one', () => {
    expect(searchPlan(['the', 'store', 'pune', 'sunday'], frequencies, 10_000, 1_000).lookUp).toBe(2);
    expect(searchPlan(['the', 'store', 'pune', 'sunday'], frequencies, 10_000, 100).lookUp).toBe(1);
    expect(searchPlan(['the'], frequencies, 10_000, 1_000)).toMatchObject({ lookUp: 1, terms: [{ token: 'the' }] });
    expect(searchPlan(['unknown'], frequencies, 10_000, 1_000)).toEqual({ terms: [], lookUp: 0 });
  });

  it('uses at most the 16 rarest tokens of a long question', () => {
    const many = new Map(Array.from({ length: 40 }, (_, index) => [`t${index}`, index + 1]));
    const { terms } = searchPlan([...many.keys()], many, 10_000, 1_000_000);
    expect(terms.map(({ token }) => token)).toEqual(Array.from({ length: 16 }, (_, index) => `t${index}`));
  });
});
