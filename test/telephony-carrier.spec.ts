import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks';
import { ConfigError, loadConfig } from '../src/config/config';
import { parseForm } from '../src/common/form-body';
import { CarrierRefusal, CarrierUnavailable, TwilioRest } from '../src/telephony/twilio-rest';
import { TestContext } from './helpers';
import { FakeTwilio } from './support/fake-twilio';
import { connectNumber, createAgent, telephonyContext } from './support/telephony';

/**
 * The pieces around the carrier: its REST client against the stand-in (which answers as Twilio does), the form
 * bodies of its webhooks, the limits on its public routes, and the telephony settings.
 */
describe('the carrier REST client (TwilioRest) against the stand-in carrier', () => {
  let twilio: FakeTwilio;
  let client: TwilioRest;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    const config = loadConfig({ TWILIO_API_BASE_URL: twilio.url, TWILIO_TIMEOUT_MS: '2000' });
    client = new TwilioRest(config);
  });
  afterAll(async () => {
    client.onApplicationShutdown();
    await twilio.close();
  });
  afterEach(() => (twilio.mode = 'up'));

  it('finds a number of the account, and only of that account', async () => {
    const account = twilio.addAccount();
    const number = twilio.addNumber(account);
    const credentials = { accountSid: account.sid, authToken: account.authToken };
    expect(await client.findNumber(credentials, number.phoneNumber)).toBe(number.sid);
    expect(await client.findNumber(credentials, '+15550000000')).toBeUndefined();
    const other = twilio.addAccount();
    expect(await client.findNumber({ accountSid: other.sid, authToken: other.authToken }, number.phoneNumber)).toBeUndefined();
  });

  it("takes Twilio's 401 for credentials it refuses as a refusal of the credentials, with Twilio's code and message", async () => {
    const account = twilio.addAccount();
    const refusal = await client
      .findNumber({ accountSid: account.sid, authToken: 'wrong' }, '+15550000000')
      .catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(CarrierRefusal);
    expect(refusal).toMatchObject({ status: 401, code: 20003, carrierMessage: 'Authenticate', refusesCredentials: true });
  });

  it('places a call with the form Twilio takes, and ends it with Status=completed', async () => {
    const account = twilio.addAccount();
    const number = twilio.addNumber(account);
    const credentials = { accountSid: account.sid, authToken: account.authToken };
    const sid = await client.placeCall(credentials, {
      to: '+919876543210',
      from: number.phoneNumber,
      twiml: '<Response><Hangup/></Response>',
      statusCallback: 'https://api.example.com/telephony/twilio/1/status',
    });
    expect(sid).toMatch(/^CA[0-9a-f]{32}$/);
    expect(twilio.calls.get(sid)).toMatchObject({
      status: 'queued',
      statusCallbackEvents: ['initiated', 'ringing', 'answered', 'completed'],
      timeout: 30,
    });
    await client.endCall(credentials, sid);
    expect(twilio.calls.get(sid)!.status).toBe('completed');
    const [ended] = twilio.requestsTo('POST', new RegExp(`Calls/${sid}\\.json$`));
    expect(Object.fromEntries(ended.form)).toEqual({ Status: 'completed' });
    // Twilio's refusal of a call it cannot place: its 400 with code and message.
    const refused = await client
      .placeCall(credentials, { to: '12345', from: number.phoneNumber, twiml: '<Response/>', statusCallback: 'https://x.example/s' })
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({
      status: 400,
      code: 21211,
      carrierMessage: "Invalid 'To' Phone Number: 12345",
      refusesCredentials: false,
    });
    await expect(client.endCall(credentials, `CA${'0'.repeat(32)}`)).rejects.toMatchObject({ status: 404, code: 20404 });
  });

  it('takes a 500, a reset connection and an answer that is not JSON as the carrier unavailable', async () => {
    const account = twilio.addAccount();
    const credentials = { accountSid: account.sid, authToken: account.authToken };
    for (const mode of ['failing', 'down'] as const) {
      twilio.mode = mode;
      await expect(client.findNumber(credentials, '+15550000000')).rejects.toBeInstanceOf(CarrierUnavailable);
    }
  });
});

describe('form bodies (a carrier webhook)', () => {
  it('decodes as the URL standard does, keeps repeated names in order, and has no prototype', () => {
    const params = parseForm('To=%2B14155550100&Name=Priya+Sharma&Event=initiated&Event=ringing&__proto__=x&constructor=y&Bad=%E0%A4');
    expect(params.To).toBe('+14155550100');
    expect(params.Name).toBe('Priya Sharma');
    expect(params.Event).toEqual(['initiated', 'ringing']);
    expect(Object.getPrototypeOf(params)).toBeNull();
    expect(params.__proto__).toBe('x');
    expect(params.constructor).toBe('y');
    expect(params.Bad).toBe('\uFFFD');
  });

  it('refuses NUL in a name or a value, and more than 200 parameters, with a 400', () => {
    expect(() => parseForm('A=%00')).toThrow(
      expect.objectContaining({ details: [{ field: 'A', message: expect.stringContaining('NUL') }] }),
    );
    expect(() => parseForm('%00=a')).toThrow(expect.objectContaining({ status: 400 }));
    expect(() => parseForm(Array.from({ length: 201 }, (_, index) => `P${index}=1`).join('&'))).toThrow(/200 parameters/);
    expect(Object.keys(parseForm(Array.from({ length: 200 }, (_, index) => `P${index}=1`).join('&')))).toHaveLength(200);
  });
});

