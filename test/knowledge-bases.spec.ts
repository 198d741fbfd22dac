import { createTestContext, TestAccount, TestContext } from './helpers';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('knowledge bases and sources', () => {
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    other = await context.createAccount();
  });
  afterAll(() => context.close());

  const createKnowledgeBase = async (account: TestAccount = owner, body: object = {}) =>
    (await context.as(account).post('/knowledge-bases').send(body).expect(201)).body;
  const addSource = async (kbId: number, body: object = {}, account: TestAccount = owner) =>
    (await context.as(account).post(`/knowledge-bases/${kbId}/sources`).send(body).expect(201)).body;

  describe('knowledge bases', () => {
    it('creates with the default name, from {} or no body', async () => {
      expect(await createKnowledgeBase(owner, {})).toEqual({
        id: expect.any(Number),
        name: 'Untitled',
        sourceCount: 0,
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
      });
      const response = await context.as(owner).post('/knowledge-bases').expect(201);
      expect(response.body.name).toBe('Untitled');
    });

    it.each([
      ['blank name', { name: '  ' }],
      ['name over 200', { name: 'n'.repeat(201) }],
      ['null name', { name: null }],
      ['numeric name', { name: 1 }],
      ['unknown field', { sources: [] }],
    ])('refuses %s with a 400', async (_, body) => {
      const response = await context.as(owner).post('/knowledge-bases').send(body).expect(400);
      expect(response.body).toMatchObject({ statusCode: 400, error: 'Bad Request', details: expect.any(Array) });
    });

    it('lists by id with sourceCount counted', async () => {
      const account = await context.createAccount();
      const first = await createKnowledgeBase(account, { name: 'First' });
      const second = await createKnowledgeBase(account, { name: 'Second' });
      await addSource(first.id, {}, account);
      await addSource(first.id, {}, account);
      await addSource(second.id, {}, account);
      const listed = (await context.as(account).get('/knowledge-bases').expect(200)).body;
      expect(listed.map((kb: { id: number; sourceCount: number }) => [kb.id, kb.sourceCount])).toEqual([
        [first.id, 2],
        [second.id, 1],
      ]);
    });

    it('gets one with its sources', async () => {
      const kb = await createKnowledgeBase(owner, { name: 'FAQ' });
      const source = await addSource(kb.id, { name: 'Hours', content: 'Open 9–6' });
      const read = (await context.as(owner).get(`/knowledge-bases/${kb.id}`).expect(200)).body;
      expect(read).toMatchObject({ id: kb.id, name: 'FAQ', sourceCount: 1, sources: [source] });
    });

    it('deletes with its sources (204)', async () => {
      const kb = await createKnowledgeBase();
      await addSource(kb.id);
      const response = await context.as(owner).delete(`/knowledge-bases/${kb.id}`).expect(204);
      expect(response.text).toBe('');
      await context.as(owner).get(`/knowledge-bases/${kb.id}`).expect(404);
      await context.as(owner).get(`/knowledge-bases/${kb.id}/sources`).expect(404);
    });

    it.each(['abc', '-1', '1.5', '99999999999999999999'])('answers 404 for the id %s', async (id) => {
      expect((await context.as(owner).get(`/knowledge-bases/${id}`).expect(404)).body).toMatchObject({ statusCode: 404 });
      await context.as(owner).delete(`/knowledge-bases/${id}`).expect(404);
      await context.as(owner).post(`/knowledge-bases/${id}/sources`).send({}).expect(404);
    });
  });

  describe('sources', () => {
    it('creates with defaults', async () => {
      const kb = await createKnowledgeBase();
      expect(await addSource(kb.id, {})).toEqual({
        id: expect.any(Number),
        knowledgeBaseId: kb.id,
        name: 'Untitled',
        type: 'text',
        content: '',
        status: 'ready',
        error: '',
        fileName: '',
        contentType: '',
        bytes: 0,
        createdAt: expect.stringMatching(ISO),
      });
    });

    it('stores 500,000 characters of Hindi and other scripts byte-exact', async () => {
      const kb = await createKnowledgeBase();
      const unit = 'नमस्ते दुनिया। வணக்கம் উদাহরণ 😀 ';
      const content = unit.repeat(Math.ceil(500_000 / unit.length)).slice(0, 500_000);
      expect(content.length).toBe(500_000);
      const created = await addSource(kb.id, { name: 'हिंदी', content });
      const listed = (await context.as(owner).get(`/knowledge-bases/${kb.id}/sources`).expect(200)).body;
      expect(listed).toEqual([created]);
      expect(Buffer.from(listed[0].content).equals(Buffer.from(content))).toBe(true);
      expect(listed[0].name).toBe('हिंदी');
    });

    it('refuses text over 500,000 characters', async () => {
      const kb = await createKnowledgeBase();
      const response = await context
        .as(owner)
        .post(`/knowledge-bases/${kb.id}/sources`)
        .send({ content: 'x'.repeat(500_001) })
        .expect(400);
      expect(response.body.details).toEqual([expect.objectContaining({ field: 'content' })]);
    });

    it('accepts http and https URLs for url sources', async () => {
      const kb = await createKnowledgeBase();
      for (const content of ['https://example.com/faq', 'http://localhost:8080/docs?x=1']) {
        expect(await addSource(kb.id, { type: 'url', content })).toMatchObject({ type: 'url', content });
      }
    });

    it.each([
      ['an unknown type', { type: 'pdf' }],
      ['a relative URL', { type: 'url', content: '/faq' }],
      ['an ftp URL', { type: 'url', content: 'ftp://example.com/file' }],
      ['a url source without content', { type: 'url' }],
      ['non-string content', { content: 42 }],
      ['a blank name', { name: '' }],
      ['an unknown field', { knowledgeBaseId: 1 }],
    ])('refuses %s with a 400 and stores nothing', async (_, body) => {
      const kb = await createKnowledgeBase();
      await context.as(owner).post(`/knowledge-bases/${kb.id}/sources`).send(body).expect(400);
      expect((await context.as(owner).get(`/knowledge-bases/${kb.id}/sources`).expect(200)).body).toEqual([]);
    });

    it('deletes one source (204) and 404s a source of another knowledge base', async () => {
      const kb = await createKnowledgeBase();
      const otherKb = await createKnowledgeBase();
      const source = await addSource(kb.id);
      await context.as(owner).delete(`/knowledge-bases/${otherKb.id}/sources/${source.id}`).expect(404);
      await context.as(owner).delete(`/knowledge-bases/${kb.id}/sources/${source.id}`).expect(204);
      await context.as(owner).delete(`/knowledge-bases/${kb.id}/sources/${source.id}`).expect(404);
      expect((await context.as(owner).get(`/knowledge-bases/${kb.id}`).expect(200)).body.sourceCount).toBe(0);
    });
  });

  describe('isolation between accounts', () => {
    it('another account can neither list, read, add to nor delete a knowledge base or its sources', async () => {
      const kb = await createKnowledgeBase(owner, { name: 'Private' });
      const source = await addSource(kb.id, { content: 'secret' });
      const before = (await context.as(owner).get(`/knowledge-bases/${kb.id}`).expect(200)).body;

      const listed = (await context.as(other).get('/knowledge-bases').expect(200)).body;
      expect(listed.map((k: { id: number }) => k.id)).not.toContain(kb.id);
      const notFound = { statusCode: 404, error: 'Not Found', message: `Knowledge base ${kb.id} not found` };
      expect((await context.as(other).get(`/knowledge-bases/${kb.id}`).expect(404)).body).toEqual(notFound);
      expect((await context.as(other).get(`/knowledge-bases/${kb.id}/sources`).expect(404)).body).toEqual(notFound);
      expect((await context.as(other).post(`/knowledge-bases/${kb.id}/sources`).send({ content: 'injected' }).expect(404)).body).toEqual(
        notFound,
      );
      await context.as(other).delete(`/knowledge-bases/${kb.id}/sources/${source.id}`).expect(404);
      expect((await context.as(other).delete(`/knowledge-bases/${kb.id}`).expect(404)).body).toEqual(notFound);

      // A's data is unchanged.
      expect((await context.as(owner).get(`/knowledge-bases/${kb.id}`).expect(200)).body).toEqual(before);
    });

    it("a source id of another account is a 404 even under the caller's own knowledge base", async () => {
      const ownKb = await createKnowledgeBase(other);
      const foreign = await addSource((await createKnowledgeBase(owner)).id);
      await context.as(other).delete(`/knowledge-bases/${ownKb.id}/sources/${foreign.id}`).expect(404);
    });
  });
});
