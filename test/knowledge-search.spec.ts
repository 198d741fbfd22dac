import { DataSource } from 'typeorm';
import { KnowledgeService } from '../src/knowledge-bases/knowledge.service';
import { createTestContext, TestAccount, TestContext } from './helpers';

/** Passages and retrieval (contract section 10): text sources become searchable passages in every script of the seed. */
describe('knowledge search', () => {
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;
  let knowledge: KnowledgeService;
  let dataSource: DataSource;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    other = await context.createAccount();
    knowledge = context.app.get(KnowledgeService);
    dataSource = context.app.get(DataSource);
  });
  afterAll(() => context.close());

  const createKnowledgeBase = async (account: TestAccount = owner) =>
    (await context.as(account).post('/knowledge-bases').send({}).expect(201)).body.id as number;
  const addText = async (kbId: number, name: string, content: string, account: TestAccount = owner) =>
    (await context.as(account).post(`/knowledge-bases/${kbId}/sources`).send({ name, content }).expect(201)).body;
  const search = async (kbId: number, q: string, extra = '', account: TestAccount = owner) =>
    (
      await context
        .as(account)
        .get(`/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}${extra}`)
        .expect(200)
    ).body as {
      sourceId: number;
      sourceName: string;
      text: string;
      score: number;
    }[];

  /** A knowledge base of several topics in one script; the question must find the one it is about. */
  const SCRIPTS: [string, string[], string, number][] = [
    [
      'Latin',
      [
        'Our shop opens at nine in the morning and closes at six in the evening.',
        'Refunds reach your bank account within five working days.',
        'Delivery to Pune takes two days.',
      ],
      'How many days until my refund arrives?',
      1,
    ],
    [
      'Devanagari (viramas, nuktas, vowel signs)',
      [
        'हमारी दुकान सुबह नौ बजे खुलती है और शाम छह बजे बंद होती है।',
        'प्रिंटर पर दो साल की वारंटी मिलती है, जिसमें पुर्ज़े शामिल हैं।',
        'क्षमा करें, रविवार को डिलीवरी नहीं होती।',
      ],
      'प्रिंटर की वारंटी कितनी है?',
      1,
    ],
    [
      'Bengali',
      ['আমাদের দোকান সকাল নয়টায় খোলে।', 'টাকা ফেরত সাত দিনের মধ্যে আসল পেমেন্ট মাধ্যমে জমা হয়।', 'কলকাতা শহরে ডেলিভারি দুই দিনে হয়।'],
      'টাকা ফেরত কত দিনে আসে?',
      1,
    ],
    [
      'Tamil (pulli)',
      [
        'எங்கள் கடை காலை ஒன்பது மணிக்கு திறக்கும்.',
        'மடிக்கணினி வாங்கினால் இரண்டு ஆண்டு உத்தரவாதம் கிடைக்கும்.',
        'சென்னை நகருக்கு விநியோகம் இரண்டு நாட்கள் ஆகும்.',
      ],
      'மடிக்கணினி உத்தரவாதம் எத்தனை ஆண்டு?',
      1,
    ],
    [
      'Chinese (no spaces)',
      ['我们的门店营业时间是早上九点到晚上六点。', '退款将在七天内退回原支付方式。', '送到上海通常需要两个工作日。'],
      '退款多久能到账？',
      1,
    ],
    [
      'Arabic (harakat in the text, none in the question)',
      ['يَفْتَحُ مَتْجَرُنا السَّاعَةَ التَّاسِعَةَ صَباحاً.', 'يأتي الهاتف مع ضمان لمدة سنتين يشمل القطع.', 'يستغرق التوصيل إلى دبي يومين.'],
      'متى يفتح متجرنا؟',
      0,
    ],
  ];

  it.each(SCRIPTS)('finds the passage a question is about: %s', async (_script, topics, question, expected) => {
    const kbId = await createKnowledgeBase();
    const sources = [];
    for (const [index, topic] of topics.entries()) sources.push(await addText(kbId, `Topic ${index}`, topic));
    const found = await search(kbId, question);
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]).toEqual({
      sourceId: sources[expected].id,
      sourceName: `Topic ${expected}`,
      text: topics[expected],
      score: expect.any(Number),
    });
    expect(found[0].score).toBeGreaterThan(0);
    for (const [index, result] of found.entries()) if (index > 0) expect(result.score).toBeLessThanOrEqual(found[index - 1].score);
  });

  it('returns nothing for a question that shares no word with the knowledge base', async () => {
    const kbId = await createKnowledgeBase();
    await addText(kbId, 'Hours', 'We open at nine and close at six.');
    expect(await search(kbId, 'Quantum chromodynamics?')).toEqual([]);
    expect(await search(kbId, '?!… —')).toEqual([]);
  });

  it('ranks a rare word above common ones (inverse document frequency)', async () => {
    const kbId = await createKnowledgeBase();
    // "the" and "is" are in every passage; "warranty" in one.
    for (let index = 0; index < 8; index++)
      await addText(kbId, `Filler ${index}`, `The store is near the station number ${index} and the staff is kind.`);
    const warranty = await addText(kbId, 'Warranty', 'A warranty of two years covers every laptop.');
    const found = await search(kbId, 'What is the warranty on the laptop?');
    expect(found[0].sourceId).toBe(warranty.id);
  });

  it('prefers, among equal matches, the shorter passage (length normalisation)', async () => {
    const kbId = await createKnowledgeBase();
    const long = await addText(
      kbId,
      'Long',
      `Parking is free. ${'Our garden has roses, tulips, lilies, orchids, daisies and sunflowers in many colours. '.repeat(3)}`,
    );
    const short = await addText(kbId, 'Short', 'Parking is free for customers.');
    const found = await search(kbId, 'parking');
    expect(found.map(({ sourceId }) => sourceId)).toEqual([short.id, long.id]);
  });

  it('splits a long source into passages of about 1,000 characters at paragraph and sentence boundaries', async () => {
    const kbId = await createKnowledgeBase();
    const paragraphs = Array.from({ length: 12 }, (_, index) =>
      `Paragraph ${index} talks about topic${index}. ${'It has several sentences of filler text. '.repeat(5)}`.trim(),
    );
    const hindi = 'यह एक लंबा वाक्य है जो कई बार दोहराया जाता है। '.repeat(60).trim();
    await addText(kbId, 'Manual', [...paragraphs, hindi].join('\n\n'));
    const topic = await search(kbId, 'topic7');
    expect(topic).toHaveLength(1);
    expect(topic[0].text).toContain('Paragraph 7 talks about topic7.');
    const rows: { text: string }[] = await dataSource.query(
      `SELECT text FROM knowledge_passages WHERE account_id = $1 AND knowledge_base_id = $2 ORDER BY position`,
      [owner.id, kbId],
    );
    expect(rows.length).toBeGreaterThan(2);
    for (const { text } of rows) {
      expect([...text].length).toBeLessThanOrEqual(1000);
      // Whole sentences: every passage ends at the end of a sentence (a full stop or a danda).
      expect(text).toMatch(/[.।]$/);
    }
  });

  it('stores a source of 500,000 characters in order, its passages numbered from 0 without a gap, and finds its last words', async () => {
    const kbId = await createKnowledgeBase();
    const paragraph = (index: number) =>
      `Section ${index} covers item${index}. ${'Filler words for the length of this part. '.repeat(20)}`.trim();
    const paragraphs: string[] = [];
    for (let index = 0, length = 0; length < 499_000; index++) {
      paragraphs.push(paragraph(index));
      length += paragraphs[index].length + 2;
    }
    const text = paragraphs.join('\n\n').slice(0, 500_000);
    const source = await addText(kbId, 'Catalogue', text);
    const rows: { position: number; text: string }[] = await dataSource.query(
      `SELECT position, text FROM knowledge_passages WHERE account_id = $1 AND source_id = $2 ORDER BY position`,
      [owner.id, source.id],
    );
    expect(rows.map(({ position }) => position)).toEqual(rows.map((_, index) => index));
    expect(rows.map((row) => row.text).join('\n\n')).toBe(text.trim());
    const last = paragraphs.length - 2; // the last whole paragraph
    expect((await search(kbId, `item${last}`))[0].text).toContain(`Section ${last} covers item${last}.`);
  });

  it('limit: 5 by default, at most 20, at least 1', async () => {
    const kbId = await createKnowledgeBase();
    for (let index = 0; index < 25; index++) await addText(kbId, `Note ${index}`, `Note number ${index} about opening hours.`);
    expect(await search(kbId, 'hours')).toHaveLength(5);
    expect(await search(kbId, 'hours', '&limit=1')).toHaveLength(1);
    expect(await search(kbId, 'hours', '&limit=20')).toHaveLength(20);
  });

  it.each([
    ['no q', ''],
    ['a blank q', '?q=%20%20'],
    ['a q over 500 characters', `?q=${'a'.repeat(501)}`],
    ['two q', '?q=a&q=b'],
    ['limit 0', '?q=hours&limit=0'],
    ['limit 21', '?q=hours&limit=21'],
    ['limit 1.5', '?q=hours&limit=1.5'],
    ['limit abc', '?q=hours&limit=abc'],
  ])('refuses %s with a 400 in the error shape', async (_name, query) => {
    const kbId = await createKnowledgeBase();
    const response = await context.as(owner).get(`/knowledge-bases/${kbId}/search${query}`).expect(400);
    expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request', details: expect.any(Array) });
  });

  it('accepts a q of 500 characters in any script (code points)', async () => {
    const kbId = await createKnowledgeBase();
    await addText(kbId, 'Chinese', '营业时间是早上九点。');
    for (const q of ['营'.repeat(499) + '业', '😀'.repeat(500), 'क्ष'.repeat(166) + 'क्']) {
      expect([...q].length).toBeLessThanOrEqual(500);
      await context
        .as(owner)
        .get(`/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}`)
        .expect(200);
    }
  });

  it("answers 404 for another account's knowledge base and for an unknown one", async () => {
    const kbId = await createKnowledgeBase();
    await addText(kbId, 'Secret', 'The secret recipe uses cardamom.');
    const response = await context.as(other).get(`/knowledge-bases/${kbId}/search?q=cardamom`).expect(404);
    expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: `Knowledge base ${kbId} not found` });
    await context.as(owner).get('/knowledge-bases/2000000000/search?q=cardamom').expect(404);
  });

  it('deleting a source or a knowledge base deletes its passages', async () => {
    const kbId = await createKnowledgeBase();
    const kept = await addText(kbId, 'Kept', 'Cardamom and saffron.');
    const removed = await addText(kbId, 'Removed', 'Cardamom and cinnamon.');
    await context.as(owner).delete(`/knowledge-bases/${kbId}/sources/${removed.id}`).expect(204);
    expect((await search(kbId, 'cardamom')).map(({ sourceId }) => sourceId)).toEqual([kept.id]);
    await context.as(owner).delete(`/knowledge-bases/${kbId}`).expect(204);
    const [{ count }] = await dataSource.query(
      `SELECT count(*)::int AS count FROM knowledge_passages WHERE account_id = $1 AND knowledge_base_id = $2`,
      [owner.id, kbId],
    );
    expect(count).toBe(0);
  });

  describe('KnowledgeService.retrieve (for the conversations)', () => {
    it("spans the knowledge bases given, and never another account's", async () => {
      const first = await createKnowledgeBase();
      const second = await createKnowledgeBase();
      const elsewhere = await createKnowledgeBase();
      const a = await addText(first, 'A', 'Saffron is sold by the gram.');
      const b = await addText(second, 'B', 'Saffron tea is served on Fridays.');
      await addText(elsewhere, 'C', 'Saffron rice is our speciality.');
      const found = await knowledge.retrieve(owner.id, [first, second], 'saffron', 10);
      expect(found.map(({ sourceId }) => sourceId).sort()).toEqual([a.id, b.id].sort());
      expect(found[0]).toEqual({
        sourceId: expect.any(Number),
        sourceName: expect.any(String),
        text: expect.any(String),
        score: expect.any(Number),
      });
      expect(await knowledge.retrieve(other.id, [first, second], 'saffron', 10)).toEqual([]);
      expect(await knowledge.retrieve(owner.id, [], 'saffron', 10)).toEqual([]);
      expect(await knowledge.retrieve(owner.id, [first, 2 ** 31, -1, 1.5], 'saffron', 10)).toEqual([
        expect.objectContaining({ sourceId: a.id }),
      ]);
    });
  });

  describe('the ranking statistics', () => {
    /** knowledge_token_stats and knowledge_corpus against a count from the passages themselves. */
    async function statisticsAgree(accountId: number): Promise<void> {
      const kept = await dataSource.query(`SELECT token, passages FROM knowledge_token_stats WHERE account_id = $1 ORDER BY token`, [
        accountId,
      ]);
      const counted = await dataSource.query(
        `SELECT token, count(*)::int AS passages FROM knowledge_passages, unnest(tsvector_to_array(tokens)) AS token WHERE account_id = $1 GROUP BY token ORDER BY token`,
        [accountId],
      );
      expect(kept).toEqual(counted);
      const [corpus] = await dataSource.query(`SELECT passages, tokens::int AS tokens FROM knowledge_corpus WHERE account_id = $1`, [
        accountId,
      ]);
      const [actual] = await dataSource.query(
        `SELECT count(*)::int AS passages, coalesce(sum(token_count), 0)::int AS tokens FROM knowledge_passages WHERE account_id = $1`,
        [accountId],
      );
      expect(corpus ?? { passages: 0, tokens: 0 }).toEqual(actual);
    }

    it('follow inserts, deletes and cascades, including concurrent writers of one account', async () => {
      const account = await context.createAccount();
      const first = await createKnowledgeBase(account);
      const second = await createKnowledgeBase(account);
      const texts = ['apple banana cherry', 'banana cherry date', 'नमस्ते दुनिया', '营业时间', 'cherry elderberry fig'];
      // Ten sources written at once: the triggers serialise on the account's corpus row (no deadlock, no lost count).
      const sources = await Promise.all(
        texts.concat(texts).map((text, index) => addText(index % 2 ? first : second, `S${index}`, text, account)),
      );
      await statisticsAgree(account.id);
      await context
        .as(account)
        .delete(`/knowledge-bases/${first}/sources/${sources.find((_, index) => index % 2)!.id}`)
        .expect(204);
      await statisticsAgree(account.id);
      await context.as(account).delete(`/knowledge-bases/${second}`).expect(204);
      await statisticsAgree(account.id);
      await context.as(account).delete(`/knowledge-bases/${first}`).expect(204);
      await statisticsAgree(account.id);
      const [{ count }] = await dataSource.query(`SELECT count(*)::int AS count FROM knowledge_token_stats WHERE account_id = $1`, [
        account.id,
      ]);
      expect(count).toBe(0);
    });
  });
});
