import { DataSource } from 'typeorm';
import { AgentVersionsService } from '../src/agent-versions/agent-versions.service';
import { bearer, Started } from './conversation-helpers';
import { FakeLlm, startFakeLlm } from './fake-llm';
import { TestAccount, TestContext } from './helpers';
import { FakeTwilio } from './support/fake-twilio';
import { connectNumber, telephonyContext } from './support/telephony';

/**
 * Widget sites and phone numbers pinning a version of their agent (contract section 19): their conversations run
 * the pinned version instead of the latest published one (a test conversation runs the current settings either way);
 * a pin is a version of the row's own agent (400 naming agentVersion otherwise, and a foreign key under it), cleared
 * when the agent changes without a new pin and when the agent is deleted.
 */
describe('version pins on widget sites and phone numbers', () => {
  let twilio: FakeTwilio;
  let llm: FakeLlm;
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;
  let database: DataSource;
  /** An agent with two published versions: 1 (prompt PROMPT-ONE, name Asha) and 2 (PROMPT-TWO, Meera); current PROMPT-THREE. */
  let agentId: number;

  beforeAll(async () => {
    twilio = await FakeTwilio.start();
    llm = await startFakeLlm();
    ({ context } = await telephonyContext(twilio, {
      llm: { baseUrl: llm.url, apiKey: 'sk-test', timeoutMs: 10_000, maxTokens: 100 },
      widgetRateLimit: 10_000,
    }));
    database = context.app.get(DataSource);
    owner = await context.createAccount();
    other = await context.createAccount();
    llm.behave({ kind: 'stream', pieces: ['Namaste.'] });
    agentId = (await context.as(owner).post('/agents').send({ name: 'Asha', systemPrompt: 'PROMPT-ONE' }).expect(201)).body.id;
    await context.as(owner).post(`/agents/${agentId}/versions`).send({}).expect(201);
    await context.as(owner).patch(`/agents/${agentId}`).send({ name: 'Meera', systemPrompt: 'PROMPT-TWO' }).expect(200);
    await context.as(owner).post(`/agents/${agentId}/versions`).send({}).expect(201);
    await context.as(owner).patch(`/agents/${agentId}`).send({ systemPrompt: 'PROMPT-THREE' }).expect(200);
  });
  afterAll(async () => {
    await context?.close();
    await llm?.close();
    await twilio?.close();
  });

  const createSite = (body: object, account = owner) =>
    context
      .as(account)
      .post('/widget/sites')
      .send({ name: 'Shop', ...body });
  const session = async (siteKey: string): Promise<Started> =>
    (await context.http.post('/widget/sessions').set('Origin', 'https://shop.example.com').send({ siteKey }).expect(201)).body;
  /** The system prompt the model is given in the conversation. */
  const promptOf = async (started: Started) => {
    await context.http
      .post(`/conversations/${started.conversationId}/messages`)
      .set(bearer(started.token))
      .send({ text: 'Hi' })
      .expect(200);
    return llm.requests.at(-1)!.body.messages[0].content as string;
  };
  /** The fields a 400's details name, each once. */
  const fieldsOf = (response: { body: { details?: { field: string }[] } }) => [
    ...new Set(response.body.details?.map((detail) => detail.field)),
  ];

  it("runs a site's pinned version, an unpinned site the latest, and a test the current settings; the call says which; the widget shows its name", async () => {
    const pinned = (await createSite({ agentId, agentVersion: 1 }).expect(201)).body;
    expect(pinned.agentVersion).toBe(1);
    const unpinned = (await createSite({ agentId }).expect(201)).body;
    expect(unpinned.agentVersion).toBeNull();

    const onPinned = await session(pinned.siteKey);
    expect(await promptOf(onPinned)).toContain('PROMPT-ONE');
    expect(await promptOf(await session(unpinned.siteKey))).toContain('PROMPT-TWO');
    const test = (await context.as(owner).post(`/agents/${agentId}/conversations`).send({ test: true }).expect(201)).body;
    expect(await promptOf(test)).toContain('PROMPT-THREE');

    await context.http.post(`/conversations/${onPinned.conversationId}/end`).set(bearer(onPinned.token)).expect(204);
    expect((await context.as(owner).get(`/calls/${onPinned.conversationId}`).expect(200)).body.agentVersion).toBe(1);
    expect((await context.http.get(`/widget/config/${pinned.siteKey}`).expect(200)).body.agentName).toBe('Asha');
    expect((await context.http.get(`/widget/config/${unpinned.siteKey}`).expect(200)).body.agentName).toBe('Meera');
  });

  it("speaks a conversation with its version's voice and language, not the agent's current ones", async () => {
    const speaking = (await context.as(owner).post('/agents').send({ name: 'Voice', voice: 'anushka', language: 'en-IN' }).expect(201)).body
      .id;
    await context.as(owner).post(`/agents/${speaking}/versions`).send({}).expect(201);
    await context.as(owner).patch(`/agents/${speaking}`).send({ voice: 'karun', language: 'hi-IN' }).expect(200);
    const site = (await createSite({ agentId: speaking, agentVersion: 1 }).expect(201)).body;
    const versions = context.app.get(AgentVersionsService);
    expect(await versions.speakerOf(owner.id, (await session(site.siteKey)).conversationId)).toEqual({
      voice: 'anushka',
      language: 'en-IN',
    });
    const test = (await context.as(owner).post(`/agents/${speaking}/conversations`).send({ test: true }).expect(201)).body;
    expect(await versions.speakerOf(owner.id, test.conversationId)).toEqual({ voice: 'karun', language: 'hi-IN' });
    expect(await versions.speakerOf(other.id, test.conversationId)).toBeUndefined(); // another account's: nothing
  });

  it('refuses a pin that is not a version of the agent (400 naming agentVersion), at its bounds, and saves nothing', async () => {
    const before = await database.query(`SELECT count(*)::int AS n FROM widget_sites`);
    for (const agentVersion of [3, 0, -1, 1.5, '1', true]) {
      const refused = await createSite({ agentId, agentVersion }).expect(400);
      expect(fieldsOf(refused)).toEqual(['agentVersion']);
    }
    expect((await createSite({ agentVersion: 1 }).expect(400)).body.message).toMatch(/agentVersion needs an agentId/);
    expect(await database.query(`SELECT count(*)::int AS n FROM widget_sites`)).toEqual(before);
    expect((await createSite({ agentId, agentVersion: 2 }).expect(201)).body.agentVersion).toBe(2);
  });

  it("keeps a pin unless changed; clears it with null or a new agent without one; another account's agent stays a 400", async () => {
    const site = (await createSite({ agentId, agentVersion: 1 }).expect(201)).body;
    const patch = (body: object, account = owner) => context.as(account).patch(`/widget/sites/${site.id}`).send(body);
    expect((await patch({ name: 'Shop 2' }).expect(200)).body.agentVersion).toBe(1);
    expect((await patch({ agentVersion: 2 }).expect(200)).body.agentVersion).toBe(2);
    expect(fieldsOf(await patch({ agentVersion: 3 }).expect(400))).toEqual(['agentVersion']);
    expect((await patch({ agentVersion: null }).expect(200)).body.agentVersion).toBeNull();
    await patch({ agentVersion: 1 }).expect(200);
    const another = (await context.as(owner).post('/agents').send({ name: 'Other' }).expect(201)).body.id;
    expect((await patch({ agentId: another }).expect(200)).body).toMatchObject({ agentId: another, agentVersion: null });
    expect(fieldsOf(await patch({ agentId, agentVersion: 5 }).expect(400))).toEqual(['agentVersion']);
    expect((await patch({ agentId, agentVersion: 1 }).expect(200)).body).toMatchObject({ agentId, agentVersion: 1 });
    // Another account can neither read nor change the site, nor pin its own site to this account's agent.
    await patch({ agentVersion: 2 }, other).expect(404);
    expect(fieldsOf(await createSite({ agentId, agentVersion: 1 }, other).expect(400))).toEqual(['agentId']);
    expect((await context.as(owner).get(`/widget/sites/${site.id}`).expect(200)).body.agentVersion).toBe(1);
  });

  it('clears a pin when the agent is deleted (in the database, by trigger)', async () => {
    const doomed = (await context.as(owner).post('/agents').send({ name: 'Doomed' }).expect(201)).body.id;
    await context.as(owner).post(`/agents/${doomed}/versions`).send({}).expect(201);
    const site = (await createSite({ agentId: doomed, agentVersion: 1 }).expect(201)).body;
    const number = await connectNumber(context, owner, twilio, { agentId: doomed, agentVersion: 1 });
    await context.as(owner).delete(`/agents/${doomed}`).expect(204);
    expect((await context.as(owner).get(`/widget/sites/${site.id}`).expect(200)).body).toMatchObject({ agentId: null, agentVersion: null });
    expect((await context.as(owner).get(`/phone-numbers/${number.phone.id}`).expect(200)).body).toMatchObject({
      agentId: null,
      agentVersion: null,
    });
    const stored = await database.query(
      `SELECT agent_version AS "pin" FROM widget_sites WHERE id = $1 UNION ALL SELECT agent_version FROM phone_numbers WHERE id = $2`,
      [site.id, number.phone.id],
    );
    expect(stored).toEqual([{ pin: null }, { pin: null }]);
  });

  it("runs a phone number's pinned version on its calls, in and out; a call placed with another agent runs that agent's latest", async () => {
    const connected = await connectNumber(context, owner, twilio, { agentId, agentVersion: 1 });
    expect(connected.phone.agentVersion).toBe(1);
    const versionOf = async (conversationId: string) =>
      (await database.query<{ v: number | null }[]>(`SELECT agent_version AS v FROM conversations WHERE id = $1`, [conversationId]))[0].v;

    const { call } = await twilio.dialIn(connected.carrierNumber, '+919876543210');
    const [inbound] = await database.query<{ id: string }[]>(`SELECT conversation_id AS id FROM phone_calls WHERE call_sid = $1`, [
      call.sid,
    ]);
    expect(await versionOf(inbound.id)).toBe(1);
    const placed = await context.as(owner).post(`/phone-numbers/${connected.phone.id}/calls`).send({ to: '+919800000011' }).expect(201);
    expect(await versionOf(placed.body.conversationId)).toBe(1);
    const another = (await context.as(owner).post('/agents').send({ name: 'Sales' }).expect(201)).body.id;
    await context.as(owner).post(`/agents/${another}/versions`).send({}).expect(201);
    const withAnother = await context
      .as(owner)
      .post(`/phone-numbers/${connected.phone.id}/calls`)
      .send({ to: '+919800000012', agentId: another })
      .expect(201);
    expect(await versionOf(withAnother.body.conversationId)).toBe(1); // that agent's latest (its only one), not the number's pin

    const patch = (body: object) => context.as(owner).patch(`/phone-numbers/${connected.phone.id}`).send(body);
    expect(fieldsOf(await patch({ agentVersion: 3 }).expect(400))).toEqual(['agentVersion']);
    expect((await patch({ agentVersion: 2 }).expect(200)).body.agentVersion).toBe(2);
    expect((await patch({ agentId: another }).expect(200)).body).toMatchObject({ agentId: another, agentVersion: null });
  });
});
