import { DataSource } from 'typeorm';
import { Call } from '../src/calls/call.entity';
import { RecordingsRepository } from '../src/recordings/recordings.repository';
import { nameSearchKeySql } from '../src/calls/name-search-key';
import { createTestContext, TestAccount, TestContext } from './helpers';

const ISO_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const LIST_KEYS = [
  'agent',
  'agentId',
  'callDate',
  'callStatus',
  'callType',
  'channel',
  'durationSeconds',
  'email',
  'extractedData',
  'feedback',
  'hasRecording',
  'id',
  'name',
  'phone',
  'replyLanguage',
  'sentiment',
  'status',
  'website',
];
const DETAIL_KEYS = [...LIST_KEYS, 'creditsUsed', 'transcript', 'endedReason', 'agentVersion', 'latency'].sort();
const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600 * 1000).toISOString();

describe('calls', () => {
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    other = await context.createAccount();
  });
  afterAll(() => context.close());

  const record = async (account: TestAccount, body: object = {}) => (await context.as(account).post('/calls').send(body).expect(201)).body;
  const list = async (account: TestAccount, query: Record<string, string | number> = {}) =>
    (await context.as(account).get('/calls').query(query).expect(200)).body as { id: string; name: string }[];
  const names = async (account: TestAccount, query: Record<string, string | number> = {}) =>
    (await list(account, query)).map((call) => call.name).sort();
  const createAgent = async (account: TestAccount, body: object) => (await context.as(account).post('/agents').send(body).expect(201)).body;
  const callCount = (account: TestAccount) => context.app.get(DataSource).getRepository(Call).countBy({ accountId: account.id });

  describe('POST /calls', () => {
    it('records a call with every default and returns the full call object', async () => {
      const call = await record(owner);
      expect(call).toEqual({
        id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
        name: '',
        phone: '',
        email: '',
        status: '',
        callStatus: '',
        sentiment: '',
        channel: '',
        callType: '',
        website: '',
        agent: '',
        agentId: null,
        callDate: expect.stringMatching(ISO_TIMESTAMP),
        durationSeconds: 0,
        replyLanguage: '',
        hasRecording: false,
        feedback: null,
        extractedData: {},
        creditsUsed: 0,
        transcript: [],
        endedReason: '',
        agentVersion: null,
        latency: null,
      });
      expect(Math.abs(Date.parse(call.callDate) - Date.now())).toBeLessThan(60_000);
      expect((await context.as(owner).get(`/calls/${call.id}`).expect(200)).body).toEqual(call);
    });

    it('stores every field, takes the agent name and language from the agent, and trims text fields', async () => {
      const agent = await createAgent(owner, { name: 'Reception desk', language: 'ta-IN' });
      const body = {
        name: '  प्रिया शर्मा  ',
        phone: ' +91-98765-43210 ',
        email: 'priya@example.com',
        status: 'qualified',
        callStatus: 'completed',
        sentiment: 'positive',
        channel: 'web-widget',
        callType: 'web',
        website: 'https://shop.example.in/contact',
        agentId: agent.id,
        callDate: '2026-03-01T10:20:30.456Z',
        durationSeconds: 95,
        feedback: { rating: 5, comment: 'बहुत अच्छा', tags: ['fast', null] },
        extractedData: { city: 'Pune', budget: { amount: 20, unit: 'lakh' } },
        transcript: [
          { speaker: 'agent', text: 'नमस्ते! मैं आपकी कैसे मदद कर सकती हूँ?' },
          { speaker: 'user', text: 'मुझे 2BHK फ्लैट चाहिए' },
        ],
      };
      const call = await record(owner, body);
      expect(call).toEqual({
        ...body,
        id: expect.any(String),
        name: 'प्रिया शर्मा',
        phone: '+91-98765-43210',
        agent: 'Reception desk',
        replyLanguage: 'ta-IN',
        hasRecording: false,
        creditsUsed: 1.58,
        endedReason: '',
        agentVersion: null,
        latency: null,
      });
      expect(Object.keys(call).sort()).toEqual(DETAIL_KEYS);
    });

    it('keeps an explicit reply language and accepts null agentId and any JSON feedback', async () => {
      const agent = await createAgent(owner, { language: 'hi-IN' });
      expect((await record(owner, { agentId: agent.id, replyLanguage: 'en-US' })).replyLanguage).toBe('en-US');
      expect((await record(owner, { agentId: null })).agentId).toBeNull();
      for (const feedback of ['great', 4.5, true, [1, 'two'], null, { nested: { deep: [{}] } }]) {
        expect((await record(owner, { feedback })).feedback).toEqual(feedback);
      }
    });

    it('refuses an agent of another account or a missing agent with a 400 on agentId, storing nothing', async () => {
      const othersAgent = await createAgent(other, { name: 'Not yours' });
      const account = await context.createAccount();
      for (const agentId of [othersAgent.id, 2_147_483_647]) {
        const response = await context.as(account).post('/calls').send({ agentId }).expect(400);
        expect(response.body).toEqual({
          statusCode: 400,
          error: 'Bad Request',
          message: `agentId ${agentId} is not an agent of this account`,
          details: [{ field: 'agentId', message: `agentId ${agentId} is not an agent of this account` }],
        });
      }
      expect(await callCount(account)).toBe(0);
    });

    const turn = { speaker: 'user', text: 'hello' };
    const invalid: [string, object, string][] = [
      ['a numeric name', { name: 5 }, 'name'],
      ['a null name', { name: null }, 'name'],
      ['a name over 200 characters', { name: 'x'.repeat(201) }, 'name'],
      ['a phone with letters', { phone: 'call me' }, 'phone'],
      ['a phone over 50 characters', { phone: '1'.repeat(51) }, 'phone'],
      ['a malformed email', { email: 'not-an-email' }, 'email'],
      ['a status over 100 characters', { status: 's'.repeat(101) }, 'status'],
      ['a numeric callStatus', { callStatus: 1 }, 'callStatus'],
      ['a sentiment over 100 characters', { sentiment: 's'.repeat(101) }, 'sentiment'],
      ['an object channel', { channel: {} }, 'channel'],
      ['a boolean callType', { callType: true }, 'callType'],
      ['a website over 2048 characters', { website: `https://x.in/${'a'.repeat(2040)}` }, 'website'],
      ['a string agentId', { agentId: '1' }, 'agentId'],
      ['a fractional agentId', { agentId: 1.5 }, 'agentId'],
      ['agentId 0', { agentId: 0 }, 'agentId'],
      ['a callDate that is not ISO 8601', { callDate: 'yesterday' }, 'callDate'],
      ['an impossible callDate', { callDate: '2026-13-45T10:00:00Z' }, 'callDate'],
      ['a numeric callDate', { callDate: 1_700_000_000_000 }, 'callDate'],
      ['a string duration', { durationSeconds: '95' }, 'durationSeconds'],
      ['a negative duration', { durationSeconds: -1 }, 'durationSeconds'],
      ['a duration over 24 hours', { durationSeconds: 86_401 }, 'durationSeconds'],
      ['a duration just over 24 hours', { durationSeconds: 86_400.001 }, 'durationSeconds'],
      ['a duration with 4 decimals', { durationSeconds: 61.0005 }, 'durationSeconds'],
      ['a duration of 1e-4 (written with an exponent)', { durationSeconds: 1e-4 }, 'durationSeconds'],
      ['a subnormal duration', { durationSeconds: 9e-323 }, 'durationSeconds'],
      ['an unknown reply language', { replyLanguage: 'fr-FR' }, 'replyLanguage'],
      ['an array as extractedData', { extractedData: [1] }, 'extractedData'],
      ['null extractedData', { extractedData: null }, 'extractedData'],
      ['a string transcript', { transcript: 'hello' }, 'transcript'],
      ['a transcript entry that is not an object', { transcript: ['hello'] }, 'transcript.0'],
      ['an unknown speaker', { transcript: [turn, { speaker: 'bot', text: 'hi' }] }, 'transcript.1.speaker'],
      ['a turn without text', { transcript: [{ speaker: 'agent' }] }, 'transcript.0.text'],
      ['a turn with a numeric text', { transcript: [{ speaker: 'agent', text: 7 }] }, 'transcript.0.text'],
      ['a turn with an unknown field', { transcript: [{ ...turn, at: 3 }] }, 'transcript.0.at'],
      ['a turn text over 10,000 characters', { transcript: [{ speaker: 'user', text: 'x'.repeat(10_001) }] }, 'transcript.0.text'],
      ['501 transcript turns', { transcript: Array.from({ length: 501 }, () => turn) }, 'transcript'],
      ['a string isTest', { isTest: 'yes' }, 'isTest'],
      ['a NUL character in the name', { name: 'a\u0000b' }, 'name'],
      ['a NUL character in a label', { status: '\u0000' }, 'status'],
      ['an unpaired surrogate in the website', { website: 'https://x.in/\uD800' }, 'website'],
      ['a NUL character in transcript text', { transcript: [{ speaker: 'user', text: 'x\u0000' }] }, 'transcript.0.text'],
      ['an unpaired surrogate in transcript text', { transcript: [{ speaker: 'user', text: '\uDC00x' }] }, 'transcript.0.text'],
      ['a NUL character in feedback', { feedback: { comment: ['ok\u0000'] } }, 'feedback.comment.0'],
      ['a NUL character in an extractedData key', { extractedData: { 'k\u0000': 1 } }, 'extractedData.k\u0000'],
      ['an unknown field', { colour: 'blue' }, 'colour'],
      ['the agent name (it comes from the agent)', { agent: 'Someone' }, 'agent'],
      ['an account id', { accountId: 1 }, 'accountId'],
      ['a recording key', { recordingKey: 'recordings/x.mp3' }, 'recordingKey'],
      ['creditsUsed', { creditsUsed: 0 }, 'creditsUsed'],
    ];
    it.each(invalid)('refuses %s with a 400 naming the field, storing nothing', async (_, body, field) => {
      const account = await context.createAccount();
      const response = await context.as(account).post('/calls').send(body).expect(400);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: expect.any(String),
        details: expect.arrayContaining([expect.objectContaining({ field })]),
      });
      expect(await callCount(account)).toBe(0);
    });

    it('refuses a 1,000-turn transcript over the 2 MiB body limit with a 413, storing nothing', async () => {
      const account = await context.createAccount();
      const transcript = Array.from({ length: 1_000 }, (_, i) => ({ speaker: i % 2 ? 'user' : 'agent', text: 'नमस्ते '.repeat(120) }));
      const response = await context.as(account).post('/calls').send({ transcript }).expect(413);
      expect(response.body).toEqual({ statusCode: 413, error: 'Payload Too Large', message: expect.any(String) });
      expect(await callCount(account)).toBe(0);
    });

    it('refuses a 1,000-turn transcript under the body limit with a 400 on the turn count', async () => {
      const account = await context.createAccount();
      const transcript = Array.from({ length: 1_000 }, () => ({ speaker: 'user', text: 'ok' }));
      const response = await context.as(account).post('/calls').send({ transcript }).expect(400);
      expect(response.body.details).toEqual([{ field: 'transcript', message: expect.stringContaining('500') }]);
      expect(await callCount(account)).toBe(0);
    });

    it('accepts exactly 500 turns', async () => {
      const transcript = Array.from({ length: 500 }, (_, i) => ({ speaker: i % 2 ? 'user' : 'agent', text: `turn ${i}` }));
      expect((await record(owner, { transcript })).transcript).toEqual(transcript);
    });

    it('refuses a non-JSON body with a 415 and malformed JSON with a 400', async () => {
      await context.as(owner).post('/calls').set('Content-Type', 'text/plain').send('name=x').expect(415);
      const response = await context.as(owner).post('/calls').set('Content-Type', 'application/json').send('{"name":').expect(400);
      expect(response.body).toEqual({ statusCode: 400, error: 'Bad Request', message: 'Malformed JSON in request body' });
    });
  });

  describe('GET /calls/{callId}', () => {
    it('computes creditsUsed from the duration (95 s → 1.58, 61.5 s → 1.03 at the default rate)', async () => {
      expect((await record(owner, { durationSeconds: 95 })).creditsUsed).toBe(1.58);
      const call = await record(owner, { durationSeconds: 61.5 });
      expect((await context.as(owner).get(`/calls/${call.id}`).expect(200)).body.creditsUsed).toBe(1.03);
    });

    it('takes durations to the millisecond, and their credits are the formula exactly (0.299 s → 0, 0.3 s → 0.01, 86,400 s → 1440)', async () => {
      for (const [durationSeconds, creditsUsed] of [
        [0.299, 0],
        [0.3, 0.01],
        [29.999, 0.5],
        [0.001, 0],
        [86_400, 1440],
      ]) {
        const call = await record(owner, { durationSeconds });
        expect([call.durationSeconds, call.creditsUsed]).toEqual([durationSeconds, creditsUsed]);
      }
    });

    it('uses the configured CREDITS_PER_MINUTE', async () => {
      const doubled = await createTestContext({ creditsPerMinute: 2 });
      try {
        const account = await doubled.createAccount();
        const call = (await doubled.as(account).post('/calls').send({ durationSeconds: 95 }).expect(201)).body;
        expect(call.creditsUsed).toBe(3.17);
        expect((await doubled.as(account).get(`/calls/${call.id}`).expect(200)).body.creditsUsed).toBe(3.17);
      } finally {
        await doubled.close();
      }
    });

    it('reads a test call by id although it is never listed', async () => {
      const call = await record(owner, { name: 'Dashboard test call', isTest: true });
      expect(Object.keys(call)).not.toContain('isTest');
      expect((await context.as(owner).get(`/calls/${call.id}`).expect(200)).body).toEqual(call);
      expect(await names(owner, { search: 'Dashboard test call' })).toEqual([]);
    });

    it('accepts an upper-case id', async () => {
      const call = await record(owner);
      expect((await context.as(owner).get(`/calls/${call.id.toUpperCase()}`).expect(200)).body.id).toBe(call.id);
    });

    it.each(['abc', '1', '00000000-0000-4000-8000-000000000000', `${'f'.repeat(8)}-ffff-ffff-ffff-${'f'.repeat(13)}`])(
      'answers 404 for the id %s',
      async (id) => {
        const response = await context.as(owner).get(`/calls/${id}`).expect(404);
        expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: expect.stringContaining('not found') });
      },
    );

    it('never shows the storage key, only whether audio exists', async () => {
      const call = await record(owner, { name: 'With audio' });
      await context.app.get(RecordingsRepository).swapKey(owner.id, call.id, 'recordings/secret-key.mp3');
      const read = await context.as(owner).get(`/calls/${call.id}`).expect(200);
      expect(read.body.hasRecording).toBe(true);
      expect(read.text).not.toContain('secret-key');
      const listed = await context.as(owner).get('/calls').query({ search: 'With audio' }).expect(200);
      expect(listed.body).toEqual([expect.objectContaining({ id: call.id, hasRecording: true })]);
      expect(listed.text).not.toContain('secret-key');
    });
  });

  describe('RecordingsRepository (the recording key of a call)', () => {
    it('sets and clears the storage key, scoped to the account', async () => {
      const call = await record(owner);
      const recordings = context.app.get(RecordingsRepository);
      expect(await recordings.swapKey(other.id, call.id, 'stolen')).toBeUndefined();
      expect(await recordings.swapKey(owner.id, call.id, 'recordings/abc.mp3')).toEqual({ previous: null, isTest: false });
      expect(await recordings.find(owner.id, call.id)).toEqual({ id: call.id, name: call.name, recordingKey: 'recordings/abc.mp3' });
      expect(await recordings.find(other.id, call.id)).toBeUndefined();
      expect(await recordings.swapKey(owner.id, call.id, null)).toEqual({ previous: 'recordings/abc.mp3', isTest: false });
      expect((await context.as(owner).get(`/calls/${call.id}`).expect(200)).body.hasRecording).toBe(false);
    });
  });

  describe('GET /calls', () => {
    it('lists newest first (callDate, then id, descending) with exactly the list keys', async () => {
      const account = await context.createAccount();
      const sameTime = hoursAgo(5);
      const old = await record(account, {
        name: 'old',
        callDate: hoursAgo(48),
        transcript: [{ speaker: 'user', text: 'hi' }],
        durationSeconds: 60,
      });
      const tied = [await record(account, { name: 'tie', callDate: sameTime }), await record(account, { name: 'tie', callDate: sameTime })];
      const newest = await record(account, { name: 'newest', callDate: hoursAgo(1) });
      const listed = await list(account);
      expect(listed.map((call) => call.id)).toEqual([
        newest.id,
        ...tied
          .map((call) => call.id)
          .sort()
          .reverse(),
        old.id,
      ]);
      for (const item of listed) expect(Object.keys(item).sort()).toEqual(LIST_KEYS);
      const {
        creditsUsed: _credits,
        transcript: _transcript,
        endedReason: _endedReason,
        agentVersion: _agentVersion,
        latency: _latency,
        ...listItem
      } = old;
      expect(listed[3]).toEqual(listItem);
    });

    it('returns 200 calls by default and honours limit up to 1000', async () => {
      const account = await context.createAccount();
      const now = Date.now();
      await context.app
        .get(DataSource)
        .getRepository(Call)
        .insert(Array.from({ length: 205 }, (_, i) => ({ accountId: account.id, name: `bulk ${i}`, callDate: new Date(now - i * 1000) })));
      const defaultList = await list(account);
      expect(defaultList).toHaveLength(200);
      expect(defaultList[0].name).toBe('bulk 0');
      expect(await list(account, { limit: 1000 })).toHaveLength(205);
      expect((await list(account, { limit: 3 })).map((call) => call.name)).toEqual(['bulk 0', 'bulk 1', 'bulk 2']);
      expect(await list(account, { limit: 1 })).toHaveLength(1);
    });

    const badQueries: [string, Record<string, string>, string][] = [
      ['limit 0', { limit: '0' }, 'limit'],
      ['limit 1001', { limit: '1001' }, 'limit'],
      ['a word as limit', { limit: 'ten' }, 'limit'],
      ['a fractional limit', { limit: '1.5' }, 'limit'],
      ['a negative limit', { limit: '-1' }, 'limit'],
      ['an empty limit', { limit: '' }, 'limit'],
      ['an exponent limit', { limit: '1e2' }, 'limit'],
      ['days -1', { days: '-1' }, 'days'],
      ['days 3651', { days: '3651' }, 'days'],
      ['a word as days', { days: 'week' }, 'days'],
      ['agentId 0', { agentId: '0' }, 'agentId'],
      ['a word as agentId', { agentId: 'me' }, 'agentId'],
      ['a search over 200 characters', { search: 'x'.repeat(201) }, 'search'],
      ['a status over 100 characters', { status: 's'.repeat(101) }, 'status'],
      ['a callStatus over 100 characters', { callStatus: 's'.repeat(101) }, 'callStatus'],
      ['a NUL character in search', { search: 'a\u0000' }, 'search'],
      ['a NUL character in status', { status: '\u0000' }, 'status'],
      ['a NUL character in callStatus', { callStatus: '\u0000x' }, 'callStatus'],
    ];
    it.each(badQueries)('refuses %s with a 400 naming the parameter', async (_, query, field) => {
      const response = await context.as(owner).get('/calls').query(query).expect(400);
      expect(response.body).toEqual({
        statusCode: 400,
        error: 'Bad Request',
        message: expect.any(String),
        details: expect.arrayContaining([expect.objectContaining({ field })]),
      });
      expect(response.body.details.every((detail: { field: string }) => detail.field === field)).toBe(true);
    });

    it('answers malformed percent-encoding without an error (it decodes to U+FFFD)', async () => {
      await context.as(owner).get('/calls?search=%ED%A0%80').expect(200);
      await context.as(owner).get('/calls?search=%E0%A4').expect(200);
      await context.as(owner).get('/calls?search=%').expect(200);
    });

    it('refuses a repeated parameter', async () => {
      await context.as(owner).get('/calls?limit=1&limit=2').expect(400);
      await context.as(owner).get('/calls?search=a&search=b').expect(400);
    });

    it('ignores unknown query parameters', async () => {
      const account = await context.createAccount();
      await record(account, { name: 'one' });
      await record(account, { name: 'two' });
      const listed = await list(account, { limit: 1, page: 3, sort: 'name', colour: 'blue', 'filter[x]': 'y' });
      expect(listed).toHaveLength(1);
      expect(await names(account, { unknown: '' })).toEqual(['one', 'two']);
    });

    it('never lists test calls', async () => {
      const account = await context.createAccount();
      await record(account, { name: 'real' });
      await record(account, { name: 'test', isTest: true });
      expect(await names(account)).toEqual(['real']);
    });

    it('keeps the calls within the last N × 24 hours with days; 0 means all history', async () => {
      const account = await context.createAccount();
      await record(account, { name: 'today', callDate: hoursAgo(2) });
      await record(account, { name: 'last week', callDate: hoursAgo(24 * 6) });
      await record(account, { name: 'last year', callDate: hoursAgo(24 * 300) });
      await record(account, { name: 'long ago', callDate: '2016-01-01T00:00:00.000Z' });
      expect(await names(account, { days: 1 })).toEqual(['today']);
      expect(await names(account, { days: 7 })).toEqual(['last week', 'today']);
      expect(await names(account, { days: 365 })).toEqual(['last week', 'last year', 'today']);
      expect(await names(account, { days: 0 })).toEqual(['last week', 'last year', 'long ago', 'today']);
      expect(await names(account, { days: 3650 })).toEqual(['last week', 'last year', 'today']);
    });

    it('lists no call dated in the future with days (N days back ends now); days 0 lists them', async () => {
      const account = await context.createAccount();
      await record(account, { name: 'today', callDate: hoursAgo(2) });
      await record(account, { name: 'tomorrow', callDate: hoursAgo(-24) });
      await record(account, { name: 'in a minute', callDate: hoursAgo(-1 / 60) });
      expect(await names(account, { days: 1 })).toEqual(['today']);
      expect(await names(account, { days: 3650 })).toEqual(['today']);
      expect(await names(account, { days: 0 })).toEqual(['in a minute', 'today', 'tomorrow']);
    });

    it('filters by status and callStatus, case-insensitively', async () => {
      const account = await context.createAccount();
      await record(account, { name: 'a', status: 'qualified', callStatus: 'completed' });
      await record(account, { name: 'b', status: 'Qualified', callStatus: 'missed' });
      await record(account, { name: 'c', status: 'callback', callStatus: 'Completed' });
      expect(await names(account, { status: 'QUALIFIED' })).toEqual(['a', 'b']);
      expect(await names(account, { callStatus: 'completed' })).toEqual(['a', 'c']);
      expect(await names(account, { status: 'qualified', callStatus: 'completed' })).toEqual(['a']);
      expect(await names(account, { status: 'qualif' })).toEqual([]);
      expect(await names(account, { status: '' })).toEqual(['a', 'b', 'c']);
    });

    it('filters by agentId, also after the agent is deleted (calls keep its id and name)', async () => {
      const account = await context.createAccount();
      const kept = await createAgent(account, { name: 'Kept' });
      const gone = await createAgent(account, { name: 'Gone' });
      await record(account, { name: 'by kept', agentId: kept.id });
      const byGone = await record(account, { name: 'by gone', agentId: gone.id });
      await record(account, { name: 'no agent' });
      await context.as(account).delete(`/agents/${gone.id}`).expect(204);
      expect(await names(account, { agentId: kept.id })).toEqual(['by kept']);
      const listed = await list(account, { agentId: gone.id });
      expect(listed).toEqual([expect.objectContaining({ id: byGone.id, agent: 'Gone', agentId: gone.id })]);
      expect((await context.as(account).get(`/calls/${byGone.id}`).expect(200)).body).toMatchObject({ agent: 'Gone', agentId: gone.id });
    });

    it('combines every filter', async () => {
      const account = await context.createAccount();
      const agent = await createAgent(account, {});
      const match = { name: 'Match Kumar', status: 'new', callStatus: 'completed', agentId: agent.id, callDate: hoursAgo(3) };
      await record(account, match);
      await record(account, { ...match, name: 'Other Kumar' });
      await record(account, { ...match, status: 'converted' });
      await record(account, { ...match, callStatus: 'missed' });
      await record(account, { ...match, agentId: undefined });
      await record(account, { ...match, callDate: hoursAgo(24 * 10) });
      const query = { search: 'match', status: 'NEW', callStatus: 'completed', agentId: agent.id, days: 2, limit: 10 };
      expect(await names(account, query)).toEqual(['Match Kumar']);
    });
  });

  describe('search', () => {
    let account: TestAccount;
    const callers = [
      { name: 'Priya Sharma', phone: '+91-98765-43210' },
      { name: 'प्रिया शर्मा', phone: '+91 91234 56789' },
      { name: 'অর্জুন দাস', phone: '033 2222 1111' },
      { name: 'கார்த்திக் ராஜா', phone: '' },
      { name: 'María García', phone: '+1 (415) 555-0132' },
      { name: 'Deal 100% done', phone: '' },
      { name: 'Deal 1000 done', phone: '' },
      { name: 'snake_case', phone: '' },
      { name: 'snakeXcase', phone: '' },
      { name: 'back\\slash', phone: '' },
      { name: '', phone: '080-4567-1234' },
      { name: 'श्रेया ज़ैदी', phone: '' },
      { name: 'ज्योति', phone: '' },
      { name: 'शxर', phone: '' },
    ];

    beforeAll(async () => {
      account = await context.createAccount();
      for (const caller of callers) await record(account, caller);
    });

    const search = (term: string) => names(account, { search: term });

    it('matches a substring of the name, case-insensitively', async () => {
      expect(await search('priya')).toEqual(['Priya Sharma']);
      expect(await search('SHARMA')).toEqual(['Priya Sharma']);
      expect(await search('maría')).toEqual(['María García']);
      expect(await search('MARÍA')).toEqual(['María García']);
    });

    it('matches names in Devanagari, Bengali and Tamil', async () => {
      expect(await search('शर्मा')).toEqual(['प्रिया शर्मा']);
      expect(await search('প্রিয়া')).toEqual([]);
      expect(await search('অর্জুন')).toEqual(['অর্জুন দাস']);
      expect(await search('ராஜா')).toEqual(['கார்த்திக் ராஜா']);
    });

    // These go through the name's search key (src/calls/name-search-key.ts), where every virama and nukta is
    // an `x`: the name itself must still decide.
    it('matches fragments written around a virama or a nukta, and only those', async () => {
      expect(await search('श्र')).toEqual(['श्रेया ज़ैदी']);
      expect(await search('ज़')).toEqual(['श्रेया ज़ैदी']);
      expect(await search('ज्')).toEqual(['ज्योति']);
      expect(await search('प्र')).toEqual(['प्रिया शर्मा']);
      expect(await search('र्जु')).toEqual([]);
      expect(await search('র্জু')).toEqual(['অর্জুন দাস']);
      expect(await search('க்')).toEqual(['கார்த்திக் ராஜா']);
      expect(await search('्')).toEqual(['ज्योति', 'प्रिया शर्मा', 'श्रेया ज़ैदी'].sort());
      expect(await search('शx')).toEqual(['शxर']);
    });

    it('searches the key index with the expression it was built on', async () => {
      const sql = (text: string) => context.app.get(DataSource).query(text);
      const key = nameSearchKeySql('(name)::text').replace(/'([^']*)'/g, "'$1'::text");
      expect(await sql(`SELECT pg_get_indexdef('"IDX_calls_account_name_key"'::regclass, 2, false) AS key`)).toEqual([{ key }]);
      expect(
        await sql(`SELECT pg_get_statisticsobjdef_expressions(oid) AS keys FROM pg_statistic_ext WHERE stxname = 'STAT_calls_name_key'`),
      ).toEqual([{ keys: [key] }]);
    });

    it('matches a substring of the phone as written', async () => {
      expect(await search('+91-98765')).toEqual(['Priya Sharma']);
      expect(await search('(415)')).toEqual(['María García']);
    });

    it('matches the phone with punctuation ignored when the search is digits and phone punctuation', async () => {
      expect(await search('98765 43')).toEqual(['Priya Sharma']);
      expect(await search('9876543210')).toEqual(['Priya Sharma']);
      expect(await search('91234-567')).toEqual(['प्रिया शर्मा']);
      expect(await search('4155550132')).toEqual(['María García']);
      expect(await search('(080) 4567')).toEqual(['']);
      expect(await search('555 0132')).toEqual(['María García']);
    });

    it('treats % _ and \\ as literal characters', async () => {
      expect(await search('100%')).toEqual(['Deal 100% done']);
      expect(await search('%')).toEqual(['Deal 100% done']);
      expect(await search('e_c')).toEqual(['snake_case']);
      expect(await search('_')).toEqual(['snake_case']);
      expect(await search('\\')).toEqual(['back\\slash']);
      expect(await search('k\\s')).toEqual(['back\\slash']);
    });

    it('works with one- and two-character searches', async () => {
      expect(await search('Ma')).toEqual(['María García', 'Priya Sharma']);
      expect(await search('ñ')).toEqual([]);
      expect(await search('0')).toEqual(['', 'Deal 100% done', 'Deal 1000 done', 'María García', 'Priya Sharma', 'অর্জুন দাস'].sort());
    });

    it('treats a blank search as no search', async () => {
      expect(await search('   ')).toHaveLength(callers.length);
      expect(await search('')).toHaveLength(callers.length);
    });

    it('stores and finds names with emoji and other astral-plane characters', async () => {
      await record(account, { name: 'Asha 🙂 Rao' });
      expect(await search('🙂')).toEqual(['Asha 🙂 Rao']);
    });

    it('finds nothing for a term nobody has', async () => {
      expect(await search('zzz-nobody')).toEqual([]);
      expect(await search("'; DROP TABLE calls; --")).toEqual([]);
    });
  });

  describe('isolation between accounts', () => {
    it("another account can neither list, search, filter by agent nor read a call, nor record one with the owner's agent", async () => {
      const agent = await createAgent(owner, { name: 'Owner agent' });
      const call = await record(owner, {
        name: 'Confidential Caller',
        phone: '+91-90000-11111',
        agentId: agent.id,
        status: 'vip-isolation',
      });
      const intruder = await context.createAccount();
      await record(intruder, { name: 'Intruder own call' });
      const seen = (await list(intruder, { limit: 1000 })).map((item) => item.id);
      expect(seen).not.toContain(call.id);
      expect(await names(intruder, { search: 'Confidential' })).toEqual([]);
      expect(await names(intruder, { search: '9000011111' })).toEqual([]);
      expect(await names(intruder, { agentId: agent.id })).toEqual([]);
      expect(await names(intruder, { status: 'vip-isolation' })).toEqual([]);
      expect(await names(intruder, { callStatus: '', days: 1, search: 'Confidential' })).toEqual([]);
      const notFound = { statusCode: 404, error: 'Not Found', message: `Call ${call.id} not found` };
      expect((await context.as(intruder).get(`/calls/${call.id}`).expect(404)).body).toEqual(notFound);
      await context.as(intruder).post('/calls').send({ agentId: agent.id }).expect(400);
      expect(await names(owner, { search: 'Confidential' })).toEqual(['Confidential Caller']);
      await record(owner, { name: 'श्रीकांत गुप्ता' });
      expect(await names(intruder, { search: 'श्री' })).toEqual([]);
      expect(await names(owner, { search: 'श्री' })).toEqual(['श्रीकांत गुप्ता']);
    });
  });
});
