import * as fc from 'fast-check';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks';
import { DataSource } from 'typeorm';
import { PhoneCallsRepository } from '../src/telephony/phone-calls.repository';
import { TestAccount, TestContext } from './helpers';
import { FakeTwilio } from './support/fake-twilio';
import { ConnectedNumber, connectNumber, createAgent, telephonyContext, telephonyRows } from './support/telephony';

/** The token of the `<Parameter name="token">` of a `<Connect><Stream>` answer. */
const streamTokenOf = (twiml: string) => /<Parameter name="token" value="([^"]+)"\/>/.exec(twiml)?.[1];

/**
 * Calls to the account's numbers (contract section 17, inbound), posted by the stand-in carrier as Twilio posts them:
 * the signature checked first (403 and nothing created otherwise), TwiML that says why nobody answers, or a
 * conversation and the `<Connect><Stream>` with a one-time token the media stream takes once
 * (PhoneCallsRepository.consumeStreamToken).
 */
describe('inbound phone calls', () => {
  let twilio: FakeTwilio;
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let agentId: number;
  let connected: ConnectedNumber;
  let tokens: PhoneCallsRepository;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    ({ context, baseUrl } = await telephonyContext(twilio));
    owner = await context.createAccount();
    agentId = await createAgent(context, owner, { name: 'Reception', language: 'en-IN' });
    connected = await connectNumber(context, owner, twilio, { agentId, greeting: 'Namaste, how can I help?' });
    tokens = context.app.get(PhoneCallsRepository);
  });
  afterAll(async () => {
    await context.close();
    await twilio.close();
  });

  const conversationOf = async (callSid: string) =>
    (
      await context.app.get(DataSource).query(
        `SELECT c.id, c.channel, c.call_type AS "callType", c.phone, c.name, c.status, c.agent_id AS "agentId", pc.stream_token_hash AS "tokenHash"
           FROM phone_calls pc JOIN conversations c ON c.account_id = pc.account_id AND c.id = pc.conversation_id
          WHERE pc.call_sid = $1`,
        [callSid],
      )
    )[0] as Record<string, unknown> | undefined;

  it("answers a call with the number's agent: a phone conversation, and TwiML that connects the call to the stream with a one-time token", async () => {
    const { call, answer } = await twilio.dialIn(connected.carrierNumber, '+919876543210');
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^text\/xml/);
    const token = streamTokenOf(answer.body)!;
    expect(answer.body).toBe(
      `<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="${baseUrl.replace('http', 'ws')}/telephony/twilio/stream">` +
        `<Parameter name="token" value="${token}"/></Stream></Connect></Response>`,
    );
    expect(token).toMatch(/^vst_[A-Za-z0-9_-]{43}$/); // 256 random bits
    const conversation = await conversationOf(call.sid);
    expect(conversation).toMatchObject({
      channel: 'phone',
      callType: 'inbound',
      phone: '+919876543210',
      name: '',
      status: 'active',
      agentId,
    });
    expect(conversation!.tokenHash).not.toContain(token); // stored as a hash only
    const [greeting] = await context.app
      .get(DataSource)
      .query(`SELECT speaker, text FROM conversation_messages WHERE conversation_id = $1 ORDER BY seq`, [conversation!.id]);
    expect(greeting).toEqual({ speaker: 'agent', text: 'Namaste, how can I help?' });

    // The token opens the call's stream once.
    expect(await tokens.consumeStreamToken(token)).toEqual({
      accountId: owner.id,
      conversationId: conversation!.id,
      callSid: call.sid,
      phoneNumberId: connected.phone.id,
      callType: 'inbound',
    });
    expect(await tokens.consumeStreamToken(token)).toBeUndefined();
  });

  it('gives a token to one stream only, even to two presenting it at once', async () => {
    const { answer } = await twilio.dialIn(connected.carrierNumber, '+919876543211');
    const token = streamTokenOf(answer.body)!;
    const grants = await Promise.all(Array.from({ length: 5 }, () => tokens.consumeStreamToken(token)));
    expect(grants.filter((grant) => grant !== undefined)).toHaveLength(1);
  });

  it('refuses a token past its 60 s, a malformed one, another one, and one whose conversation has ended', async () => {
    const database = context.app.get(DataSource);
    const late = await twilio.dialIn(connected.carrierNumber, '+919876543212');
    const lateToken = streamTokenOf(late.answer.body)!;
    const [{ seconds }] = await database.query(
      `SELECT round(extract(epoch FROM stream_token_expires_at - created_at))::int AS seconds FROM phone_calls WHERE call_sid = $1`,
      [late.call.sid],
    );
    expect(seconds).toBe(60);
    await database.query(`UPDATE phone_calls SET stream_token_expires_at = now() - interval '1 millisecond' WHERE call_sid = $1`, [
      late.call.sid,
    ]);
    expect(await tokens.consumeStreamToken(lateToken)).toBeUndefined();

    for (const token of ['', 'vst_short', `vst_${'A'.repeat(43)}`, `${lateToken}x`, lateToken.toUpperCase()]) {
      expect(await tokens.consumeStreamToken(token)).toBeUndefined();
    }

    const ended = await twilio.dialIn(connected.carrierNumber, '+919876543213');
    const conversation = await conversationOf(ended.call.sid);
    await database.query(`UPDATE conversations SET status = 'ended' WHERE id = $1`, [conversation!.id]);
    expect(await tokens.consumeStreamToken(streamTokenOf(ended.answer.body)!)).toBeUndefined();
  });

  it('answers a retried webhook of the same call with the same conversation and a new token, the first one no longer valid', async () => {
    const callSid = `CA${'1'.repeat(32)}`;
    const first = await twilio.dialIn(connected.carrierNumber, '+919876543214', { callSid });
    const before = await telephonyRows(context, owner.id);
    const again = await twilio.dialIn(connected.carrierNumber, '+919876543214', { callSid });
    expect(await telephonyRows(context, owner.id)).toEqual(before);
    const [firstToken, secondToken] = [streamTokenOf(first.answer.body)!, streamTokenOf(again.answer.body)!];
    expect(secondToken).not.toBe(firstToken);
    expect(await tokens.consumeStreamToken(firstToken)).toBeUndefined();
    expect((await tokens.consumeStreamToken(secondToken))?.conversationId).toBe((await conversationOf(callSid))!.id);
    // Once a stream has the call, a retry is hung up on.
    const late = await twilio.dialIn(connected.carrierNumber, '+919876543214', { callSid });
    expect(late.answer.body).toBe('<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>');
  });

  describe('refuses with a 403, creating nothing', () => {
    const forged = (token: string) => (url: string, params: Record<string, string>) => getExpectedTwilioSignature(token, url, params);

    const refusedWithNothingCreated = async (attempt: () => Promise<{ status: number; body: string; contentType: string }>) => {
      const before = await telephonyRows(context, owner.id);
      const answer = await attempt();
      expect(answer.status).toBe(403);
      expect(answer.contentType).toMatch(/^application\/json/);
      expect(JSON.parse(answer.body)).toEqual({
        statusCode: 403,
        error: 'Forbidden',
        message: expect.stringContaining('X-Twilio-Signature'),
      });
      expect(await telephonyRows(context, owner.id)).toEqual(before);
    };

    it('a call without a signature', async () => {
      await refusedWithNothingCreated(
        async () => (await twilio.dialIn(connected.carrierNumber, '+14155550999', { sign: () => undefined })).answer,
      );
    });

    it('a call with a wrong signature, or one made with another token', async () => {
      for (const sign of [() => 'c2lnbmF0dXJl', () => '', forged('0'.repeat(32)), () => 'x'.repeat(1000)]) {
        await refusedWithNothingCreated(async () => (await twilio.dialIn(connected.carrierNumber, '+14155550999', { sign })).answer);
      }
    });

    it("a call signed with another number's auth token (of another carrier account)", async () => {
      const other = await connectNumber(context, await context.createAccount(), twilio, { agentId: null });
      const sign = forged(other.carrierAccount.authToken);
      await refusedWithNothingCreated(async () => (await twilio.dialIn(connected.carrierNumber, '+14155550999', { sign })).answer);
    });

    it('a call whose parameters were changed after they were signed', async () => {
      const sign = (url: string, params: Record<string, string>) =>
        getExpectedTwilioSignature(connected.carrierAccount.authToken, url, { ...params, From: '+10000000000' });
      await refusedWithNothingCreated(async () => (await twilio.dialIn(connected.carrierNumber, '+14155550999', { sign })).answer);
      // Or its URL: the same form signed for another number's URL.
      const other = await connectNumber(context, owner, twilio, { agentId });
      const signedForOther = (url: string, params: Record<string, string>) =>
        getExpectedTwilioSignature(
          connected.carrierAccount.authToken,
          url.replace(`/${connected.phone.id}/`, `/${other.phone.id}/`),
          params,
        );
      await refusedWithNothingCreated(
        async () => (await twilio.dialIn(connected.carrierNumber, '+14155550999', { sign: signedForOther })).answer,
      );
    });

    it('a signed call for another carrier account or another number than the one the path names', async () => {
      const post = async (params: Record<string, string>) => {
        const url = connected.phone.inboundUrl;
        const response = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-twilio-signature': getExpectedTwilioSignature(connected.carrierAccount.authToken, url, params),
          },
          body: new URLSearchParams(params).toString(),
        });
        return { status: response.status, contentType: response.headers.get('content-type') ?? '', body: await response.text() };
      };
      const call = {
        CallSid: `CA${'2'.repeat(32)}`,
        AccountSid: connected.carrierAccount.sid,
        From: '+14155550999',
        To: connected.carrierNumber.phoneNumber,
      };
      await refusedWithNothingCreated(() => post({ ...call, AccountSid: `AC${'0'.repeat(32)}` }));
      await refusedWithNothingCreated(() => post({ ...call, To: '+14155550000' }));
    });

    it('a call to an unknown number, a malformed id, or a number deleted since', async () => {
      const post = async (path: string) => {
        const url = `${baseUrl}${path}`;
        const params = {
          CallSid: `CA${'3'.repeat(32)}`,
          AccountSid: connected.carrierAccount.sid,
          From: '+14155550999',
          To: connected.carrierNumber.phoneNumber,
        };
        const response = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-twilio-signature': getExpectedTwilioSignature(connected.carrierAccount.authToken, url, params),
          },
          body: new URLSearchParams(params).toString(),
        });
        return { status: response.status, contentType: response.headers.get('content-type') ?? '', body: await response.text() };
      };
      for (const id of ['2147483647', '0', 'abc', '01', '99999999999'])
        await refusedWithNothingCreated(() => post(`/telephony/twilio/${id}/incoming`));
      const deleted = await connectNumber(context, owner, twilio, { agentId });
      await context.as(owner).delete(`/phone-numbers/${deleted.phone.id}`).expect(204);
      await refusedWithNothingCreated(async () => (await twilio.dialIn(deleted.carrierNumber, '+14155550999')).answer);
    });
  });

  it('answers a number without an agent with one sentence and a hang-up, recording nothing', async () => {
    const lonely = await connectNumber(context, owner, twilio);
    const before = await telephonyRows(context, owner.id);
    const { answer } = await twilio.dialIn(lonely.carrierNumber, '+14155550998');
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Say>Sorry, nobody is answering this number at the moment. Goodbye.</Say><Hangup/></Response>',
    );
    expect(await telephonyRows(context, owner.id)).toEqual(before);
  });

  it('refuses a body that is not a form (415) or too large (413), and a signed form without a CallSid (400)', async () => {
    const json = await fetch(connected.phone.inboundUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"CallSid":"x"}',
    });
    expect(json.status).toBe(415);
    const large = await fetch(connected.phone.inboundUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'x' },
      body: `Pad=${'a'.repeat(70_000)}`,
    });
    expect(large.status).toBe(413);
    const params = { AccountSid: connected.carrierAccount.sid, From: '+14155550999', To: connected.carrierNumber.phoneNumber };
    const unsigned = await fetch(connected.phone.inboundUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': getExpectedTwilioSignature(connected.carrierAccount.authToken, connected.phone.inboundUrl, params),
      },
      body: new URLSearchParams(params).toString(),
    });
    expect(unsigned.status).toBe(400);
    expect(await unsigned.json()).toMatchObject({ statusCode: 400, message: expect.stringContaining('CallSid') });
  });

  it('never answers a signed form with a 5xx, whatever its parameters hold', async () => {
    const url = connected.phone.inboundUrl;
    const value = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom('', '\u0000', '%', '+', '&', '=', 'client:alice', 'anonymous', `CA${'a'.repeat(32)}`),
    );
    const params = fc.record(
      {
        CallSid: fc.oneof(value, fc.constant(`CA${'4'.repeat(32)}`)),
        AccountSid: fc.oneof(value, fc.constant(connected.carrierAccount.sid)),
        From: value,
        To: fc.oneof(value, fc.constant(connected.carrierNumber.phoneNumber)),
        CallStatus: value,
        Extra: value,
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(params, fc.constantFrom('incoming', 'status'), async (form, route) => {
        const target = route === 'incoming' ? url : connected.phone.statusUrl;
        const response = await fetch(target, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            'x-twilio-signature': getExpectedTwilioSignature(connected.carrierAccount.authToken, target, form),
          },
          body: new URLSearchParams(form).toString(),
        });
        const text = await response.text();
        if (response.status >= 500) throw new Error(`${route} ${JSON.stringify(form)} answered ${response.status}: ${text}`);
        if (response.status >= 400) expect(JSON.parse(text)).toMatchObject({ statusCode: response.status });
      }),
      { numRuns: 150 },
    );
  });
});

