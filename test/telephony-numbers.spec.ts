import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { AuthTokenBox, TELEPHONY_SECRET_FILE } from '../src/telephony/auth-token-box';
import { TestAccount, TestContext } from './helpers';
import { FakeTwilio } from './support/fake-twilio';
import { reachableTempDir } from './support/data-dir';
import { capturedDebugLogger, connectNumber, createAgent, telephonyContext, telephonyRows } from './support/telephony';

/**
 * Phone numbers (contract section 17) against the stand-in carrier: the CRUD and its limits, the carrier's part
 * (the number found on the carrier account, then pointed at the service) with its refusals (422) and failures
 * (502) saving nothing, and the auth token: write-only, sealed at rest, in no log line.
 */
describe('phone numbers', () => {
  let twilio: FakeTwilio;
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  const log = capturedDebugLogger();

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    ({ context, baseUrl } = await telephonyContext(twilio, {}, { logger: log.logger }));
    owner = await context.createAccount();
  });
  afterAll(async () => {
    await context.close();
    await twilio.close();
  });
  afterEach(() => (twilio.mode = 'up'));

  /** A carrier account with one number, not connected yet. */
  const carrierNumber = (phoneNumber?: string) => {
    const account = twilio.addAccount();
    return { account, number: twilio.addNumber(account, phoneNumber) };
  };
  const body = (carrier: ReturnType<typeof carrierNumber>, fields: object = {}) => ({
    number: carrier.number.phoneNumber,
    twilioAccountSid: carrier.account.sid,
    twilioAuthToken: carrier.account.authToken,
    ...fields,
  });

  it('connects a number: the carrier finds it on the account and sends its calls to the service; the token is never returned', async () => {
    const agentId = await createAgent(context, owner, { name: 'Front desk agent' });
    const carrier = carrierNumber();
    const created = await context
      .as(owner)
      .post('/phone-numbers')
      .send(body(carrier, { provider: 'twilio', agentId, label: 'Front desk', greeting: 'Namaste, how can I help?' }))
      .expect(201);
    const phone = created.body;
    expect(Object.keys(phone).sort()).toEqual(
      [
        'id',
        'number',
        'provider',
        'agentId',
        'agentVersion',
        'label',
        'greeting',
        'twilioAccountSid',
        'inboundUrl',
        'statusUrl',
        'createdAt',
        'updatedAt',
      ].sort(),
    );
    expect(phone).toMatchObject({
      number: carrier.number.phoneNumber,
      provider: 'twilio',
      agentId,
      label: 'Front desk',
      greeting: 'Namaste, how can I help?',
      twilioAccountSid: carrier.account.sid,
      inboundUrl: `${baseUrl}/telephony/twilio/${phone.id}/incoming`,
      statusUrl: `${baseUrl}/telephony/twilio/${phone.id}/status`,
    });
    expect(created.text).not.toContain(carrier.account.authToken);
    // The carrier was asked as Twilio's API is: the number looked up on the account, then pointed at the service.
    const lookups = twilio.requestsTo('GET', /IncomingPhoneNumbers\.json$/).filter((request) => request.path.includes(carrier.account.sid));
    expect(lookups.map((request) => request.query.get('PhoneNumber'))).toEqual([carrier.number.phoneNumber]);
    expect(twilio.number(carrier.number.phoneNumber)).toMatchObject({
      voiceUrl: phone.inboundUrl,
      voiceMethod: 'POST',
      statusCallback: phone.statusUrl,
      statusCallbackMethod: 'POST',
    });
    // Listed and read back the same, never with the token.
    const list = await context.as(owner).get('/phone-numbers').expect(200);
    expect(list.body).toEqual([phone]);
    expect(list.text).not.toContain(carrier.account.authToken);
    expect((await context.as(owner).get(`/phone-numbers/${phone.id}`).expect(200)).body).toEqual(phone);
    // Stored sealed: the column holds neither the token nor its bytes in any plain encoding.
    const [row] = await context.app.get(DataSource).query(`SELECT twilio_auth_token_sealed FROM phone_numbers WHERE id = $1`, [phone.id]);
    const sealed: Buffer = row.twilio_auth_token_sealed;
    expect(sealed.includes(Buffer.from(carrier.account.authToken))).toBe(false);
    expect(sealed.toString('hex')).not.toContain(carrier.account.authToken);
    expect(sealed.length).toBeGreaterThan(carrier.account.authToken.length); // IV and tag besides the ciphertext
  });

  it('takes the defaults: provider twilio, no agent, no label, no greeting', async () => {
    const carrier = carrierNumber();
    const phone = (await context.as(owner).post('/phone-numbers').send(body(carrier)).expect(201)).body;
    expect(phone).toMatchObject({ provider: 'twilio', agentId: null, label: '', greeting: '' });
  });

  it('accepts a number of 8 and of 15 digits, and refuses anything that is not E.164 with a 400 naming it, asking no carrier', async () => {
    for (const number of ['+12345678', '+123456789012345']) {
      await context
        .as(owner)
        .post('/phone-numbers')
        .send(body(carrierNumber(number)))
        .expect(201);
    }
    const before = await telephonyRows(context, owner.id);
    const requests = twilio.requests.length;
    for (const number of [
      '+1234567',
      '+1234567890123456',
      '14155550100',
      '+04155550100',
      '+1 415 555 0100',
      '+1415555010a',
      '',
      14155550100,
    ]) {
      const carrier = carrierNumber();
      const response = await context.as(owner).post('/phone-numbers').send(body(carrier, { number })).expect(400);
      expect(response.body.details.map((detail: { field: string }) => detail.field)).toContain('number');
    }
    expect(twilio.requests.length).toBe(requests);
    expect(await telephonyRows(context, owner.id)).toEqual(before);
  });

  it('refuses missing or malformed credentials, an unknown provider and unknown fields with a 400 naming them', async () => {
    const carrier = carrierNumber();
    const cases: [object, string][] = [
      [{ twilioAccountSid: undefined }, 'twilioAccountSid'],
      [{ twilioAccountSid: 'AC123' }, 'twilioAccountSid'],
      [{ twilioAccountSid: `XX${'0'.repeat(32)}` }, 'twilioAccountSid'],
      [{ twilioAuthToken: undefined }, 'twilioAuthToken'],
      [{ twilioAuthToken: '' }, 'twilioAuthToken'],
      [{ twilioAuthToken: 'has spaces in it' }, 'twilioAuthToken'],
      [{ twilioAuthToken: 'x'.repeat(129) }, 'twilioAuthToken'],
      [{ number: undefined }, 'number'],
      [{ provider: 'vonage' }, 'provider'],
      [{ inboundUrl: 'https://evil.example/' }, 'inboundUrl'],
      [{ id: 7 }, 'id'],
    ];
    for (const [fields, field] of cases) {
      const response = await context.as(owner).post('/phone-numbers').send(body(carrier, fields)).expect(400);
      expect(response.body.details.map((detail: { field: string }) => detail.field)).toContain(field);
      expect(response.text).not.toContain(carrier.account.authToken);
    }
  });

  it('keeps label to 200 and greeting to 500 characters (code points, trimmed), on create and on PATCH', async () => {
    const label = '😀'.repeat(200);
    const greeting = 'é'.repeat(499) + '😀';
    const phone = (
      await context
        .as(owner)
        .post('/phone-numbers')
        .send(body(carrierNumber(), { label: ` ${label} `, greeting }))
        .expect(201)
    ).body;
    expect(phone).toMatchObject({ label, greeting });
    const before = await telephonyRows(context, owner.id);
    for (const fields of [{ label: '😀'.repeat(201) }, { greeting: 'e\u0301'.repeat(250) + 'x' }]) {
      const field = Object.keys(fields)[0];
      const refused = await context.as(owner).post('/phone-numbers').send(body(carrierNumber(), fields)).expect(400);
      expect(refused.body.details.map((detail: { field: string }) => detail.field)).toEqual([field]);
      const patched = await context.as(owner).patch(`/phone-numbers/${phone.id}`).send(fields).expect(400);
      expect(patched.body.details.map((detail: { field: string }) => detail.field)).toEqual([field]);
    }
    expect(await telephonyRows(context, owner.id)).toEqual(before);
    expect((await context.as(owner).get(`/phone-numbers/${phone.id}`).expect(200)).body).toEqual(phone);
    const changed = await context
      .as(owner)
      .patch(`/phone-numbers/${phone.id}`)
      .send({ label: 'b'.repeat(200), greeting: '' })
      .expect(200);
    expect(changed.body).toMatchObject({ label: 'b'.repeat(200), greeting: '' });
  });

  it('answers 409 for a number the account has already, before asking the carrier, saving nothing', async () => {
    const { carrierAccount, carrierNumber: existing } = await connectNumber(context, owner, twilio);
    const before = await telephonyRows(context, owner.id);
    const requests = twilio.requests.length;
    const again = await context
      .as(owner)
      .post('/phone-numbers')
      .send({ number: existing.phoneNumber, twilioAccountSid: carrierAccount.sid, twilioAuthToken: carrierAccount.authToken })
      .expect(409);
    expect(again.body).toMatchObject({ statusCode: 409, error: 'Conflict' });
    expect(twilio.requests.length).toBe(requests);
    expect(await telephonyRows(context, owner.id)).toEqual(before);
    // Another account may connect the same number (of its own carrier account).
    const other = await context.createAccount();
    await context
      .as(other)
      .post('/phone-numbers')
      .send({ number: existing.phoneNumber, twilioAccountSid: carrierAccount.sid, twilioAuthToken: carrierAccount.authToken })
      .expect(201);
  });

  it("refuses another account's agent or an unknown one (400 naming agentId), and sets agentId to null when the agent is deleted", async () => {
    const other = await context.createAccount();
    const foreign = await createAgent(context, other);
    const before = await telephonyRows(context, owner.id);
    for (const agentId of [foreign, 2_000_000_000]) {
      const response = await context.as(owner).post('/phone-numbers').send(body(carrierNumber(), { agentId })).expect(400);
      expect(response.body.details).toEqual([{ field: 'agentId', message: `agentId ${agentId} is not an agent of this account` }]);
    }
    expect(await telephonyRows(context, owner.id)).toEqual(before);
    const agentId = await createAgent(context, owner);
    const { phone } = await connectNumber(context, owner, twilio, { agentId });
    await context.as(owner).patch(`/phone-numbers/${phone.id}`).send({ agentId: foreign }).expect(400);
    await context.as(owner).delete(`/agents/${agentId}`).expect(204);
    expect((await context.as(owner).get(`/phone-numbers/${phone.id}`).expect(200)).body.agentId).toBeNull();
  });

  it('answers 422 naming twilioAuthToken for credentials the carrier refuses, and naming number for a number not on that account, saving nothing', async () => {
    const carrier = carrierNumber();
    const before = await telephonyRows(context, owner.id);
    const wrongToken = await context
      .as(owner)
      .post('/phone-numbers')
      .send(body(carrier, { twilioAuthToken: 'f'.repeat(32) }))
      .expect(422);
    expect(wrongToken.body).toEqual({
      statusCode: 422,
      error: 'Unprocessable Entity',
      message: expect.any(String),
      details: [{ field: 'twilioAuthToken', message: expect.stringContaining('refused') }],
    });
    const otherAccount = twilio.addAccount();
    const notTheirs = await context
      .as(owner)
      .post('/phone-numbers')
      .send(body(carrier, { twilioAccountSid: otherAccount.sid, twilioAuthToken: otherAccount.authToken }))
      .expect(422);
    expect(notTheirs.body.details).toEqual([{ field: 'number', message: expect.stringContaining(carrier.number.phoneNumber) }]);
    expect(await telephonyRows(context, owner.id)).toEqual(before);
    expect(twilio.number(carrier.number.phoneNumber)!.voiceUrl).toBe(''); // never pointed anywhere
  });

  it('answers 502 when the carrier fails or cannot be reached, saving nothing', async () => {
    const before = await telephonyRows(context, owner.id);
    for (const mode of ['failing', 'down'] as const) {
      twilio.mode = mode;
      const carrier = carrierNumber();
      const response = await context.as(owner).post('/phone-numbers').send(body(carrier)).expect(502);
      expect(response.body).toMatchObject({ statusCode: 502, error: 'Bad Gateway' });
      expect(response.text).not.toContain(carrier.account.authToken);
    }
    expect(await telephonyRows(context, owner.id)).toEqual(before);
  });

  it('answers 502 when the carrier does not answer within TWILIO_TIMEOUT_MS, saving nothing', async () => {
    const silent = net.createServer(() => undefined); // accepts the connection, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    const hanging = await telephonyContext(twilio, { telephony: { twilioApiBaseUrl: `http://127.0.0.1:${port}`, carrierTimeoutMs: 300 } });
    try {
      const account = await hanging.context.createAccount();
      const response = await hanging.context.as(account).post('/phone-numbers').send(body(carrierNumber())).expect(502);
      expect(response.body.statusCode).toBe(502);
      expect(await telephonyRows(hanging.context, account.id)).toEqual({ numbers: 0, conversations: 0, phoneCalls: 0, calls: 0 });
    } finally {
      await hanging.context.close();
      silent.close();
    }
  });

  it('changes a label, the agent or the greeting without asking the carrier; a new number or new credentials are checked and the number pointed again', async () => {
    const { phone, carrierAccount } = await connectNumber(context, owner, twilio, { label: 'Old' });
    const requests = twilio.requests.length;
    const agentId = await createAgent(context, owner);
    const changed = await context
      .as(owner)
      .patch(`/phone-numbers/${phone.id}`)
      .send({ label: 'New', agentId, greeting: 'Hello' })
      .expect(200);
    expect(changed.body).toMatchObject({ label: 'New', agentId, greeting: 'Hello', number: phone.number });
    expect(twilio.requests.length).toBe(requests);
    expect((await context.as(owner).patch(`/phone-numbers/${phone.id}`).send({ agentId: null }).expect(200)).body.agentId).toBeNull();
    expect((await context.as(owner).patch(`/phone-numbers/${phone.id}`).send({}).expect(200)).body.label).toBe('New');

    // Another number of the same carrier account: found, pointed at the service with the same URLs.
    const second = twilio.addNumber(carrierAccount);
    const moved = await context.as(owner).patch(`/phone-numbers/${phone.id}`).send({ number: second.phoneNumber }).expect(200);
    expect(moved.body).toMatchObject({ number: second.phoneNumber, inboundUrl: phone.inboundUrl });
    expect(twilio.number(second.phoneNumber)).toMatchObject({ voiceUrl: phone.inboundUrl, statusCallback: phone.statusUrl });

    // A number the account does not have, or a token the carrier refuses: 422, nothing changes (the stored token still works).
    const stranger = twilio.addNumber(twilio.addAccount());
    const unchanged = (await context.as(owner).get(`/phone-numbers/${phone.id}`).expect(200)).body;
    const notOnAccount = await context
      .as(owner)
      .patch(`/phone-numbers/${phone.id}`)
      .send({ number: stranger.phoneNumber, label: 'X' })
      .expect(422);
    expect(notOnAccount.body.details[0].field).toBe('number');
    const refused = await context
      .as(owner)
      .patch(`/phone-numbers/${phone.id}`)
      .send({ twilioAuthToken: 'e'.repeat(32) })
      .expect(422);
    expect(refused.body.details[0].field).toBe('twilioAuthToken');
    expect((await context.as(owner).get(`/phone-numbers/${phone.id}`).expect(200)).body).toEqual(unchanged);
    // The stored token still opens the carrier account: a change of SID alone is checked with it.
    await context.as(owner).patch(`/phone-numbers/${phone.id}`).send({ twilioAccountSid: carrierAccount.sid }).expect(200);

    // The carrier down: 502, nothing changes.
    twilio.mode = 'down';
    await context.as(owner).patch(`/phone-numbers/${phone.id}`).send({ number: phone.number }).expect(502);
    twilio.mode = 'up';
    expect((await context.as(owner).get(`/phone-numbers/${phone.id}`).expect(200)).body.number).toBe(second.phoneNumber);

    // Onto a number the account has on another of its numbers: 409.
    const { carrierNumber: taken } = await connectNumber(context, owner, twilio);
    await context.as(owner).patch(`/phone-numbers/${phone.id}`).send({ number: taken.phoneNumber }).expect(409);
  });

  it('deletes a number (204), then 404s for it; an unknown or malformed id is a 404', async () => {
    const { phone } = await connectNumber(context, owner, twilio);
    await context.as(owner).delete(`/phone-numbers/${phone.id}`).expect(204);
    await context.as(owner).get(`/phone-numbers/${phone.id}`).expect(404);
    await context.as(owner).delete(`/phone-numbers/${phone.id}`).expect(404);
    await context.as(owner).patch(`/phone-numbers/${phone.id}`).send({ label: 'x' }).expect(404);
    for (const id of ['abc', '0', '01', '2147483648']) await context.as(owner).get(`/phone-numbers/${id}`).expect(404);
  });

  it('never writes an auth token to a log line, whatever happened to the request', async () => {
    const tokens: string[] = [];
    const carrier = carrierNumber();
    tokens.push(carrier.account.authToken);
    await context.as(owner).post('/phone-numbers').send(body(carrier)).expect(201);
    const refused = 'a'.repeat(31) + 'Z';
    tokens.push(refused);
    await context
      .as(owner)
      .post('/phone-numbers')
      .send(body(carrierNumber(), { twilioAuthToken: refused }))
      .expect(422);
    twilio.mode = 'failing';
    const failing = carrierNumber();
    tokens.push(failing.account.authToken);
    await context.as(owner).post('/phone-numbers').send(body(failing)).expect(502);
    twilio.mode = 'up';
    const invalid = 'not a token but a secret with spaces';
    tokens.push(invalid);
    await context
      .as(owner)
      .post('/phone-numbers')
      .send(body(carrierNumber(), { twilioAuthToken: invalid }))
      .expect(400);
    expect(log.lines.length).toBeGreaterThan(0);
    const text = log.lines.join('\n');
    for (const token of tokens) expect(text).not.toContain(token);
  });
});

