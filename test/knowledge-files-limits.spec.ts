import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/config';
import { READ_FILE_JOB } from '../src/knowledge-bases/source-indexing';
import { createTestContext, eventually, listenOnLoopback, TestAccount, TestContext } from './helpers';
import { settledSource } from './knowledge-helpers';
import { watchEventLoopHolds } from './support/event-loop-holds';
import { RawResponse, rawRequest } from './recordings-helpers';

/**
 * The limits of file sources: KNOWLEDGE_MAX_FILE_BYTES to the byte, refusals answered while the body is still
 * arriving (413, 415, 404) with nothing left behind, and the caps of the reading's worker thread (its deadline
 * and its heap) against files made to exhaust them, with the service unharmed and its event loop free while
 * files are read, at most KNOWLEDGE_EXTRACTION_WORKERS at a time.
 */

const FIXTURES = path.join(__dirname, 'fixtures', 'knowledge');
const MAX_BYTES = 300_000;
// The deadline: far short of laborious.pdf's reading (some 20 s of CPU). A file that must be read gets a roomier one:
// a reading gets only the CPU the machine leaves idle, and other tests may leave little.
const LIMITS = { maxFileBytes: MAX_BYTES, extractionWorkers: 2, extractionTimeoutMs: 5_000, extractionMemoryMb: 512 };
const BOUNDARY = 'limitsboundary';

