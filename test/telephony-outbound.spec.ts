import { DataSource } from 'typeorm';
import { PhoneCallsRepository } from '../src/telephony/phone-calls.repository';
import { TestAccount, TestContext } from './helpers';
import { FakeCall, FakeTwilio } from './support/fake-twilio';
import { ConnectedNumber, connectNumber, createAgent, telephonyContext, telephonyRows } from './support/telephony';
import { Receiver, startReceiver } from './webhook-receiver';

/** The token of the `<Parameter name="token">` of a `<Connect><Stream>`. */
const streamTokenOf = (twiml: string) => /<Parameter name="token" value="([^"]+)"\/>/.exec(twiml)?.[1];

/**
 * Calls the agents place (contract section 17, outbound) through the stand-in carrier, and what the carrier's
 * status callbacks make of them: a call never answered becomes a busy, no-answer or failed call with its
 * `call.created`, once, whatever order or how many times the callbacks come.
 */
describe('outbound phone calls and status callbacks', () => {
  let twilio: FakeTwilio;
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let agentId: number;
  let connected: ConnectedNumber;
  let receiver: Receiver;
  let callee = 919876500000;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    receiver = await startReceiver();
    ({ context, baseUrl } = await telephonyContext(twilio, {
      webhooks: { allowPrivateTargets: true, timeoutMs: 2_000, retrySeconds: [1], retentionDays: 30 },
    }));
    owner = await context.createAccount();
    agentId = await createAgent(context, owner, { name: 'Caller', language: 'en-IN' });
    connected = await connectNumber(context, owner, twilio, { agentId });
    await context
      .as(owner)
      .post('/webhooks')
      .send({ url: receiver.url('/hooks'), events: ['call.created'] })
      .expect(201);
  });
  afterAll(async () => {
    await context.close();
    await twilio.close();
    await receiver.close();
  });
  afterEach(() => (twilio.mode = 'up'));

  /** A number not called yet in this file. */
  const nextCallee = () => `+${++callee}`;
  const place = (body: object, number = connected) => context.as(owner).post(`/phone-numbers/${number.phone.id}/calls`).send(body);
  const callOf = async (id: string) => (await context.as(owner).get(`/calls/${id}`)).body as Record<string, unknown>;
  const conversationStatus = async (id: string) =>
    ((await context.app.get(DataSource).query(`SELECT status FROM conversations WHERE id = $1`, [id]))[0] as { status: string } | undefined)
      ?.status;
  /** The call.created events delivered so far for a call. */
  const createdEventsOf = (callId: string) =>
    receiver.deliveries
      .map((delivery) => JSON.parse(delivery.body) as { type: string; data: Record<string, unknown> })
      .filter((event) => event.data.id === callId);
  /** The call.created events of a call once one has been delivered (waiting for each delivery in turn). */
  const createdEvents = async (callId: string) => {
    while (createdEventsOf(callId).length === 0) await receiver.waitFor(receiver.deliveries.length + 1);
    return createdEventsOf(callId);
  };

  it('places a call: the carrier is asked as Twilio is, and the answer is the call and its conversation, queued', async () => {
    const to = nextCallee();
    const placed = await place({ to, name: 'Priya Sharma', greeting: 'Hello, this is Acme.' }).expect(201);
    expect(placed.body).toEqual({ callId: expect.any(String), conversationId: placed.body.callId, status: 'queued' });
    const call = twilio.lastCallTo(to)!;
    expect(call.params!.getAll('StatusCallbackEvent')).toEqual(['initiated', 'ringing', 'answered', 'completed']);
    expect(Object.fromEntries([...call.params!.entries()].filter(([name]) => name !== 'StatusCallbackEvent'))).toEqual({
      To: to,
      From: connected.carrierNumber.phoneNumber,
      Twiml: expect.stringMatching(
        /^<\?xml version="1.0" encoding="UTF-8"\?><Response><Connect><Stream url="ws:\/\/127\.0\.0\.1:\d+\/telephony\/twilio\/stream">/,
      ),
      StatusCallback: connected.phone.statusUrl,
      StatusCallbackMethod: 'POST',
      Timeout: '30',
    });
    expect(call.twiml).toContain(`url="${baseUrl.replace('http', 'ws')}/telephony/twilio/stream"`);
    const [conversation] = await context.app
      .get(DataSource)
      .query(
        `SELECT c.channel, c.call_type AS "callType", c.phone, c.name, c.status, c.agent_id AS "agentId", pc.call_sid AS "callSid" FROM conversations c JOIN phone_calls pc ON pc.conversation_id = c.id WHERE c.id = $1`,
        [placed.body.conversationId],
      );
    expect(conversation).toEqual({
      channel: 'phone',
      callType: 'outbound',
      phone: to,
      name: 'Priya Sharma',
      status: 'active',
      agentId,
      callSid: call.sid,
    });
  });

  it("keeps the stream's token valid until the call is answered (then a minute more), and dead once it failed", async () => {
    const tokens = context.app.get(PhoneCallsRepository);
    const answeredTo = nextCallee();
    await place({ to: answeredTo }).expect(201);
    const answered = twilio.lastCallTo(answeredTo)!;
    await twilio.report(answered, 'initiated');
    await twilio.report(answered, 'ringing');
    await twilio.report(answered, 'in-progress');
    const [{ seconds }] = await context.app
      .get(DataSource)
      .query(
        `SELECT ceil(extract(epoch FROM stream_token_expires_at - answered_at))::int AS seconds FROM phone_calls WHERE call_sid = $1`,
        [answered.sid],
      );
    expect(seconds).toBe(60);
    expect((await tokens.consumeStreamToken(streamTokenOf(answered.twiml)!))?.callSid).toBe(answered.sid);

    const failedTo = nextCallee();
    await place({ to: failedTo }).expect(201);
    const failed = twilio.lastCallTo(failedTo)!;
    await twilio.progress(failed, 'failed');
    expect(await tokens.consumeStreamToken(streamTokenOf(failed.twiml)!)).toBeUndefined();
  });

  for (const [outcome, callStatus] of [
    ['busy', 'busy'],
    ['no-answer', 'no-answer'],
    ['failed', 'failed'],
    ['canceled', 'no-answer'],
  ] as const) {
    it(`makes a call never answered (${outcome}) a ${callStatus} call: no duration, no transcript, its call.created delivered`, async () => {
      const to = nextCallee();
      const { callId } = (await place({ to, name: 'Rahul', greeting: 'Hello!' }).expect(201)).body;
      const answers = await twilio.progress(twilio.lastCallTo(to)!, outcome);
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 204));
      const call = await callOf(callId);
      expect(call).toMatchObject({
        id: callId,
        name: 'Rahul',
        phone: to,
        callStatus,
        channel: 'phone',
        callType: 'outbound',
        website: '',
        agentId,
        agent: 'Caller',
        durationSeconds: 0,
        transcript: [],
        endedReason: callStatus,
        hasRecording: false,
      });
      expect(await conversationStatus(callId)).toBe('ended');
      const [event] = await createdEvents(callId);
      expect(event).toMatchObject({ type: 'call.created', data: { id: callId, callStatus, endedReason: callStatus, transcript: [] } });
    });
  }

  it('changes nothing for a status reported again, or statuses coming in any order', async () => {
    const to = nextCallee();
    const { callId } = (await place({ to }).expect(201)).body;
    const call = twilio.lastCallTo(to)!;
    // The final status first, then the ones before it, then the final one again.
    expect((await twilio.report(call, 'busy')).status).toBe(204);
    const ended = await callOf(callId);
    expect(ended.callStatus).toBe('busy');
    for (const status of ['ringing', 'initiated', 'busy', 'busy', 'no-answer', 'queued'] as const) {
      expect((await twilio.report(call, status)).status).toBe(204);
    }
    expect(await callOf(callId)).toEqual(ended);
    // One call.created for it, whatever came after (a relay that has run since the last callback: a fence).
    const fence = nextCallee();
    const fenceCall = (await place({ to: fence }).expect(201)).body.callId as string;
    await twilio.progress(twilio.lastCallTo(fence)!, 'busy');
    await createdEvents(fenceCall);
    expect(createdEventsOf(callId)).toHaveLength(1);
    const [{ count }] = await context.app
      .get(DataSource)
      .query(`SELECT count(*)::int AS count FROM phone_call_statuses WHERE call_sid = $1`, [call.sid]);
    expect(count).toBe(5); // busy, ringing, initiated, no-answer, queued: each once
  });

  it('erases what the carrier reported of a call with the call (DELETE /calls/{callId})', async () => {
    const to = nextCallee();
    const { callId } = (await place({ to }).expect(201)).body;
    const call = twilio.lastCallTo(to)!;
    await twilio.progress(call, 'no-answer');
    const database = context.app.get(DataSource);
    const rows = async () =>
      (
        await database.query(
          `SELECT (SELECT count(*)::int FROM phone_calls WHERE conversation_id = $1) AS calls,
                  (SELECT count(*)::int FROM phone_call_statuses WHERE call_sid = $2) AS statuses`,
          [callId, call.sid],
        )
      )[0];
    expect(await rows()).toEqual({ calls: 1, statuses: 3 });
    await context.as(owner).delete(`/calls/${callId}`).expect(204);
    expect(await rows()).toEqual({ calls: 0, statuses: 0 });
  });

  it('applies a status that came before the carrier answered the request that placed the call', async () => {
    const to = nextCallee();
    const release = twilio.holdCallAnswers();
    const placing = place({ to }).then((response) => response); // sent now (a supertest request is sent when awaited)
    const call = await twilio.placed(to);
    // The call failed at once, and its callback reached the service before the answer to the request.
    expect((await twilio.report(call, 'failed')).status).toBe(204);
    release();
    const placed = await placing;
    expect(placed.status).toBe(201);
    const { callId } = placed.body;
    expect(await callOf(callId)).toMatchObject({ callStatus: 'failed', endedReason: 'failed', durationSeconds: 0 });
  });

  it('ends the conversation of an answered call whose stream never connected when the carrier says it completed, without a call', async () => {
    const to = nextCallee();
    const { callId } = (await place({ to }).expect(201)).body;
    await twilio.progress(twilio.lastCallTo(to)!, 'completed');
    expect(await conversationStatus(callId)).toBe('ended');
    expect((await context.as(owner).get(`/calls/${callId}`)).status).toBe(404); // nothing was said: no call
  });

  it("defaults the agent to the number's, answers 409 when there is none, and 400 for an agent of another account", async () => {
    const lonely = await connectNumber(context, owner, twilio);
    const before = await telephonyRows(context, owner.id);
    const requests = twilio.requests.length;
    const conflict = await place({ to: nextCallee() }, lonely).expect(409);
    expect(conflict.body.message).toContain('agent');
    const foreign = await createAgent(context, await context.createAccount());
    const refused = await place({ to: nextCallee(), agentId: foreign }, lonely).expect(400);
    expect(refused.body.details).toEqual([{ field: 'agentId', message: `agentId ${foreign} is not an agent of this account` }]);
    expect(await telephonyRows(context, owner.id)).toEqual(before);
    expect(twilio.requests.length).toBe(requests);
    // With an agent given, a number without one places calls.
    const placed = await place({ to: nextCallee(), agentId }, lonely).expect(201);
    expect(placed.body.status).toBe('queued');
  });

  it('refuses a callee that is not in E.164, and other invalid fields, with a 400 naming them', async () => {
    const before = await telephonyRows(context, owner.id);
    for (const [body, field] of [
      [{}, 'to'],
      [{ to: '9876543210' }, 'to'],
      [{ to: '+1234567' }, 'to'],
      [{ to: '+1234567890123456' }, 'to'],
      [{ to: nextCallee(), agentId: 0 }, 'agentId'],
      [{ to: nextCallee(), agentId: null }, 'agentId'],
      [{ to: nextCallee(), name: 'n'.repeat(201) }, 'name'],
      [{ to: nextCallee(), greeting: '😀'.repeat(501) }, 'greeting'],
      [{ to: nextCallee(), status: 'queued' }, 'status'],
    ] as [object, string][]) {
      const response = await place(body).expect(400);
      expect(response.body.details.map((detail: { field: string }) => detail.field)).toContain(field);
    }
    expect(await telephonyRows(context, owner.id)).toEqual(before);
    await place({ to: nextCallee(), name: 'n'.repeat(200), greeting: '😀'.repeat(500) }).expect(201);
  });

  it("answers 422 with the carrier's message when it refuses the call, 502 when it fails or is down, saving nothing", async () => {
    const refusedTo = nextCallee();
    twilio.refuseCallsTo(refusedTo);
    const before = await telephonyRows(context, owner.id);
    const refused = await place({ to: refusedTo }).expect(422);
    expect(refused.body).toEqual({
      statusCode: 422,
      error: 'Unprocessable Entity',
      message: `The carrier refused the call: Account not authorized to call ${refusedTo}. Perhaps you need to enable some international permissions.`,
    });
    for (const mode of ['failing', 'down'] as const) {
      twilio.mode = mode;
      const response = await place({ to: nextCallee() }).expect(502);
      expect(response.body).toMatchObject({ statusCode: 502, error: 'Bad Gateway' });
    }
    expect(await telephonyRows(context, owner.id)).toEqual(before);
  });

  it('answers 422 naming twilioAuthToken when the carrier no longer takes the stored credentials', async () => {
    const rotated = await connectNumber(context, owner, twilio, { agentId });
    rotated.carrierAccount.authToken = 'f'.repeat(32); // rotated in the carrier's console since
    const before = await telephonyRows(context, owner.id);
    const response = await place({ to: nextCallee() }, rotated).expect(422);
    expect(response.body.details).toEqual([{ field: 'twilioAuthToken', message: expect.any(String) }]);
    expect(await telephonyRows(context, owner.id)).toEqual(before);
  });

  it('places a call once for an Idempotency-Key sent twice, answering the same', async () => {
    const to = nextCallee();
    const first = await place({ to }).set('Idempotency-Key', `call ${to}`).expect(201);
    const again = await place({ to }).set('Idempotency-Key', `call ${to}`).expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(twilio.requestsTo('POST', /Calls\.json$/).filter((request) => request.form.get('To') === to)).toHaveLength(1);
    await place({ to, name: 'other' }).set('Idempotency-Key', `call ${to}`).expect(422);
  });

  it("answers 404 for another account's number or an unknown one", async () => {
    const other = await context.createAccount();
    await context.as(other).post(`/phone-numbers/${connected.phone.id}/calls`).send({ to: nextCallee() }).expect(404);
    await context.as(owner).post('/phone-numbers/2147483647/calls').send({ to: nextCallee() }).expect(404);
  });
});