describe('the telephony secret', () => {
  let twilio: FakeTwilio;
  beforeAll(async () => (twilio = await FakeTwilio.start()));
  afterAll(() => twilio.close());

  it('is generated once in DATA_DIR when TELEPHONY_SECRET is unset, and used by every instance that shares it', async () => {
    const dataDir = reachableTempDir('telephony-secret-');
    const first = await telephonyContext(twilio, { dataDir });
    const second = await telephonyContext(twilio, { dataDir });
    try {
      const secret = fs.readFileSync(path.join(dataDir, TELEPHONY_SECRET_FILE), 'utf8');
      expect(secret.length).toBeGreaterThanOrEqual(32);
      expect((fs.statSync(path.join(dataDir, TELEPHONY_SECRET_FILE)).mode & 0o777).toString(8)).toBe('600');
      expect(first.context.app.get(AuthTokenBox).open(1, second.context.app.get(AuthTokenBox).seal(1, 'token'))).toBe('token');
    } finally {
      await first.context.close();
      await second.context.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('seals with TELEPHONY_SECRET when set: another secret cannot open the token, nor can another account', async () => {
    const sealing = new AuthTokenBox('s'.repeat(40));
    const sealed = sealing.seal(7, 'the-token');
    expect(sealing.open(7, sealed)).toBe('the-token');
    expect(new AuthTokenBox('t'.repeat(40)).open(7, sealed)).toBeUndefined();
    expect(sealing.open(8, sealed)).toBeUndefined();
    const altered = Buffer.from(sealed);
    altered[altered.length - 1] ^= 1;
    expect(sealing.open(7, altered)).toBeUndefined();
  });

  it("asks for the token again (422) when the service's secret changed and a PATCH needs the stored one", async () => {
    const before = await telephonyContext(twilio, { telephony: { secret: 'a'.repeat(40) } });
    let phoneId: number;
    let owner: TestAccount;
    let carrier: Awaited<ReturnType<typeof connectNumber>>;
    try {
      owner = await before.context.createAccount();
      carrier = await connectNumber(before.context, owner, twilio);
      phoneId = carrier.phone.id;
    } finally {
      await before.context.close();
    }
    const after = await telephonyContext(twilio, { telephony: { secret: 'b'.repeat(40) } });
    try {
      const refused = await after.context
        .as(owner)
        .patch(`/phone-numbers/${phoneId}`)
        .send({ number: carrier.carrierNumber.phoneNumber })
        .expect(422);
      expect(refused.body.details).toEqual([{ field: 'twilioAuthToken', message: expect.stringContaining('send twilioAuthToken again') }]);
      await after.context
        .as(owner)
        .patch(`/phone-numbers/${phoneId}`)
        .send({ twilioAuthToken: carrier.carrierAccount.authToken })
        .expect(200);
      await after.context.as(owner).patch(`/phone-numbers/${phoneId}`).send({ number: carrier.carrierNumber.phoneNumber }).expect(200);
    } finally {
      await after.context.close();
    }
  });
});