describe('the limits of the carrier webhooks', () => {
  let twilio: FakeTwilio;
  let context: TestContext;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    ({ context } = await telephonyContext(twilio, {
      unauthenticatedRateLimit: 3,
      widgetRateLimit: 1_000,
      widgetRateLimitWindowSeconds: 600,
    }));
  });
  afterAll(async () => {
    await context.close();
    await twilio.close();
  });

  it("counts an address's requests naming no number or unsigned: past UNAUTHENTICATED_RATE_LIMIT, a 429 before any lookup, even signed", async () => {
    const owner = await context.createAccount();
    const connected = await connectNumber(context, owner, twilio, { agentId: await createAgent(context, owner) });
    // A wrong signature for an existing number is refused but not counted: the carrier's own requests for a number
    // whose token changed on one side only must not get its addresses blocked for every other number.
    for (let attempt = 0; attempt < 5; attempt++) {
      expect((await twilio.dialIn(connected.carrierNumber, '+14155550100', { sign: () => 'forged' })).answer.status).toBe(403);
    }
    expect((await twilio.dialIn(connected.carrierNumber, '+14155550100')).answer.status).toBe(200);
    // Unknown numbers and missing signatures are counted: the limit (3) is answered, the one past it blocks the address.
    const unknown = () => fetch(connected.phone.inboundUrl.replace(`/${connected.phone.id}/`, '/2147483647/'), { method: 'POST' });
    for (let attempt = 0; attempt < 2; attempt++) expect((await unknown()).status).toBe(403);
    for (let attempt = 0; attempt < 2; attempt++) {
      expect((await twilio.dialIn(connected.carrierNumber, '+14155550100', { sign: () => undefined })).answer.status).toBe(403);
    }
    const blocked = await twilio.dialIn(connected.carrierNumber, '+14155550100');
    expect(blocked.answer.status).toBe(429);
    expect(JSON.parse(blocked.answer.body)).toMatchObject({ statusCode: 429 });
  });
});

describe('the carrier webhooks per number and address (WIDGET_RATE_LIMIT)', () => {
  let twilio: FakeTwilio;
  let context: TestContext;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    ({ context } = await telephonyContext(twilio, { widgetRateLimit: 3, widgetRateLimitWindowSeconds: 600 }));
  });
  afterAll(async () => {
    await context.close();
    await twilio.close();
  });

  it('answers 429 with Retry-After past the limit for one number, while another number is still answered', async () => {
    const owner = await context.createAccount();
    const agentId = await createAgent(context, owner);
    const busy = await connectNumber(context, owner, twilio, { agentId });
    const quiet = await connectNumber(context, owner, twilio, { agentId });
    for (let call = 0; call < 3; call++) expect((await twilio.dialIn(busy.carrierNumber, '+14155550101')).answer.status).toBe(200);
    const url = busy.phone.inboundUrl;
    const params = {
      CallSid: `CA${'5'.repeat(32)}`,
      AccountSid: busy.carrierAccount.sid,
      From: '+14155550101',
      To: busy.carrierNumber.phoneNumber,
    };
    const over = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': getExpectedTwilioSignature(busy.carrierAccount.authToken, url, params),
      },
      body: new URLSearchParams(params).toString(),
    });
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await twilio.dialIn(quiet.carrierNumber, '+14155550102')).answer.status).toBe(200);
  });
});

describe('the telephony settings', () => {
  it('has the defaults: Twilio itself, 10 s per request, 10 phone calls, 1,800 s a call, a kept secret', () => {
    expect(loadConfig({}).telephony).toEqual({
      twilioApiBaseUrl: 'https://api.twilio.com',
      carrierTimeoutMs: 10_000,
      secret: undefined,
      maxActiveCalls: 10,
      maxCallSeconds: 1800,
    });
  });

  it('reads each variable, and refuses a bad value naming it', () => {
    expect(
      loadConfig({
        TWILIO_API_BASE_URL: 'http://127.0.0.1:9000/',
        TWILIO_TIMEOUT_MS: '500',
        TELEPHONY_SECRET: 's'.repeat(32),
        PHONE_MAX_ACTIVE_CALLS: '100000',
        PHONE_MAX_CALL_SECONDS: '10',
      }).telephony,
    ).toEqual({
      twilioApiBaseUrl: 'http://127.0.0.1:9000',
      carrierTimeoutMs: 500,
      secret: 's'.repeat(32),
      maxActiveCalls: 100_000,
      maxCallSeconds: 10,
    });
    for (const [name, value] of [
      ['TWILIO_API_BASE_URL', 'ftp://twilio.example'],
      ['TWILIO_API_BASE_URL', 'https://user:pass@api.twilio.com'],
      ['TELEPHONY_SECRET', 's'.repeat(31)],
      ['TELEPHONY_SECRET', `${'s'.repeat(32)} x`],
      ['PHONE_MAX_ACTIVE_CALLS', '0'],
      ['PHONE_MAX_ACTIVE_CALLS', '100001'],
      ['PHONE_MAX_CALL_SECONDS', '9'],
      ['PHONE_MAX_CALL_SECONDS', '14401'],
      ['TWILIO_TIMEOUT_MS', '99'],
    ]) {
      expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
      expect(() => loadConfig({ [name]: value })).toThrow(name);
    }
  });
});