describe('outbound phone calls within the caps', () => {
  let twilio: FakeTwilio;
  beforeAll(async () => (twilio = await FakeTwilio.start()));
  afterAll(() => twilio.close());

  it('places at most PHONE_MAX_ACTIVE_CALLS at once (inbound ones count), then 429 with Retry-After, saving nothing; an ended call frees a place', async () => {
    const { context } = await telephonyContext(twilio, { telephony: { maxActiveCalls: 3 } });
    try {
      const owner = await context.createAccount();
      const connected = await connectNumber(context, owner, twilio, { agentId: await createAgent(context, owner) });
      const place = (to: string) => context.as(owner).post(`/phone-numbers/${connected.phone.id}/calls`).send({ to });
      await twilio.dialIn(connected.carrierNumber, '+14155551000'); // an inbound call in progress
      await place('+919800000001').expect(201);
      await place('+919800000002').expect(201);
      const before = await telephonyRows(context, owner.id);
      const requests = twilio.requests.length;
      const refused = await place('+919800000003').expect(429);
      expect(refused.headers['retry-after']).toBe('30');
      expect(refused.body).toMatchObject({ statusCode: 429, message: expect.stringContaining('phone calls') });
      expect(await telephonyRows(context, owner.id)).toEqual(before);
      expect(twilio.requests.length).toBe(requests);
      // Another account has places of its own.
      const other = await context.createAccount();
      const theirs = await connectNumber(context, other, twilio, { agentId: await createAgent(context, other) });
      await context.as(other).post(`/phone-numbers/${theirs.phone.id}/calls`).send({ to: '+919800000004' }).expect(201);
      // One of the calls was busy: a place is free again.
      await twilio.progress(twilio.lastCallTo('+919800000001') as FakeCall, 'busy');
      await place('+919800000003').expect(201);
    } finally {
      await context.close();
    }
  });

  it('answers 503 naming the missing speech-to-text when STT_PROVIDER=none, saving nothing', async () => {
    const { context } = await telephonyContext(twilio);
    const deaf = await telephonyContext(twilio, { voice: { ...context.config.voice, sttProvider: 'none' } });
    try {
      const owner = await deaf.context.createAccount();
      const connected = await connectNumber(deaf.context, owner, twilio, { agentId: await createAgent(deaf.context, owner) });
      const before = await telephonyRows(deaf.context, owner.id);
      const response = await deaf.context
        .as(owner)
        .post(`/phone-numbers/${connected.phone.id}/calls`)
        .send({ to: '+919800000009' })
        .expect(503);
      expect(response.body).toMatchObject({ statusCode: 503, message: expect.stringContaining('speech-to-text') });
      expect(await telephonyRows(deaf.context, owner.id)).toEqual(before);
    } finally {
      await deaf.context.close();
      await context.close();
    }
  });
});
