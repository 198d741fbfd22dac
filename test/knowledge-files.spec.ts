import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { DataSource } from 'typeorm';
import { HINDI_SENTENCE, PAGE_THREE_SENTENCE, renamedPartBombDocx, TAMIL_SENTENCE, zipArchive } from '../scripts/knowledge-fixtures';
import { createLogger } from '../src/common/logger';
import { createTestContext, TestAccount, TestContext } from './helpers';
import { settledSource, SourceView as Source } from './knowledge-helpers';

/**
 * File sources (contract section 16), end to end: real files of every type uploaded as multipart/form-data,
 * read in a worker thread by the job queue, then searched; the hostile ones failed with a reason a customer
 * understands; names; refresh and delete; another account. The limits and the caps are
 * test/knowledge-files-limits.spec.ts.
 */

const FIXTURES = path.join(__dirname, 'fixtures', 'knowledge');
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name));

const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const ZIP_BOMB = 'The Word document expands to more than 100 MiB (a zip bomb, or a document too large to read)';

/**
 * Each reading starts a file-reading process (pdf.js, mammoth): a few hundred milliseconds on a quiet machine, many
 * seconds when the cores are shared with the rest of the suite. The tests wait on the sources' states, never on time;
 * the longer bound only keeps a slow machine from being reported as a failure.
 */
jest.setTimeout(90_000);

