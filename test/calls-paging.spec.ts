import * as fc from 'fast-check';
import { DataSource } from 'typeorm';
import { Call } from '../src/calls/call.entity';
import { decodeListCursor, encodeListCursor } from '../src/calls/list-cursor';
import { createTestContext, TestAccount, TestContext } from './helpers';

const BASE_URL = 'https://api.example.test';
const ISO = (date: Date) => date.toISOString();

type NewRow = Partial<Pick<Call, 'name' | 'callDate' | 'phone' | 'status' | 'callStatus' | 'agentId' | 'isTest'>>;

interface Listed {
  id: string;
  name: string;
  callDate: string;
}

describe('GET /calls paging (before= and Link)', () => {
  let context: TestContext;

  beforeAll(async () => {
    context = await createTestContext({ publicBaseUrl: BASE_URL });
  });
  afterAll(() => context.close());

  /** Calls written straight to the table (many at once, with chosen dates). */
  const insert = (account: TestAccount, calls: NewRow[]) =>
    context.app
      .get(DataSource)
      .getRepository(Call)
      .insert(calls.map((call) => ({ accountId: account.id, ...call })));
  const record = async (account: TestAccount, body: object): Promise<Listed> =>
    (await context.as(account).post('/calls').send(body).expect(201)).body;

  /** The next page's path and query, from a Link header (which must be absolute, under PUBLIC_BASE_URL). */
  function nextOf(link: string | undefined): string | undefined {
    if (link === undefined) return undefined;
    const match = /^<([^>]+)>; rel="next"$/.exec(link);
    expect(match).not.toBeNull();
    expect(match![1].startsWith(`${BASE_URL}/calls?`)).toBe(true);
    return match![1].slice(BASE_URL.length);
  }

  /** Follows the Link headers from `first` to the last page; returns every page. */
  async function walk(
    account: TestAccount,
    first: string,
    between?: (pageIndex: number, page: Listed[]) => Promise<void>,
  ): Promise<Listed[][]> {
    const pages: Listed[][] = [];
    let next: string | undefined = first;
    while (next !== undefined) {
      const response = await context.as(account).get(next).expect(200);
      expect(Array.isArray(response.body)).toBe(true);
      pages.push(response.body);
      next = nextOf(response.headers.link);
      if (next !== undefined) await between?.(pages.length - 1, response.body);
      expect(pages.length).toBeLessThan(200);
    }
    return pages;
  }

  const ids = (calls: Listed[]) => calls.map((call) => call.id);

  describe('walking the whole history', () => {
    let account: TestAccount;
    let agentId: number;

    beforeAll(async () => {
      account = await context.createAccount();
      agentId = (await context.as(account).post('/agents').send({ name: 'Pager' }).expect(201)).body.id;
      const base = Date.now() - 3600_000;
      const calls: NewRow[] = [];
      for (let i = 0; i < 47; i++) {
        calls.push({
          name: i % 3 === 0 ? `Priya ${i}` : `Ravi ${i}`,
          phone: `+91-98765-4${String(i).padStart(4, '0')}`,
          status: i % 2 ? 'qualified' : 'new',
          callStatus: i % 5 ? 'completed' : 'missed',
          agentId: i % 4 ? agentId : null,
          // Groups of four calls share a callDate (ties broken by id); a few are older than 10 days.
          callDate: new Date(base - Math.floor(i / 4) * 3600_000 - (i >= 40 ? 20 * 86400_000 : 0)),
          isTest: i === 7,
        });
      }
      await insert(account, calls);
    });

    const filters: [string, Record<string, string | number>][] = [
      ['no filter', {}],
      ['search', { search: 'priya' }],
      ['a phone search', { search: '98765 40' }],
      ['status', { status: 'QUALIFIED' }],
      ['callStatus', { callStatus: 'completed' }],
      ['agentId', {}], // the agent's id, known once it exists
      ['days', { days: 10 }],
      ['every filter', { search: 'ravi', status: 'qualified', callStatus: 'completed', days: 10 }],
    ];

    it.each(filters)('pages through every call once with %s, in the list order', async (name, query) => {
      const filter = name === 'agentId' ? { ...query, agentId } : query;
      const everything = (
        await context
          .as(account)
          .get('/calls')
          .query({ ...filter, limit: 1000 })
          .expect(200)
      ).body as Listed[];
      expect(everything.length).toBeGreaterThan(3);
      for (const limit of [1, 4, 5, everything.length, everything.length + 1]) {
        const search = new URLSearchParams({
          ...Object.fromEntries(Object.entries(filter).map(([key, value]) => [key, String(value)])),
          limit: String(limit),
        });
        const pages = await walk(account, `/calls?${search.toString()}`);
        expect(ids(pages.flat())).toEqual(ids(everything));
        // Every page but the last is full; the last is not (it may be empty when the total is a multiple of limit).
        expect(pages.slice(0, -1).every((page) => page.length === limit)).toBe(true);
        expect(pages.at(-1)!.length).toBeLessThan(limit);
      }
    });

    it('breaks ties on callDate by id, descending, across page boundaries', async () => {
      const pages = await walk(account, '/calls?limit=3');
      const listed = pages.flat();
      expect(new Set(listed.map((call) => call.callDate)).size).toBeLessThan(listed.length);
      for (let i = 1; i < listed.length; i++) {
        const [previous, current] = [listed[i - 1], listed[i]];
        expect(previous.callDate > current.callDate || (previous.callDate === current.callDate && previous.id > current.id)).toBe(true);
      }
    });

    it('puts the filters in the Link as the client sent them, normalised, and unknown parameters out', async () => {
      const response = await context
        .as(account)
        .get('/calls')
        .query({
          search: '  ravi  ',
          status: 'qualified',
          days: '10',
          agentId: String(agentId),
          limit: '2',
          colour: 'blue',
          callStatus: '',
        })
        .expect(200);
      const url = new URL(/^<([^>]+)>/.exec(response.headers.link)![1]);
      expect(url.origin + url.pathname).toBe(`${BASE_URL}/calls`);
      expect([...url.searchParams.keys()]).toEqual(['limit', 'search', 'status', 'agentId', 'days', 'before']);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        limit: '2',
        search: 'ravi',
        status: 'qualified',
        agentId: String(agentId),
        days: '10',
        before: expect.any(String),
      });
      const last = response.body.at(-1);
      expect(decodeListCursor(url.searchParams.get('before')!)).toEqual({ callDate: new Date(last.callDate), id: last.id });
    });

    it('encodes any search text in the Link so that following it searches the same text', async () => {
      const other = await context.createAccount();
      const name = 'Anna & Bob+Co =1 प्रिया 🙂 %_';
      await insert(
        other,
        [0, 1, 2].map((i) => ({ name, callDate: new Date(Date.now() - i * 1000) })),
      );
      const first = await context.as(other).get('/calls').query({ search: name, limit: 2 }).expect(200);
      expect(first.body).toHaveLength(2);
      const second = await context.as(other).get(nextOf(first.headers.link)!).expect(200);
      expect(second.body).toHaveLength(1);
      expect(second.body[0].name).toBe(name);
    });

    it('sends no Link on a page that is not full', async () => {
      const response = await context.as(account).get('/calls').query({ limit: 1000 }).expect(200);
      expect(response.headers.link).toBeUndefined();
    });
  });

  describe('while calls arrive', () => {
    it('repeats and skips nothing: newer calls wait for a new walk, calls recorded behind the cursor are on a later page', async () => {
      const account = await context.createAccount();
      const start = Date.now() - 86400_000;
      // 30 calls one minute apart, newest first at `start`.
      await insert(
        account,
        Array.from({ length: 30 }, (_, i) => ({ name: `original ${i}`, callDate: new Date(start - i * 60_000) })),
      );
      const original = (await context.as(account).get('/calls?limit=1000').expect(200)).body as Listed[];
      const arrivedNewer: string[] = [];
      const arrivedBehind: string[] = [];
      const pages = await walk(account, '/calls?limit=7', async (pageIndex, page) => {
        const cursorDate = Date.parse(page.at(-1)!.callDate);
        // A call now (newer than everything), one between the first call and the cursor (already walked past),
        // one at the cursor's very millisecond (its id decides its side), and one well behind the cursor.
        arrivedNewer.push((await record(account, { name: `now ${pageIndex}` })).id);
        arrivedNewer.push((await record(account, { name: `walked ${pageIndex}`, callDate: ISO(new Date(cursorDate + 30_000)) })).id);
        await record(account, { name: `tie ${pageIndex}`, callDate: ISO(new Date(cursorDate)) });
        arrivedBehind.push((await record(account, { name: `behind ${pageIndex}`, callDate: ISO(new Date(cursorDate - 90_000)) })).id);
      });
      const seen = ids(pages.flat());
      expect(new Set(seen).size).toBe(seen.length);
      for (const call of original) expect(seen).toContain(call.id);
      for (const id of arrivedNewer) expect(seen).not.toContain(id);
      for (const id of arrivedBehind) expect(seen).toContain(id);
      // What one walk shows is in the list's order.
      const shown = pages.flat();
      for (let i = 1; i < shown.length; i++) expect(shown[i - 1].callDate >= shown[i].callDate).toBe(true);
    });

    it('skips nothing when the call a cursor was made from is erased before the next page', async () => {
      const account = await context.createAccount();
      await insert(
        account,
        Array.from({ length: 9 }, (_, i) => ({ name: `call ${i}`, callDate: new Date(Date.now() - 3600_000 - i * 1000) })),
      );
      const first = await context.as(account).get('/calls?limit=3').expect(200);
      await context.as(account).delete(`/calls/${first.body[2].id}`).expect(204);
      const rest = await walk(account, nextOf(first.headers.link)!);
      expect(rest.flat().map((call) => call.name)).toEqual(['call 3', 'call 4', 'call 5', 'call 6', 'call 7', 'call 8']);
    });
  });

  describe('callDate precision', () => {
    it('stores callDate to the millisecond, whoever writes it, so that the cursor of a visible callDate is exact', async () => {
      const account = await context.createAccount();
      const database = context.app.get(DataSource);
      await database.query(
        `INSERT INTO calls (account_id, name, call_date) VALUES ($1, 'a', '2026-01-01T00:00:00.1234Z'), ($1, 'b', '2026-01-01T00:00:00.1236Z'), ($1, 'c', '2026-01-01T00:00:00.1231Z')`,
        [account.id],
      );
      const stored = await database.query(
        `SELECT name, to_char(call_date AT TIME ZONE 'UTC', 'SS.US') AS seconds FROM calls WHERE account_id = $1 ORDER BY name`,
        [account.id],
      );
      expect(stored).toEqual([
        { name: 'a', seconds: '00.123000' },
        { name: 'b', seconds: '00.124000' },
        { name: 'c', seconds: '00.123000' },
      ]);
      const pages = await walk(account, '/calls?limit=1');
      expect(
        pages
          .flat()
          .map((call) => call.name)
          .sort(),
      ).toEqual(['a', 'b', 'c']);
    });
  });

  /** The same bytes, spelt with the unused low bit of the last character set (Buffer decodes both alike). */
  function strayBits(text: string): string {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const spelt = `${text.slice(0, -1)}${alphabet[alphabet.indexOf(text.at(-1)!) ^ 1]}`;
    expect(text.length % 4).not.toBe(0);
    expect(Buffer.from(spelt, 'base64url').equals(Buffer.from(text, 'base64url'))).toBe(true);
    return spelt;
  }

  describe('malformed cursors', () => {
    const cursor = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
    const id = '5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90';
    const valid = encodeListCursor({ callDate: new Date('2026-11-22T09:15:02.123Z'), id });
    const bad: [string, string][] = [
      ['not base64url', '!!!'],
      ['standard base64 padding', `${valid}=`],
      ['JSON spelt another way', cursor(`[1, "2026-11-22T09:15:02.123Z", "${id}"]`)],
      ['base64url with stray bits set', strayBits(cursor(`[1, "2026-11-22T09:15:02.123Z", "${id}"]`))],
      ['not JSON', cursor('hello')],
      ['JSON that is not an array', cursor({ version: 1 })],
      ['a wrong version', cursor([2, '2026-11-22T09:15:02.123Z', id])],
      ['the version as a string', cursor(['1', '2026-11-22T09:15:02.123Z', id])],
      ['a date that does not exist', cursor([1, '2026-02-30T09:15:02.123Z', id])],
      ['a date without milliseconds', cursor([1, '2026-11-22T09:15:02Z', id])],
      ['a date with an offset', cursor([1, '2026-11-22T09:15:02.123+01:00', id])],
      ['a date as a number', cursor([1, 1795428854000, id])],
      ["a date before PostgreSQL's range", cursor([1, '-004713-11-23T00:00:00.000Z', id])],
      ["a date after a Date's range", cursor([1, '+275760-09-13T00:00:00.001Z', id])],
      ['a bad uuid', cursor([1, '2026-11-22T09:15:02.123Z', 'not-a-uuid'])],
      ['an upper-case uuid', cursor([1, '2026-11-22T09:15:02.123Z', id.toUpperCase()])],
      ['an extra element', cursor([1, '2026-11-22T09:15:02.123Z', id, 4])],
      ['trailing junk after the JSON', cursor(`[1,"2026-11-22T09:15:02.123Z","${id}"]x`)],
      ['junk after the cursor', `${valid}AAAA`],
      ['an empty value', ''],
      ['a very long value', 'A'.repeat(10_000)],
    ];

    it.each(bad)('refuses %s with a 400 naming before', async (_, before) => {
      const account = await context.createAccount();
      const response = await context.as(account).get('/calls').query({ before }).expect(400);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: expect.any(String),
        details: [expect.objectContaining({ field: 'before' })],
      });
    });

    it('answers any tuple dressed as a cursor with a 200 or a 400, never anything else', async () => {
      const account = await context.createAccount();
      await insert(account, [{ name: 'one', callDate: new Date() }]);
      const date = fc.oneof(
        fc.date({ noInvalidDate: true }).map((value) => value.toISOString()),
        fc.date({ noInvalidDate: true }).map((value) => value.toISOString().replace('Z', '+00:00')),
        fc.string(),
        fc.integer(),
      );
      const tuple = fc.oneof(
        fc.tuple(fc.constantFrom<unknown>(1, 0, 2, '1', null), date, fc.oneof(fc.uuid().map(String), fc.string())),
        fc.jsonValue(),
      );
      const statuses = new Set<number>();
      await fc.assert(
        fc.asyncProperty(tuple, async (value) => {
          const response = await context
            .as(account)
            .get('/calls')
            .query({ before: cursor(value) });
          statuses.add(response.status);
          return response.status === 200 || (response.status === 400 && response.body.details?.[0]?.field === 'before');
        }),
        { numRuns: 300 },
      );
      expect(statuses.has(400)).toBe(true);
    }, 120_000);

    it('refuses a repeated before', async () => {
      const account = await context.createAccount();
      await context.as(account).get(`/calls?before=${valid}&before=${valid}`).expect(400);
    });

    it("accepts a cursor at the edges of PostgreSQL's range", async () => {
      const account = await context.createAccount();
      await insert(account, [{ name: 'now', callDate: new Date() }]);
      const oldest = cursor([1, '-004713-11-24T00:00:00.000Z', id]);
      const newest = cursor([1, '+275760-09-13T00:00:00.000Z', id]);
      expect((await context.as(account).get('/calls').query({ before: oldest }).expect(200)).body).toEqual([]);
      expect((await context.as(account).get('/calls').query({ before: newest }).expect(200)).body).toHaveLength(1);
    });
  });

  it("accepts a well-formed cursor the client made itself (cursors are not signed), which only positions the page within the caller's own calls", async () => {
    const account = await context.createAccount();
    const other = await context.createAccount();
    const at = (iso: string) => new Date(iso);
    await insert(account, [
      { name: 'mine old', callDate: at('2026-01-01T00:00:00.000Z') },
      { name: 'mine new', callDate: at('2026-03-01T00:00:00.000Z') },
      { name: 'mine test', callDate: at('2026-01-02T00:00:00.000Z'), isTest: true },
      { name: 'mine other status', callDate: at('2026-01-03T00:00:00.000Z'), status: 'lost' },
    ]);
    await insert(other, [{ name: 'theirs', callDate: at('2026-01-15T00:00:00.000Z') }]);
    const [theirs] = (await context.as(other).get('/calls').expect(200)).body as Listed[];
    // Made from the other account's call, and from a made-up position: each is only a place in this account's list.
    for (const position of [
      { callDate: at(theirs.callDate), id: theirs.id },
      { callDate: at('2026-02-01T00:00:00.000Z'), id: '00000000-0000-4000-8000-000000000000' },
    ]) {
      const page = async (query: Record<string, string>) =>
        (
          (
            await context
              .as(account)
              .get('/calls')
              .query({ before: encodeListCursor(position), ...query })
              .expect(200)
          ).body as Listed[]
        ).map((call) => call.name);
      expect(await page({})).toEqual(['mine other status', 'mine old']);
      expect(await page({ status: 'lost' })).toEqual(['mine other status']);
    }
  });

  it('decodes what it encodes, and only that', () => {
    const position = { callDate: new Date('2026-11-22T09:15:02.123Z'), id: '5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90' };
    const text = encodeListCursor(position);
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeListCursor(text)).toEqual(position);
    // Every single-character change is refused or decodes to another valid position, never to garbage.
    for (let i = 0; i < text.length; i++) {
      const changed = `${text.slice(0, i)}${text[i] === 'A' ? 'B' : 'A'}${text.slice(i + 1)}`;
      const decoded = decodeListCursor(changed);
      if (decoded) expect(encodeListCursor(decoded)).toBe(changed);
    }
  });
});
