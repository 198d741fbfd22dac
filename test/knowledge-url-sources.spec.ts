import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { SourceIndexing } from '../src/knowledge-bases/source-indexing';
import { createTestContext, listenOnLoopback, TestAccount, TestContext } from './helpers';
import { settledSource } from './knowledge-helpers';

/**
 * url sources (contract section 10), fetched in the background by the job queue from a real HTTP server on
 * loopback. This context allows private addresses (FETCH_ALLOW_PRIVATE_ADDRESSES=true) to reach that server;
 * the last block runs with the default (false) and shows the same server refused. The SSRF rules themselves
 * are test/outbound-http.spec.ts.
 */

const ARTICLE = `<!doctype html><html><head><title>Returns policy</title><script>var tracking = 'script-only-word';</script></head><body>
  <nav><a href="/">Home</a> <a href="/about">navigationonlyword</a></nav>
  <article><h1>Returns policy</h1>
  ${[1, 2, 3, 4, 5].map((n) => `<p>Rule ${n}: bring the receipt and the product to any branch within thirty days of purchase for a full refund.</p>`).join('\n')}
  </article><footer>footeronlyword</footer></body></html>`;

/** What the test server answers, by path; changeable by a test. */
const pages = new Map<string, { type?: string; body: string | Buffer; status?: number; headers?: Record<string, string> }>([
  ['/article.html', { type: 'text/html; charset=utf-8', body: ARTICLE }],
  ['/notes.txt', { type: 'text/plain', body: 'Parking is free for customers.\n\nThe café serves chai.' }],
  [
    '/guide.md',
    { type: 'text/markdown; charset=utf-8', body: '# Guide\n\nThe **warranty** covers two years.\n\n- दुकान सुबह नौ बजे खुलती है।' },
  ],
  ['/latin1.txt', { type: 'text/plain; charset=iso-8859-1', body: Buffer.from('Crème brûlée on Sundays.', 'latin1') }],
  ['/image.png', { type: 'image/png', body: Buffer.from([0x89, 0x50, 0x4e, 0x47]) }],
  ['/json', { type: 'application/json', body: '{"a":1}' }],
  ['/untyped', { body: 'no type' }],
  ['/missing', { status: 404, type: 'text/html', body: 'Not found' }],
  ['/empty.html', { type: 'text/html', body: '<html><body><script>x()</script></body></html>' }],
  ['/big.txt', { type: 'text/plain', body: Buffer.alloc(5 * 1024 * 1024 + 1, 'a') }],
  ['/moved', { status: 301, headers: { location: '/notes.txt' }, body: '' }],
  ['/to-metadata', { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' }, body: '' }],
]);

describe('url sources', () => {
  let server: http.Server;
  let base: string;
  const hits: string[] = [];
  let context: TestContext;
  let owner: TestAccount;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.push(req.url!);
      const page = pages.get(req.url!);
      if (!page) return void res.writeHead(404).end();
      res.writeHead(page.status ?? 200, { ...(page.type ? { 'content-type': page.type } : {}), ...page.headers }).end(page.body);
    });
    await listenOnLoopback(server);
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    context = await createTestContext({ fetchAllowPrivateAddresses: true });
    owner = await context.createAccount();
  });
  afterAll(async () => {
    await context.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const createKnowledgeBase = async (account = owner, ctx = context) =>
    (await ctx.as(account).post('/knowledge-bases').send({}).expect(201)).body.id as number;
  const addUrl = async (kbId: number, url: string, account = owner, ctx = context) =>
    (await ctx.as(account).post(`/knowledge-bases/${kbId}/sources`).send({ name: 'Page', type: 'url', content: url }).expect(201)).body;
  /** The source once its fetch has ended (no longer pending). */
  const settled = (kbId: number, sourceId: number, account = owner, ctx = context) => settledSource(ctx, account, kbId, sourceId, 30_000);
  const search = async (kbId: number, q: string) =>
    (
      await context
        .as(owner)
        .get(`/knowledge-bases/${kbId}/search?q=${encodeURIComponent(q)}`)
        .expect(200)
    ).body;

  it('is pending at creation, with the URL as its content, then ready with the readable text of the HTML page', async () => {
    const kbId = await createKnowledgeBase();
    const created = await addUrl(kbId, `${base}/article.html`);
    expect(created).toMatchObject({ type: 'url', content: `${base}/article.html`, status: 'pending', error: '' });
    const source = await settled(kbId, created.id);
    expect(source).toMatchObject({ status: 'ready', error: '', content: `${base}/article.html` });
    const found = await search(kbId, 'receipt refund');
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]).toMatchObject({ sourceId: created.id, sourceName: 'Page' });
    expect(found[0].text).toMatch(/^Returns policy\n\nRule 1: bring the receipt/);
    // Navigation, scripts and footers are not part of the readable text.
    for (const word of ['navigationonlyword', 'footeronlyword', 'script-only-word']) expect(await search(kbId, word)).toEqual([]);
  });

  it.each([
    ['text/plain', '/notes.txt', 'chai', 'Parking is free for customers.\n\nThe café serves chai.'],
    ['text/markdown, kept as it is', '/guide.md', 'warranty', '# Guide\n\nThe **warranty** covers two years.\n\n- दुकान सुबह नौ बजे खुलती है।'],
    ['text/plain in ISO-8859-1', '/latin1.txt', 'brûlée', 'Crème brûlée on Sundays.'],
    ['a redirect to a page', '/moved', 'parking', 'Parking is free for customers.\n\nThe café serves chai.'],
  ])('reads %s', async (_name, path, word, text) => {
    const kbId = await createKnowledgeBase();
    const created = await addUrl(kbId, `${base}${path}`);
    expect(await settled(kbId, created.id)).toMatchObject({ status: 'ready', error: '' });
    expect((await search(kbId, word)).map((passage: { text: string }) => passage.text)).toEqual([text]);
  });

  it.each([
    ['an image', '/image.png', 'Unsupported content type image/png: only HTML, plain text and Markdown are read'],
    ['JSON', '/json', 'Unsupported content type application/json: only HTML, plain text and Markdown are read'],
    ['no content type', '/untyped', 'The URL sent no content type'],
    ['an HTTP error', '/missing', 'The URL answered HTTP 404'],
    ['a page without text', '/empty.html', 'The page has no readable text'],
    ['a body over 5 MiB', '/big.txt', 'Could not fetch the URL: the response is larger than 5 MiB'],
    ['a redirect to the metadata address', '/to-metadata', 'Could not fetch the URL: 169.254.169.254 is a cloud metadata address'],
  ])('fails with the reason for %s, and is not searchable', async (_name, path, error) => {
    const kbId = await createKnowledgeBase();
    const created = await addUrl(kbId, `${base}${path}`);
    expect(await settled(kbId, created.id)).toMatchObject({ status: 'failed', error });
    const [{ count }] = await context.app
      .get(DataSource)
      .query(`SELECT count(*)::int AS count FROM knowledge_passages WHERE source_id = $1`, [created.id]);
    expect(count).toBe(0);
  });

  describe('refresh', () => {
    it('fetches again: 202 with the source pending, then the new text replaces the old', async () => {
      pages.set('/changing.txt', { type: 'text/plain', body: 'The old price is ten rupees.' });
      const kbId = await createKnowledgeBase();
      const created = await addUrl(kbId, `${base}/changing.txt`);
      await settled(kbId, created.id);
      expect(await search(kbId, 'old')).toHaveLength(1);

      pages.set('/changing.txt', { type: 'text/plain', body: 'The new price is twelve rupees.' });
      const refreshed = await context.as(owner).post(`/knowledge-bases/${kbId}/sources/${created.id}/refresh`).expect(202);
      expect(refreshed.body).toEqual({ ...created, status: 'pending', error: '' });
      expect(await settled(kbId, created.id)).toMatchObject({ status: 'ready' });
      expect(await search(kbId, 'old')).toEqual([]);
      expect((await search(kbId, 'new'))[0].text).toBe('The new price is twelve rupees.');
    });

    it('clears the error of a failed source when it succeeds', async () => {
      pages.set('/flaky.txt', { status: 503, type: 'text/plain', body: 'down' });
      const kbId = await createKnowledgeBase();
      const created = await addUrl(kbId, `${base}/flaky.txt`);
      expect(await settled(kbId, created.id)).toMatchObject({ status: 'failed', error: 'The URL answered HTTP 503' });
      pages.set('/flaky.txt', { type: 'text/plain', body: 'Back up and serving.' });
      await context.as(owner).post(`/knowledge-bases/${kbId}/sources/${created.id}/refresh`).expect(202);
      expect(await settled(kbId, created.id)).toMatchObject({ status: 'ready', error: '' });
    });

    it('is a 400 for a text source, and a 404 for an unknown source or knowledge base, or another account', async () => {
      const kbId = await createKnowledgeBase();
      const text = (await context.as(owner).post(`/knowledge-bases/${kbId}/sources`).send({ content: 'Plain text.' }).expect(201)).body;
      const refused = await context.as(owner).post(`/knowledge-bases/${kbId}/sources/${text.id}/refresh`).expect(400);
      expect(refused.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: `Source ${text.id} is a text source: only url and file sources can be refreshed`,
      });
      await context.as(owner).post(`/knowledge-bases/${kbId}/sources/2000000000/refresh`).expect(404);
      await context.as(owner).post(`/knowledge-bases/2000000000/sources/${text.id}/refresh`).expect(404);
      const url = await addUrl(kbId, `${base}/notes.txt`);
      await settled(kbId, url.id);
      const intruder = await context.createAccount();
      await context.as(intruder).post(`/knowledge-bases/${kbId}/sources/${url.id}/refresh`).expect(404);
      expect(await settled(kbId, url.id)).toMatchObject({ status: 'ready' });
    });
  });

  describe('the job', () => {
    it('carries ids only, no URL or text', async () => {
      const kbId = await createKnowledgeBase();
      const created = await addUrl(kbId, `${base}/notes.txt?secret-query`);
      await settled(kbId, created.id);
      const jobs = await context.app
        .get(DataSource)
        .query(`SELECT data FROM ${context.config.jobQueueSchema}.job WHERE name = 'knowledge.index-source' AND singleton_key = $1`, [
          String(created.id),
        ]);
      expect(jobs.map((job: { data: unknown }) => job.data)).toEqual([{ accountId: owner.id, sourceId: created.id }]);
    });

    it('the sweep indexes a pending source that has no job (as the migration leaves the sources that existed before)', async () => {
      const kbId = await createKnowledgeBase();
      const dataSource = context.app.get(DataSource);
      const [{ id }] = await dataSource.query(
        `INSERT INTO knowledge_base_sources (account_id, knowledge_base_id, name, type, content, status) VALUES ($1, $2, 'Old', 'text', 'Written before passages existed.', 'pending') RETURNING id`,
        [owner.id, kbId],
      );
      await context.app.get<unknown, { sweep(): Promise<void> }>(SourceIndexing).sweep();
      expect(await settled(kbId, id)).toMatchObject({ status: 'ready' });
      expect((await search(kbId, 'passages'))[0].sourceId).toBe(id);
    });
  });

  describe('with private addresses not allowed (the default)', () => {
    let strict: TestContext;
    let account: TestAccount;
    beforeAll(async () => {
      strict = await createTestContext();
      account = await strict.createAccount();
    });
    afterAll(() => strict.close());

    it.each([
      ['the loopback test server', () => `${base}/notes.txt`, /^Could not fetch the URL: 127\.0\.0\.1 is a loopback address$/],
      [
        'localhost',
        () => `${base.replace('127.0.0.1', 'localhost')}/notes.txt`,
        /^Could not fetch the URL: localhost resolves to a loopback address$/,
      ],
      [
        'the metadata address',
        () => 'http://169.254.169.254/latest/meta-data/',
        /^Could not fetch the URL: 169\.254\.169\.254 is a cloud metadata address$/,
      ],
    ])('refuses %s, without reaching it', async (_name, url, error) => {
      const hitsBefore = hits.length;
      const kbId = await createKnowledgeBase(account, strict);
      const created = await addUrl(kbId, url(), account, strict);
      const source = await settled(kbId, created.id, account, strict);
      expect(source.status).toBe('failed');
      expect(source.error).toMatch(error);
      expect(hits.length).toBe(hitsBefore);
    });
  });
});