describe('file sources', () => {
  let context: TestContext;
  let owner: TestAccount;
  let dataSource: DataSource;
  const logLines: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    context = await createTestContext({}, { logger: createLogger({ logLevel: 'debug' }, sink) });
    owner = await context.createAccount();
    dataSource = context.app.get(DataSource);
  });
  afterAll(() => context.close());

  const createKnowledgeBase = async (account = owner) =>
    (await context.as(account).post('/knowledge-bases').send({}).expect(201)).body.id as number;

  /** Uploads a file (supertest writes the form), with the form's other fields. */
  const upload = (kbId: number, file: Buffer, fileName: string, fields: Record<string, string> = {}, account = owner) => {
    let request = context.as(account).post(`/knowledge-bases/${kbId}/sources`);
    for (const [name, value] of Object.entries(fields)) request = request.field(name, value);
    return request.attach('file', file, fileName);
  };

  /** The source once its reading has ended (no longer pending), read through the API. */
  const settled = (kbId: number, sourceId: number, account = owner) => settledSource(context, account, kbId, sourceId);

  const search = async (kbId: number, q: string) =>
    (await context.as(owner).get(`/knowledge-bases/${kbId}/search`).query({ q }).expect(200)).body as { sourceId: number; text: string }[];

  /** Stored pieces of the account's uploads that are no source's: what a refused or failed upload would leave behind. */
  const leftBehind = async (account = owner) =>
    Number(
      (
        await dataSource.query(`SELECT count(*) AS n FROM knowledge_file_chunks WHERE account_id = $1 AND source_id IS NULL`, [account.id])
      )[0].n,
    );
  /** Stored pieces of a source's file. */
  const piecesOf = async (sourceId: number) =>
    Number((await dataSource.query(`SELECT count(*) AS n FROM knowledge_file_chunks WHERE source_id = $1`, [sourceId]))[0].n);

  /** A form written by hand: the `file` part's Content-Disposition exactly as given. */
  const handWrittenUpload = (kbId: number, disposition: string, file: Buffer) => {
    const boundary = 'handwrittenboundary';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; ${disposition}\r\nContent-Type: text/plain\r\n\r\n`),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    return context
      .as(owner)
      .post(`/knowledge-bases/${kbId}/sources`)
      .set('Content-Type', `multipart/form-data; boundary=${boundary}`)
      .send(body);
  };

  it.each([
    ['a PDF', 'faq.pdf', 'application/pdf', 'refunds original card', 'customers may return any unopened product within thirty days'],
    ['a DOCX', 'faq.docx', DOCX_TYPE, 'blender warranty', 'Every blender carries a warranty of two years from the date of delivery.'],
    [
      'an HTML file, reduced to its readable text',
      'delivery.html',
      'text/html',
      'suburbs dispatch',
      'Zone 1: parcels to the suburbs arrive',
    ],
    ['Markdown, as it is', 'loyalty.md', 'text/markdown', 'loyalty points', '# Loyalty programme\n\nMembers earn **one point**'],
    [
      'UTF-8 text with a byte order mark (dropped)',
      'bom.txt',
      'text/plain',
      'gift wrapping',
      'Gift wrapping is free during the festival season.',
    ],
    ['UTF-16 text with its byte order mark', 'utf16.txt', 'text/plain', 'parking', 'Parking is free for customers after six.'],
  ])('reads %s: pending at once, then ready with its text, searchable', async (_what, name, contentType, query, expected) => {
    const kbId = await createKnowledgeBase();
    const file = fixture(name);
    const created = (await upload(kbId, file, name).expect(201)).body as Source;
    expect(created).toMatchObject({
      name,
      type: 'file',
      status: 'pending',
      content: '',
      error: '',
      fileName: name,
      contentType,
      bytes: file.length,
    });
    const source = await settled(kbId, created.id);
    expect(source).toMatchObject({ status: 'ready', error: '', fileName: name, contentType, bytes: file.length });
    expect(source.content).toContain(expected);
    const found = await search(kbId, query);
    expect(found[0]).toMatchObject({ sourceId: created.id });
    expect(found[0].text).toContain(expected.split('\n')[0]);
  });

  it('reads a CSV file as passages of whole rows, each value with its column', async () => {
    const kbId = await createKnowledgeBase();
    const created = (await upload(kbId, fixture('prices.csv'), 'prices.csv').expect(201)).body as Source;
    expect(created.contentType).toBe('text/csv');
    const source = await settled(kbId, created.id);
    expect(source.content).toBe(
      'Product: Mixer grinder; Price (INR): 3499; Notes: Three jars, 750 W\n' +
        'Product: Pressure cooker; Price (INR): 1899; Notes: Five litres; "induction" base\n' +
        'Product: Ceiling fan; Price (INR): 2250; Notes: Energy saving',
    );
    expect((await search(kbId, 'pressure cooker induction'))[0].text).toContain('Product: Pressure cooker; Price (INR): 1899');
  });

  it('leaves out the navigation and footer of an HTML file, as for a url source', async () => {
    const kbId = await createKnowledgeBase();
    const created = (await upload(kbId, fixture('delivery.html'), 'delivery.html').expect(201)).body as Source;
    expect((await settled(kbId, created.id)).status).toBe('ready');
    expect(await search(kbId, 'navigationonlyword')).toEqual([]);
    expect(await search(kbId, 'footeronlyword')).toEqual([]);
  });

  it('finds a sentence from page 3 of a PDF', async () => {
    const kbId = await createKnowledgeBase();
    const created = (await upload(kbId, fixture('faq.pdf'), 'faq.pdf').expect(201)).body as Source;
    expect((await settled(kbId, created.id)).status).toBe('ready');
    const [best] = await search(kbId, 'When is the rooftop garden open?');
    expect(best.sourceId).toBe(created.id);
    expect(best.text).toContain(PAGE_THREE_SENTENCE);
  });

  it.each([
    ['a PDF', 'languages.pdf'],
    ['a DOCX', 'faq.docx'],
  ])('reads Hindi and Tamil text from %s', async (_what, name) => {
    const kbId = await createKnowledgeBase();
    const created = (await upload(kbId, fixture(name), name).expect(201)).body as Source;
    const source = await settled(kbId, created.id);
    expect(source.content).toContain(HINDI_SENTENCE);
    // The PDF's font has no glyph for the final full stop: the Tamil sentence without it.
    expect(source.content).toContain(TAMIL_SENTENCE.replace(/\.$/, ''));
    expect((await search(kbId, 'खुलती'))[0].text).toContain(HINDI_SENTENCE);
    expect((await search(kbId, 'புத்தகம்'))[0].text).toContain('தமிழ் புத்தகம்');
  });

  it.each([
    ['a PDF with a password', 'protected.pdf', 'The PDF is protected by a password: upload a copy without one'],
    [
      'a PDF of scanned images only',
      'scanned.pdf',
      'The PDF has no text to read: it may hold only scanned images. Upload a PDF whose text can be selected',
    ],
    ['a DOCX zip bomb (512 MiB of XML in 510 KB)', 'bomb.docx', ZIP_BOMB],
    ['a ZIP archive that is not a Word document', 'not-word.zip', 'The file is a ZIP archive but not a Word document (.docx)'],
  ])('fails %s, with the reason', async (_what, name, reason) => {
    const kbId = await createKnowledgeBase();
    const created = (await upload(kbId, fixture(name), name).expect(201)).body as Source;
    expect(await settled(kbId, created.id)).toMatchObject({ status: 'failed', error: reason, content: '' });
    await context.http.get('/health').expect(200);
  });

  it.each([
    ['a PDF cut short', () => fixture('faq.pdf').subarray(0, 900), 'The file is not a readable PDF: it is damaged, or not a PDF'],
    // mammoth reads the main document wherever _rels/.rels says it is: every part is bounded, whatever its name.
    ['a DOCX zip bomb whose main document is word/doc.bin (200 MiB in 210 KB)', () => renamedPartBombDocx(200), ZIP_BOMB],
    [
      'a DOCX whose archive is damaged',
      () => Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(2000, 7)]),
      'The file is not a readable Word document (.docx): it is damaged',
    ],
  ])('fails %s, with the reason', async (_what, file, reason) => {
    const kbId = await createKnowledgeBase();
    const created = (await upload(kbId, file(), 'broken.bin').expect(201)).body as Source;
    expect(await settled(kbId, created.id)).toMatchObject({ status: 'failed', error: reason });
  });

  it('fails a text file that is not UTF-8 past its first bytes', async () => {
    const kbId = await createKnowledgeBase();
    const text = Buffer.concat([Buffer.alloc(10_000, 'a'), Buffer.from('Crème brûlée', 'latin1')]);
    const created = (await upload(kbId, text, 'menu.txt').expect(201)).body as Source;
    expect(await settled(kbId, created.id)).toMatchObject({
      status: 'failed',
      error: 'The file is not valid UTF-8 text: save it as UTF-8 and upload it again',
    });
  });

  it.each([
    ['an image', 'picture.png', 'image/png'],
    ['text in Latin-1 (not UTF-8)', 'latin1.txt', 'text/plain'],
  ])('refuses %s with a 415, storing nothing', async (_what, name) => {
    const kbId = await createKnowledgeBase();
    const response = await upload(kbId, fixture(name), name).expect(415);
    expect(response.body).toEqual({
      statusCode: 415,
      error: 'Unsupported Media Type',
      message: 'Unsupported file type: only PDF, DOCX, Markdown, plain text (UTF-8), HTML and CSV files are read',
    });
    expect((await context.as(owner).get(`/knowledge-bases/${kbId}/sources`).expect(200)).body).toEqual([]);
    expect(await leftBehind()).toBe(0);
  });

  it.each([
    ['a spreadsheet (XLSX)', 'prices.xlsx', [{ name: 'xl/workbook.xml', data: Buffer.from('<workbook/>') }]],
    ['a presentation (PPTX)', 'deck.pptx', [{ name: 'ppt/presentation.xml', data: Buffer.from('<presentation/>') }]],
    [
      'an OpenDocument text (ODT)',
      'notes.odt',
      [
        { name: 'mimetype', data: Buffer.from('application/vnd.oasis.opendocument.text') },
        { name: 'content.xml', data: Buffer.from('<office:document-content/>') },
      ],
    ],
  ])('refuses %s with a 415 from its first entry, though it is a ZIP archive as a DOCX is', async (_what, name, entries) => {
    const kbId = await createKnowledgeBase();
    // Each with a Word part besides, so that only its first entry tells it from a Word document.
    const archive = zipArchive([
      ...entries,
      { name: '[Content_Types].xml', data: Buffer.from('<Types/>') },
      { name: 'word/document.xml', data: Buffer.from('<w:document/>') },
    ]);
    const response = await upload(kbId, archive, name).expect(415);
    expect(response.body.message).toBe('Unsupported file type: only PDF, DOCX, Markdown, plain text (UTF-8), HTML and CSV files are read');
    expect((await context.as(owner).get(`/knowledge-bases/${kbId}/sources`).expect(200)).body).toEqual([]);
    expect(await leftBehind()).toBe(0);
  });

  it("decides the type by the content, not by the name or the client's Content-Type", async () => {
    const kbId = await createKnowledgeBase();
    const disguised = await context
      .as(owner)
      .post(`/knowledge-bases/${kbId}/sources`)
      .attach('file', fixture('faq.pdf'), { filename: 'notes.txt', contentType: 'text/plain' })
      .expect(201);
    expect(disguised.body).toMatchObject({ fileName: 'notes.txt', contentType: 'application/pdf' });
    await context
      .as(owner)
      .post(`/knowledge-bases/${kbId}/sources`)
      .attach('file', fixture('picture.png'), { filename: 'faq.pdf', contentType: 'application/pdf' })
      .expect(415);
  });

  it('keeps the last path segment of a file name, without control characters, at most 255 characters with its extension', async () => {
    const kbId = await createKnowledgeBase();
    const text = Buffer.from('Opening hours: nine to six.');
    // As Content-Disposition parameters: quoted (raw UTF-8, as browsers and curl send them) or RFC 5987 (percent-encoded).
    const cases: [string, string][] = [
      ['filename="../../etc/passwd.txt"', 'passwd.txt'],
      ['filename="C:\\Users\\me\\Documents\\faq.txt"', 'faq.txt'],
      ["filename*=UTF-8''in%00voice%07s%1F%7F.txt", 'invoices.txt'],
      ["filename*=UTF-8''..%2F..%2Fsecret%00.txt", 'secret.txt'],
      ['filename="  spaced name.txt  "', 'spaced name.txt'],
      ['filename="मूल्य सूची.txt"', 'मूल्य सूची.txt'],
      ["filename*=UTF-8''%01%02%20", 'file'],
      [`filename="${'n'.repeat(996)}.txt"`, `${'n'.repeat(251)}.txt`],
    ];
    for (const [disposition, kept] of cases) {
      const response = await handWrittenUpload(kbId, disposition, text);
      expect({ disposition, status: response.status }).toEqual({ disposition, status: 201 });
      const created = response.body as Source;
      expect({ disposition, fileName: created.fileName }).toEqual({ disposition, fileName: kept });
      // The name defaults to the file name, within the 200 characters of a name.
      expect(created.name).toBe(kept.length > 200 ? `${'n'.repeat(196)}.txt` : kept);
    }
    // Control characters written raw into the part's header make it malformed.
    const raw = await handWrittenUpload(kbId, 'filename="in\u0000voice.txt"', text).expect(400);
    expect(raw.body.message).toBe('Multipart: Malformed part header');
    expect(await leftBehind()).toBe(0);
  });

  it('takes the name from the form, with the rules of a name', async () => {
    const kbId = await createKnowledgeBase();
    const file = Buffer.from('Opening hours: nine to six.');
    expect((await upload(kbId, file, 'hours.txt', { name: '  Opening hours  ', type: 'file' }).expect(201)).body).toMatchObject({
      name: 'Opening hours',
      fileName: 'hours.txt',
    });
    const refused = await upload(kbId, file, 'hours.txt', { name: 'x'.repeat(201) }).expect(400);
    expect(refused.body.details).toEqual([{ field: 'name', message: 'name must be 1–200 characters' }]);
    expect(await leftBehind()).toBe(0);
  });

  it('refuses a form without a file, with other fields, or an empty file, storing nothing', async () => {
    const kbId = await createKnowledgeBase();
    const missing = await context.as(owner).post(`/knowledge-bases/${kbId}/sources`).field('name', 'No file').expect(400);
    expect(missing.body.details).toEqual([{ field: 'file', message: 'file is required: the file to read, as a form part named file' }]);
    const file = Buffer.from('Some text.');
    const content = await upload(kbId, file, 'a.txt', { content: 'text' }).expect(400);
    expect(content.body.details).toEqual([{ field: 'content', message: 'content is not taken with an upload: the file is the content' }]);
    const type = await upload(kbId, file, 'a.txt', { type: 'text' }).expect(400);
    expect(type.body.details).toEqual([{ field: 'type', message: 'type must be file (or left out) for an upload' }]);
    await upload(kbId, file, 'a.txt', { type: 'url' }).expect(400);
    await upload(kbId, file, 'a.txt', { colour: 'blue' }).expect(400);
    const empty = await upload(kbId, Buffer.alloc(0), 'empty.txt').expect(400);
    expect(empty.body.message).toBe('The file is empty');
    const json = await context.as(owner).post(`/knowledge-bases/${kbId}/sources`).send({ type: 'file', content: 'x' }).expect(400);
    expect(json.body.details[0].field).toBe('type');
    expect((await context.as(owner).get(`/knowledge-bases/${kbId}/sources`).expect(200)).body).toEqual([]);
    expect(await leftBehind()).toBe(0);
  });

  it('shows the file fields on every source: "" and 0 for text and url sources', async () => {
    const kbId = await createKnowledgeBase();
    const text = (await context.as(owner).post(`/knowledge-bases/${kbId}/sources`).send({ content: 'Plain text.' }).expect(201)).body;
    expect(text).toMatchObject({ type: 'text', fileName: '', contentType: '', bytes: 0 });
    const file = (await upload(kbId, fixture('loyalty.md'), 'loyalty.md').expect(201)).body as Source;
    const knowledgeBase = (await context.as(owner).get(`/knowledge-bases/${kbId}`).expect(200)).body;
    expect(knowledgeBase.sourceCount).toBe(2);
    expect(knowledgeBase.sources[1]).toMatchObject({
      id: file.id,
      type: 'file',
      fileName: 'loyalty.md',
      contentType: 'text/markdown',
      bytes: 120,
    });
  });

  it('reads the kept file again on refresh, and deletes it with its source or its knowledge base', async () => {
    const kbId = await createKnowledgeBase();
    const created = (await upload(kbId, fixture('faq.docx'), 'faq.docx').expect(201)).body as Source;
    const first = await settled(kbId, created.id);
    expect(first.status).toBe('ready');
    const refreshed = await context.as(owner).post(`/knowledge-bases/${kbId}/sources/${created.id}/refresh`).expect(202);
    expect(refreshed.body).toMatchObject({ id: created.id, status: 'pending', fileName: 'faq.docx' });
    expect(await settled(kbId, created.id)).toEqual(first);
    expect((await search(kbId, 'blender warranty'))[0].sourceId).toBe(created.id);

    expect(await piecesOf(created.id)).toBeGreaterThan(0);
    await context.as(owner).delete(`/knowledge-bases/${kbId}/sources/${created.id}`).expect(204);
    expect(await piecesOf(created.id)).toBe(0);
    const other = await createKnowledgeBase();
    const second = (await upload(other, fixture('loyalty.md'), 'loyalty.md').expect(201)).body as Source;
    expect(await piecesOf(second.id)).toBeGreaterThan(0);
    await context.as(owner).delete(`/knowledge-bases/${other}`).expect(204);
    expect(await piecesOf(second.id)).toBe(0);
  });

  it("lets another account neither upload to, see, refresh nor delete a knowledge base's files", async () => {
    const intruder = await context.createAccount();
    const kbId = await createKnowledgeBase();
    const created = (await upload(kbId, fixture('loyalty.md'), 'secret-loyalty.md').expect(201)).body as Source;
    const before = await settled(kbId, created.id);
    const refused = await upload(kbId, fixture('loyalty.md'), 'intrusion.md', {}, intruder).expect(404);
    expect(refused.body.message).toBe(`Knowledge base ${kbId} not found`);
    expect(await leftBehind(intruder)).toBe(0);
    await context.as(intruder).get(`/knowledge-bases/${kbId}/sources`).expect(404);
    await context.as(intruder).post(`/knowledge-bases/${kbId}/sources/${created.id}/refresh`).expect(404);
    await context.as(intruder).delete(`/knowledge-bases/${kbId}/sources/${created.id}`).expect(404);
    expect(JSON.stringify((await context.as(intruder).get('/knowledge-bases').expect(200)).body)).not.toContain('secret-loyalty');
    expect(await settled(kbId, created.id)).toEqual(before);
  });

  describe('with an Idempotency-Key (contract section 12)', () => {
    const sourcesOf = async (kbId: number) =>
      (await context.as(owner).get(`/knowledge-bases/${kbId}/sources`).expect(200)).body as Source[];

    it('replays the first answer to the same upload sent again, and keeps one copy of the file', async () => {
      const kbId = await createKnowledgeBase();
      const send = () => upload(kbId, fixture('loyalty.md'), 'loyalty.md', { name: 'Loyalty' }).set('Idempotency-Key', 'upload-1');
      const first = await send().expect(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const again = await send().expect(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      expect((await sourcesOf(kbId)).map((source) => source.id)).toEqual([first.body.id]);
      // The retry's copy of the file was deleted: the source's pieces only.
      expect(await leftBehind()).toBe(0);
      expect(await piecesOf(first.body.id)).toBe(1);
    });

    it('answers 422 to another file, another name or another field under the same key, and stores nothing of it', async () => {
      const kbId = await createKnowledgeBase();
      const first = await upload(kbId, fixture('loyalty.md'), 'loyalty.md').set('Idempotency-Key', 'upload-2').expect(201);
      const others = [
        () => upload(kbId, fixture('prices.csv'), 'loyalty.md'),
        () => upload(kbId, fixture('loyalty.md'), 'loyalty-2.md'),
        () => upload(kbId, fixture('loyalty.md'), 'loyalty.md', { name: 'Points' }),
      ];
      for (const other of others) {
        const refused = await other().set('Idempotency-Key', 'upload-2').expect(422);
        expect(refused.body.message).toContain('Idempotency-Key');
      }
      expect((await sourcesOf(kbId)).map((source) => source.id)).toEqual([first.body.id]);
      expect(await leftBehind()).toBe(0);
    });
  });

  it('writes no file content, and no file name, into the logs', async () => {
    const kbId = await createKnowledgeBase();
    const marker = 'zebracrossingmarker';
    const created = (await upload(kbId, Buffer.from(`The ${marker} is by the main gate.`), `${marker}.txt`).expect(201)).body as Source;
    expect((await settled(kbId, created.id)).status).toBe('ready');
    const failed = (await upload(kbId, fixture('protected.pdf'), `${marker}.pdf`).expect(201)).body as Source;
    expect((await settled(kbId, failed.id)).status).toBe('failed');
    const lines = logLines.join('');
    expect(lines).toContain('File source read');
    expect(lines).not.toContain(marker);
  });
});