/** A multipart form around a file given in pieces, with no Content-Length: the server counts. */
async function* form(file: Iterable<Buffer> | AsyncIterable<Buffer>, fileName = 'notes.txt'): AsyncGenerator<Buffer> {
  yield Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: text/plain\r\n\r\n`,
  );
  for await (const piece of file) yield piece;
  yield Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
}

/**
 * A request with its body written piece by piece, on a connection of its own that is not asked to close (so that
 * the server's way of ending a refused upload is what is tested): resolves with the response as soon as it has
 * arrived, while the body may still be going out; the body stops once the connection is gone.
 */
function sendForm(url: string, headers: Record<string, string>, body: AsyncIterable<Buffer>): Promise<RawResponse> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return rawRequest(url, 'POST', headers, body, agent).finally(() => setTimeout(() => agent.destroy(), 5_000).unref());
}

/** `bytes` of text, 64 KiB at a time, counting what has been handed out in `sent`. */
function* text(bytes: number, sent = { bytes: 0 }): Generator<Buffer> {
  for (let left = bytes; left > 0; left -= 64 * 1024) {
    const piece = Buffer.alloc(Math.min(64 * 1024, left), 'a');
    sent.bytes += piece.length;
    yield piece;
  }
}

describe('file source limits', () => {
  let context: TestContext;
  let owner: TestAccount;
  let dataSource: DataSource;
  let baseUrl: string;

  beforeAll(async () => {
    context = await createTestContext({ knowledgeFiles: LIMITS });
    owner = await context.createAccount();
    dataSource = context.app.get(DataSource);
    baseUrl = `http://127.0.0.1:${await listenOnLoopback(context.app.getHttpServer())}`;
  });
  afterAll(() => context.close());

  const createKnowledgeBase = async (account = owner) =>
    (await context.as(account).post('/knowledge-bases').send({}).expect(201)).body.id as number;
  const post = (kbId: number, body: AsyncIterable<Buffer>, headers: Record<string, string> = {}, account = owner): Promise<RawResponse> =>
    sendForm(
      `${baseUrl}/knowledge-bases/${kbId}/sources`,
      { 'X-Api-Key': account.apiKey, 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}`, ...headers },
      body,
    );
  const json = (response: RawResponse) => JSON.parse(response.body.toString()) as Record<string, unknown>;
  const leftBehind = async (account = owner) =>
    Number(
      (
        await dataSource.query(`SELECT count(*) AS n FROM knowledge_file_chunks WHERE account_id = $1 AND source_id IS NULL`, [account.id])
      )[0].n,
    );
  const sourcesOf = async (kbId: number) => (await context.as(owner).get(`/knowledge-bases/${kbId}/sources`).expect(200)).body as unknown[];
  const upload = (kbId: number, name: string) =>
    context
      .as(owner)
      .post(`/knowledge-bases/${kbId}/sources`)
      .attach('file', readFileSync(path.join(FIXTURES, name)), name)
      .expect(201)
      .then((response) => response.body as { id: number });

  /** The source once it is no longer pending. */
  const settled = (kbId: number, sourceId: number) => settledSource(context, owner, kbId, sourceId);

  it('takes a file of exactly KNOWLEDGE_MAX_FILE_BYTES', async () => {
    const kbId = await createKnowledgeBase();
    const response = await post(kbId, form(text(MAX_BYTES)));
    expect(response.status).toBe(201);
    expect(json(response)).toMatchObject({ status: 'pending', bytes: MAX_BYTES, contentType: 'text/plain' });
  });

  it('refuses one byte more with a 413 as it streams in, leaving nothing behind', async () => {
    const kbId = await createKnowledgeBase();
    const response = await post(kbId, form(text(MAX_BYTES + 1)));
    expect(response.status).toBe(413);
    expect(json(response)).toEqual({ statusCode: 413, error: 'Payload Too Large', message: 'A file may be at most 300,000 bytes' });
    expect(await sourcesOf(kbId)).toEqual([]);
    expect(await leftBehind()).toBe(0);
  });

  it('answers the 413 at once, while a far larger body is still being sent, then cuts the connection', async () => {
    const kbId = await createKnowledgeBase();
    const sent = { bytes: 0 };
    const total = 4 * 1024 * 1024 * 1024; // made as it is sent, never held
    const response = await post(kbId, form(text(total, sent)));
    expect(response.status).toBe(413);
    // Answered long before the body's end: the client has written what the sockets buffer and what the server read
    // meanwhile (tens of megabytes when the machine is busy), not the 4 GiB.
    expect(sent.bytes).toBeLessThan(256 * 1024 * 1024);
    // Then the server drops what still comes for at most 2 s and cuts the connection: the sending stops for good.
    let previous = -1;
    await eventually(async () => {
      const stopped = sent.bytes === previous;
      previous = sent.bytes;
      await sleep(500);
      return stopped ? true : undefined;
    });
    expect(sent.bytes).toBeLessThan(total);
    expect(await leftBehind()).toBe(0);
  });

  it('refuses a declared Content-Length over the limit with a 413 before reading the body', async () => {
    const kbId = await createKnowledgeBase();
    const response = await post(kbId, form(text(1024)), { 'Content-Length': String(MAX_BYTES + 64 * 1024 + 1) });
    expect(response.status).toBe(413);
    expect(json(response).message).toBe('A file may be at most 300,000 bytes');
  });

  it('refuses a file of another type with a 415 from its first bytes, while the rest is still being sent', async () => {
    const kbId = await createKnowledgeBase();
    const sent = { bytes: 0 };
    const png = async function* () {
      yield readFileSync(path.join(FIXTURES, 'picture.png'));
      yield* text(512 * 1024 * 1024, sent);
    };
    const response = await post(kbId, form(png(), 'photo.png'));
    expect(response.status).toBe(415);
    expect(sent.bytes).toBeLessThan(32 * 1024 * 1024);
    expect(await leftBehind()).toBe(0);
  });

  it("refuses an upload to another account's knowledge base with a 404 before storing anything", async () => {
    const kbId = await createKnowledgeBase();
    const intruder = await context.createAccount();
    const sent = { bytes: 0 };
    const response = await post(kbId, form(text(64 * 1024 * 1024, sent)), {}, intruder);
    expect(response.status).toBe(404);
    expect(json(response).message).toBe(`Knowledge base ${kbId} not found`);
    expect(sent.bytes).toBeLessThan(32 * 1024 * 1024);
    expect(await leftBehind(intruder)).toBe(0);
    expect(await sourcesOf(kbId)).toEqual([]);
  });

  it('ends a reading that outlasts its deadline: the source fails, the service reads the next file', async () => {
    const kbId = await createKnowledgeBase();
    const laborious = await upload(kbId, 'laborious.pdf');
    expect(await settled(kbId, laborious.id)).toMatchObject({
      status: 'failed',
      error: 'The file took longer than 5 s to read, and was given up',
    });
    await context.http.get('/health').expect(200);
    // The deadline is read at each reading: the next file gets a roomy one, so that a machine busy with other tests
    // (a reading gets only the CPU they leave idle) cannot fail it; what is checked is that the host reads again.
    const { knowledgeFiles } = context.config; // the service's own settings (LIMITS itself: kept aside, not read back)
    const deadline = knowledgeFiles.extractionTimeoutMs;
    knowledgeFiles.extractionTimeoutMs = 60_000;
    try {
      const next = await upload(kbId, 'faq.docx');
      expect(await settled(kbId, next.id)).toMatchObject({ status: 'ready', error: '' });
    } finally {
      knowledgeFiles.extractionTimeoutMs = deadline;
    }
  }, 90_000);

  it('reads at most KNOWLEDGE_EXTRACTION_WORKERS files at a time, with the event loop free meanwhile', async () => {
    const kbId = await createKnowledgeBase();
    const uploads = [];
    for (let index = 0; index < 4; index++) uploads.push(await upload(kbId, 'laborious.pdf'));
    const holds = watchEventLoopHolds();
    let mostActive = 0;
    const activeReadings = `SELECT count(*)::int AS n FROM ${context.config.jobQueueSchema}.job WHERE name = $1 AND state = 'active'`;
    while ((await sourcesOf(kbId)).some((source) => (source as { status: string }).status === 'pending')) {
      mostActive = Math.max(mostActive, (await dataSource.query(activeReadings, [READ_FILE_JOB]))[0].n);
      await sleep(20);
    }
    const longestHold = holds.stop();
    for (const { id } of uploads) expect((await settled(kbId, id)).status).toBe('failed');
    expect(mostActive).toBe(LIMITS.extractionWorkers);
    // Each reading spent its 5 s in its worker: the service's own thread was never held for long.
    expect(longestHold).toBeLessThan(250);
  }, 60_000);
});

describe("file source limits: the reading's heap", () => {
  it('ends a reading that outgrows its heap: the source fails, the service reads the next file', async () => {
    const context = await createTestContext({ knowledgeFiles: { ...LIMITS, extractionTimeoutMs: 60_000, extractionMemoryMb: 64 } });
    try {
      const owner = await context.createAccount();
      const kbId = (await context.as(owner).post('/knowledge-bases').send({}).expect(201)).body.id;
      const upload = async (name: string) =>
        (
          await context
            .as(owner)
            .post(`/knowledge-bases/${kbId}/sources`)
            .attach('file', readFileSync(path.join(FIXTURES, name)), name)
            .expect(201)
        ).body.id as number;
      const settled = (sourceId: number) => settledSource(context, owner, kbId, sourceId);
      expect(await settled(await upload('hungry.pdf'))).toMatchObject({
        status: 'failed',
        error: 'The file needs more than 64 MiB of memory to read, and was given up',
      });
      await context.http.get('/health').expect(200);
      expect(await settled(await upload('loyalty.md'))).toMatchObject({ status: 'ready', error: '' });
    } finally {
      await context.close();
    }
  }, 90_000);
});

describe('file source limits by default', () => {
  it('takes 20 MiB exactly and refuses 20 MiB and one byte', async () => {
    expect(loadConfig({}).knowledgeFiles.maxFileBytes).toBe(20 * 1024 * 1024);
    const context = await createTestContext();
    try {
      const owner = await context.createAccount();
      const kbId = (await context.as(owner).post('/knowledge-bases').send({}).expect(201)).body.id;
      const port = await listenOnLoopback(context.app.getHttpServer());
      const post = (bytes: number) =>
        sendForm(
          `http://127.0.0.1:${port}/knowledge-bases/${kbId}/sources`,
          { 'X-Api-Key': owner.apiKey, 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` },
          form(text(bytes)),
        );
      const taken = await post(20 * 1024 * 1024);
      expect(taken.status).toBe(201);
      expect(JSON.parse(taken.body.toString()).bytes).toBe(20 * 1024 * 1024);
      const refused = await post(20 * 1024 * 1024 + 1);
      expect(refused.status).toBe(413);
      expect(JSON.parse(refused.body.toString()).message).toBe('A file may be at most 20 MiB');
    } finally {
      await context.close();
    }
  });
});
