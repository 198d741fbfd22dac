import { DataSource } from 'typeorm';
import { resolveUsageRange } from '../src/usage/usage-range';
import { createTestContext, TestAccount, TestContext } from './helpers';

interface DayRow {
  date: string;
  calls: number;
  durationSeconds: number;
  creditsUsed: number;
}
interface AgentRow {
  agentId: number | null;
  agent: string;
  calls: number;
  durationSeconds: number;
  creditsUsed: number;
}

const cents = (credits: number) => Math.round(credits * 100);
const todayUtc = () => new Date().toISOString().slice(0, 10);
const addDays = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);

describe('GET /usage', () => {
  let context: TestContext;

  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());

  const record = async (account: TestAccount, body: object) => (await context.as(account).post('/calls').send(body).expect(201)).body;
  const usage = async <T>(account: TestAccount, query: Record<string, string> = {}) =>
    (await context.as(account).get('/usage').query(query).expect(200)).body as T[];

  describe('per UTC day', () => {
    it('lists every day of the range in order, zeros included, split at midnight UTC, without test calls or other accounts', async () => {
      const account = await context.createAccount();
      const other = await context.createAccount();
      await record(account, { callDate: '2026-02-28T23:59:59.999Z', durationSeconds: 600 });
      await record(account, { callDate: '2026-03-01T23:59:59.999Z', durationSeconds: 60 });
      await record(account, { callDate: '2026-03-02T05:30:00+05:30', durationSeconds: 30 }); // 00:00 UTC
      await record(account, { callDate: '2026-03-02T12:00:00.000Z', durationSeconds: 95 });
      await record(account, { callDate: '2026-03-02T13:00:00.000Z', durationSeconds: 95, isTest: true });
      await record(account, { callDate: '2026-03-04T00:00:00.000Z', durationSeconds: 60 });
      await record(other, { callDate: '2026-03-02T12:00:00.000Z', durationSeconds: 1000 });
      const rows = await usage<DayRow>(account, { from: '2026-03-01', to: '2026-03-03' });
      expect(rows).toEqual([
        { date: '2026-03-01', calls: 1, durationSeconds: 60, creditsUsed: 1 },
        { date: '2026-03-02', calls: 2, durationSeconds: 125, creditsUsed: 0.5 + 1.58 },
        { date: '2026-03-03', calls: 0, durationSeconds: 0, creditsUsed: 0 },
      ]);
      expect(await usage<DayRow>(account, { from: '2026-03-01', to: '2026-03-01', groupBy: 'day' })).toHaveLength(1);
    });

    it('sums fractional durations exactly', async () => {
      const account = await context.createAccount();
      for (const durationSeconds of [0.1, 0.2, 61.123, 0.007]) await record(account, { callDate: '2026-05-05T10:00:00Z', durationSeconds });
      const [day] = await usage<DayRow>(account, { from: '2026-05-05', to: '2026-05-05' });
      expect(day.durationSeconds).toBe(61.43);
    });

    it('defaults to the last 30 UTC days, today included; from alone runs to today, to alone starts 29 days before', async () => {
      const account = await context.createAccount();
      const before = todayUtc();
      const rows = await usage<DayRow>(account);
      const after = todayUtc();
      expect(rows).toHaveLength(30);
      expect([before, after]).toContain(rows[29].date);
      expect(rows[0].date).toBe(addDays(rows[29].date, -29));
      expect(rows.every((row, index) => index === 0 || row.date === addDays(rows[index - 1].date, 1))).toBe(true);
      const fromOnly = await usage<DayRow>(account, { from: addDays(before, -2) });
      expect(fromOnly[0].date).toBe(addDays(before, -2));
      expect([before, after]).toContain(fromOnly.at(-1)!.date);
      const toOnly = await usage<DayRow>(account, { to: '2026-03-31' });
      expect([toOnly[0].date, toOnly.at(-1)!.date, toOnly.length]).toEqual(['2026-03-02', '2026-03-31', 30]);
    });

    it('answers a leap year of 366 days, and refuses 367', async () => {
      const account = await context.createAccount();
      expect(await usage<DayRow>(account, { from: '2024-01-01', to: '2024-12-31' })).toHaveLength(366);
      const response = await context.as(account).get('/usage').query({ from: '2024-01-01', to: '2025-01-01' }).expect(400);
      expect(response.body.details).toEqual([
        { field: 'from', message: 'the range may cover at most 366 days; 2024-01-01 to 2025-01-01 is 367' },
      ]);
    });
  });

  describe('the range of dates: years 0001–9999, as for callDate', () => {
    it.each([
      ['the first instant of year 0001', '0001-01-01T00:00:00.000Z', '0001-01-01'],
      ['the last instant of year 9999', '9999-12-31T23:59:59.999Z', '9999-12-31'],
    ])('counts a call at %s on its day', async (_, callDate, day) => {
      const account = await context.createAccount();
      const agentId = (await context.as(account).post('/agents').send({ name: 'Edge' }).expect(201)).body.id;
      await record(account, { callDate, durationSeconds: 60, agentId });
      expect(await usage<DayRow>(account, { from: day, to: day })).toEqual([{ date: day, calls: 1, durationSeconds: 60, creditsUsed: 1 }]);
      expect(await usage<AgentRow>(account, { from: day, to: day, groupBy: 'agent' })).toEqual([
        { agentId, agent: 'Edge', calls: 1, durationSeconds: 60, creditsUsed: 1 },
      ]);
    });

    it.each([
      ['in year 0000', '0000-12-31T23:59:59.999Z'],
      ['in year 10000 (in UTC)', '9999-12-31T23:59:59.999-00:01'],
    ])('refuses a call dated %s with a 400 naming callDate, as /usage refuses its day', async (_, callDate) => {
      const account = await context.createAccount();
      const response = await context.as(account).post('/calls').send({ callDate }).expect(400);
      expect(response.body.details).toEqual([{ field: 'callDate', message: expect.stringContaining('0001–9999') }]);
    });

    it('answers, without counting them, for calls stored in year 0000 or before (accepted before the range was one)', async () => {
      const account = await context.createAccount();
      await context.app
        .get(DataSource)
        .query(
          `INSERT INTO calls (account_id, name, call_date, duration_seconds) VALUES ($1, 'year 0', '0001-06-15 00:00:00+00 BC', 60), ($1, 'year -1', '0002-12-31 23:59:59.999+00 BC', 60)`,
          [account.id],
        );
      await record(account, { callDate: '0001-01-01T00:00:00Z', durationSeconds: 30 });
      expect(await usage<DayRow>(account, { from: '0001-01-01', to: '0001-01-02' })).toEqual([
        { date: '0001-01-01', calls: 1, durationSeconds: 30, creditsUsed: 0.5 },
        { date: '0001-01-02', calls: 0, durationSeconds: 0, creditsUsed: 0 },
      ]);
      expect(await usage<AgentRow>(account, { to: '0001-01-10', groupBy: 'agent' })).toEqual([
        { agentId: null, agent: '', calls: 1, durationSeconds: 30, creditsUsed: 0.5 },
      ]);
      // They are still listed, as they were stored.
      const listed = (await context.as(account).get('/calls').expect(200)).body as { callDate: string }[];
      expect(listed.map((call) => call.callDate)).toEqual([
        '0001-01-01T00:00:00.000Z',
        '0000-06-15T00:00:00.000Z',
        '-000001-12-31T23:59:59.999Z',
      ]);
    });
  });

  describe('per agent', () => {
    it('lists each agent by id with its current name, a deleted agent under the name of its latest call, and calls without an agent last', async () => {
      const account = await context.createAccount();
      const createAgent = async (name: string) => (await context.as(account).post('/agents').send({ name }).expect(201)).body.id as number;
      const kept = await createAgent('Reception');
      const renamed = await createAgent('Sales (old name)');
      const deleted = await createAgent('Night shift');
      const idle = await createAgent('Never called');
      await record(account, { agentId: kept, callDate: '2026-04-01T10:00:00Z', durationSeconds: 60 });
      await record(account, { agentId: kept, callDate: '2026-04-02T10:00:00Z', durationSeconds: 90 });
      await record(account, { agentId: renamed, callDate: '2026-04-01T11:00:00Z', durationSeconds: 120 });
      await context.as(account).patch(`/agents/${renamed}`).send({ name: 'Sales' }).expect(200);
      await record(account, { agentId: deleted, callDate: '2026-04-01T09:00:00Z', durationSeconds: 30 });
      await context.as(account).patch(`/agents/${deleted}`).send({ name: 'Night shift (renamed)' }).expect(200);
      await record(account, { agentId: deleted, callDate: '2026-04-02T09:00:00Z', durationSeconds: 30 });
      await record(account, { agentId: deleted, callDate: '2026-05-09T09:00:00Z', durationSeconds: 30 }); // after the range
      await context.as(account).delete(`/agents/${deleted}`).expect(204);
      await record(account, { callDate: '2026-04-03T10:00:00Z', durationSeconds: 61.5 });
      await record(account, { agentId: kept, callDate: '2026-04-03T10:00:00Z', durationSeconds: 600, isTest: true });
      const rows = await usage<AgentRow>(account, { from: '2026-04-01', to: '2026-04-30', groupBy: 'agent' });
      expect(rows).toEqual([
        { agentId: kept, agent: 'Reception', calls: 2, durationSeconds: 150, creditsUsed: 2.5 },
        { agentId: renamed, agent: 'Sales', calls: 1, durationSeconds: 120, creditsUsed: 2 },
        { agentId: deleted, agent: 'Night shift (renamed)', calls: 2, durationSeconds: 60, creditsUsed: 1 },
        { agentId: null, agent: '', calls: 1, durationSeconds: 61.5, creditsUsed: 1.03 },
      ]);
      expect(rows.map((row) => row.agentId)).not.toContain(idle);
    });

    it('is an empty list when the range has no calls', async () => {
      const account = await context.createAccount();
      expect(await usage<AgentRow>(account, { groupBy: 'agent' })).toEqual([]);
    });
  });

  describe("credits: the sum of each call's creditsUsed, as GET /calls/{callId} shows them", () => {
    const durations = [0, 1, 29, 30, 31, 59.4, 61.5, 90, 95, 100, 0.3, 12.345, 3599, 86400, 44.44, 7.5];

    it.each([1, 1.5, 0.75, 2.5, 0.1])('agrees per day and per agent at %d credits per minute', async (rate) => {
      const rated = await createTestContext({ creditsPerMinute: rate });
      try {
        const account = await rated.createAccount();
        const agents = [
          (await rated.as(account).post('/agents').send({ name: 'A' }).expect(201)).body.id,
          (await rated.as(account).post('/agents').send({ name: 'B' }).expect(201)).body.id,
          null,
        ];
        let total = 0;
        const perDay = new Map<string, number>();
        for (const [index, durationSeconds] of durations.entries()) {
          const date = `2026-06-${String(1 + (index % 3)).padStart(2, '0')}`;
          const call = (
            await rated
              .as(account)
              .post('/calls')
              .send({ durationSeconds, agentId: agents[index % 3], callDate: `${date}T08:00:00Z` })
              .expect(201)
          ).body;
          const shown = (await rated.as(account).get(`/calls/${call.id}`).expect(200)).body.creditsUsed as number;
          total += cents(shown);
          perDay.set(date, (perDay.get(date) ?? 0) + cents(shown));
        }
        const days = (await rated.as(account).get('/usage').query({ from: '2026-06-01', to: '2026-06-03' }).expect(200)).body as DayRow[];
        const byAgent = (
          await rated.as(account).get('/usage').query({ from: '2026-06-01', to: '2026-06-03', groupBy: 'agent' }).expect(200)
        ).body as AgentRow[];
        expect(days.map((day) => [day.date, cents(day.creditsUsed)])).toEqual([...perDay.entries()]);
        expect(days.reduce((sum, day) => sum + cents(day.creditsUsed), 0)).toBe(total);
        expect(byAgent.reduce((sum, row) => sum + cents(row.creditsUsed), 0)).toBe(total);
        for (const row of [...days, ...byAgent]) expect(row.creditsUsed).toBe(cents(row.creditsUsed) / 100);
      } finally {
        await rated.close();
      }
    });
  });

  describe('bad input', () => {
    const bad: [string, Record<string, string>, string][] = [
      ['a date that does not exist', { from: '2026-02-30' }, 'from'],
      ['a date without leading zeros', { from: '2026-3-1' }, 'from'],
      ['a date without dashes', { to: '20260301' }, 'to'],
      ['a timestamp', { to: '2026-03-01T00:00:00Z' }, 'to'],
      ['a date with spaces', { to: ' 2026-03-01' }, 'to'],
      ['year 0000', { from: '0000-12-31' }, 'from'],
      ['year 10000', { to: '10000-01-01' }, 'to'],
      ['a six-digit year', { to: '+020260-01-01' }, 'to'],
      ['an empty date', { from: '' }, 'from'],
      ['a word', { to: 'today' }, 'to'],
      ['from after to', { from: '2026-03-02', to: '2026-03-01' }, 'from'],
      ['an unknown groupBy', { groupBy: 'week' }, 'groupBy'],
      ['an upper-case groupBy', { groupBy: 'DAY' }, 'groupBy'],
      ['an empty groupBy', { groupBy: '' }, 'groupBy'],
    ];
    it.each(bad)('refuses %s with a 400 naming the parameter', async (_, query, field) => {
      const account = await context.createAccount();
      const response = await context.as(account).get('/usage').query(query).expect(400);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: expect.any(String),
        details: expect.arrayContaining([expect.objectContaining({ field })]),
      });
      expect(response.body.details.every((detail: { field: string }) => detail.field === field)).toBe(true);
    });

    it('refuses a repeated parameter', async () => {
      const account = await context.createAccount();
      await context.as(account).get('/usage?from=2026-01-01&from=2026-01-02').expect(400);
      await context.as(account).get('/usage?groupBy=day&groupBy=agent').expect(400);
    });

    it('needs an API key', async () => {
      await context.http.get('/usage').expect(401);
    });
  });

  it('resolves ranges at the edges of the calendar', () => {
    expect(resolveUsageRange({ to: '0001-01-10' })).toEqual({ from: '0001-01-01', to: '0001-01-10' });
    expect(resolveUsageRange({ from: '9999-12-01', to: '9999-12-31' })).toEqual({ from: '9999-12-01', to: '9999-12-31' });
    expect(resolveUsageRange({}, new Date('2026-03-01T23:59:59.999Z'))).toEqual({ from: '2026-01-31', to: '2026-03-01' });
  });
});