describe('inbound phone calls that cannot be taken', () => {
  let twilio: FakeTwilio;
  beforeAll(async () => (twilio = await FakeTwilio.start()));
  afterAll(() => twilio.close());

  it('says so and hangs up when no speech-to-text is configured (STT_PROVIDER=none), recording nothing', async () => {
    const { context } = await telephonyContext(twilio);
    const deaf = await telephonyContext(twilio, { voice: { ...context.config.voice, sttProvider: 'none' } });
    try {
      const owner = await deaf.context.createAccount();
      const connected = await connectNumber(deaf.context, owner, twilio, { agentId: await createAgent(deaf.context, owner) });
      const before = await telephonyRows(deaf.context, owner.id);
      const { answer } = await twilio.dialIn(connected.carrierNumber, '+14155550997');
      expect(answer.body).toBe(
        '<?xml version="1.0" encoding="UTF-8"?><Response><Say>Sorry, this service cannot take phone calls at the moment. Goodbye.</Say><Hangup/></Response>',
      );
      expect(await telephonyRows(deaf.context, owner.id)).toEqual(before);
    } finally {
      await deaf.context.close();
      await context.close();
    }
  });

  it('asks to call later beyond PHONE_MAX_ACTIVE_CALLS, and beyond the conversation cap of the account; a place freed takes a call again', async () => {
    const { context } = await telephonyContext(twilio, { telephony: { maxActiveCalls: 2 } });
    try {
      const owner = await context.createAccount();
      const connected = await connectNumber(context, owner, twilio, { agentId: await createAgent(context, owner) });
      const callLater =
        '<?xml version="1.0" encoding="UTF-8"?><Response><Say>Sorry, all our lines are busy. Please call again later. Goodbye.</Say><Hangup/></Response>';
      const first = await twilio.dialIn(connected.carrierNumber, '+14155550001');
      const second = await twilio.dialIn(connected.carrierNumber, '+14155550002');
      expect([first, second].map(({ answer }) => streamTokenOf(answer.body))).toEqual([expect.any(String), expect.any(String)]);
      const before = await telephonyRows(context, owner.id);
      const third = await twilio.dialIn(connected.carrierNumber, '+14155550003');
      expect(third.answer).toMatchObject({ status: 200, body: callLater });
      expect(await telephonyRows(context, owner.id)).toEqual(before);
      // The first caller hangs up before its stream connected: its conversation ends, a place is free.
      expect((await twilio.report(first.call, 'completed')).status).toBe(204);
      expect(streamTokenOf((await twilio.dialIn(connected.carrierNumber, '+14155550004')).answer.body)).toBeDefined();

      // The account's cap on active conversations (API ones count) applies to phone calls too.
      const limited = await telephonyContext(twilio, {
        conversationLimits: { ...context.config.conversationLimits, activePerAccount: 1 },
      });
      try {
        const account = await limited.context.createAccount();
        const agent = await createAgent(limited.context, account);
        const number = await connectNumber(limited.context, account, twilio, { agentId: agent });
        await limited.context.as(account).post(`/agents/${agent}/conversations`).send({}).expect(201);
        const refused = await twilio.dialIn(number.carrierNumber, '+14155550005');
        expect(refused.answer.body).toBe(callLater);
      } finally {
        await limited.context.close();
      }
    } finally {
      await context.close();
    }
  });
});
