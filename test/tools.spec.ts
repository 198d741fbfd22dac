import { createTestContext, TestAccount, TestContext } from './helpers';

/**
 * The tools (contract section 18): the three types and their fields, every limit at its edge and one past it,
 * unique names, secrets shown once and rotated, and agents' `toolIds`. Calling the tools: tools-calls.spec.ts.
 */

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

/** A public address written as an IP literal: nothing to resolve, and nothing is sent to it here. */
const PUBLIC_URL = 'https://8.8.8.8/tools/book-table';

/** A schema of exactly `bytes` bytes as compact JSON. */
function schemaOf(bytes: number): object {
  const base = { type: 'object', description: '' };
  const padding = bytes - Buffer.byteLength(JSON.stringify(base));
  return { type: 'object', description: 'é'.repeat(Math.floor(padding / 2)) + 'a'.repeat(padding % 2) };
}

describe('tools', () => {
  let context: TestContext;
  let owner: TestAccount;
  let other: TestAccount;
  let serial = 0;

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    other = await context.createAccount();
  });
  afterAll(() => context.close());

  const uniqueName = () => `tool_${++serial}`;
  const webhookBody = (fields: object = {}) => ({
    type: 'webhook',
    name: uniqueName(),
    description: 'Books a table.',
    url: PUBLIC_URL,
    ...fields,
  });
  const create = (body: object, account = owner) => context.as(account).post('/tools').send(body);
  const createTool = async (body: object = webhookBody(), account = owner) => (await create(body, account).expect(201)).body;
  const getTool = async (id: number, account = owner) => (await context.as(account).get(`/tools/${id}`).expect(200)).body;
  /** The fields a 400 names, each once. */
  const refusal = async (body: object) => {
    const response = await create(body).expect(400);
    return [...new Set((response.body.details as { field: string }[]).map((detail) => detail.field))];
  };

  describe('create', () => {
    it('makes a webhook tool with its defaults, and shows its secret this once', async () => {
      const created = await createTool({ type: 'webhook', name: 'book_table', description: 'Books a table.', url: PUBLIC_URL });
      expect(created).toEqual({
        id: expect.any(Number),
        type: 'webhook',
        name: 'book_table',
        description: 'Books a table.',
        parameters: { type: 'object', properties: {} },
        url: PUBLIC_URL,
        timeoutSeconds: 10,
        speakWhileRunning: '',
        number: null,
        secret: expect.stringMatching(SECRET),
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
      });
      const { secret, ...shown } = created;
      expect(await getTool(created.id)).toEqual(shown);
      const listed = (await context.as(owner).get('/tools').expect(200)).body as { id: number }[];
      expect(listed.find((tool) => tool.id === created.id)).toEqual(shown);
      expect(JSON.stringify(listed)).not.toContain(secret);
    });

    it('keeps the schema as written, keys in their order', async () => {
      const parameters = {
        type: 'object',
        properties: { time: { type: 'string' }, people: { type: 'integer', minimum: 1 }, area: { enum: ['inside', 'terrace'] } },
        required: ['time', 'people'],
      };
      const created = await createTool(webhookBody({ parameters, timeoutSeconds: 3, speakWhileRunning: 'One moment.' }));
      const read = await context.as(owner).get(`/tools/${created.id}`).expect(200);
      expect(read.text).toContain(JSON.stringify(parameters));
      expect(read.body).toMatchObject({ parameters, timeoutSeconds: 3, speakWhileRunning: 'One moment.' });
    });

    it('makes an end_call tool with its defaults, and no secret', async () => {
      const created = await createTool({ type: 'end_call' }, other);
      expect(created).toMatchObject({
        type: 'end_call',
        name: 'end_call',
        description: '',
        parameters: null,
        url: null,
        timeoutSeconds: null,
        speakWhileRunning: null,
        number: null,
        secret: null,
      });
    });

    it('makes a transfer_call tool with its number', async () => {
      const created = await createTool({ type: 'transfer_call', name: 'transfer_to_sales', description: 'Sales', number: '+919876543210' });
      expect(created).toMatchObject({ type: 'transfer_call', name: 'transfer_to_sales', number: '+919876543210', url: null, secret: null });
    });

    it('refuses a missing or unknown type, and the fields a type needs or does not take, naming them', async () => {
      expect(await refusal({ name: uniqueName(), description: 'x', url: PUBLIC_URL })).toEqual(['type']);
      expect(await refusal({ type: 'mcp', name: uniqueName() })).toEqual(['type']);
      expect(await refusal({ type: 'webhook' })).toEqual(['name', 'description', 'url']);
      expect(await refusal({ type: 'transfer_call', name: uniqueName(), description: 'x' })).toEqual(['number']);
      expect(await refusal({ type: 'end_call', url: PUBLIC_URL, timeoutSeconds: 5 })).toEqual(['url', 'timeoutSeconds']);
      expect(await refusal(webhookBody({ number: '+919876543210' }))).toEqual(['number']);
      expect(
        await refusal({ type: 'transfer_call', name: uniqueName(), description: 'x', number: '+919876543210', parameters: {} }),
      ).toEqual(['parameters']);
      const response = await create({ type: 'end_call', speakWhileRunning: 'Bye' }).expect(400);
      expect(response.body.message).toBe('speakWhileRunning applies only to webhook tools, not to end_call ones');
    });
  });

  describe('limits, at the edge and one past it', () => {
    it('name: 1–64 letters, digits, _ and -', async () => {
      await createTool(webhookBody({ name: 'a'.repeat(64) }));
      await createTool(webhookBody({ name: 'B' }));
      await createTool(webhookBody({ name: 'with-dash_and_9' }));
      for (const name of ['a'.repeat(65), '', 'two words', 'naïve', 'dot.ted', 'emoji😀']) {
        expect(await refusal(webhookBody({ name }))).toEqual(['name']);
      }
    });

    it('name: unique within the account (409 on create and rename), case-sensitive, free in another account', async () => {
      const first = await createTool(webhookBody({ name: 'lookup_order' }));
      const clash = await create(webhookBody({ name: 'lookup_order' })).expect(409);
      expect(clash.body.message).toBe('This account already has a tool named lookup_order: tool names are unique within an account');
      await createTool(webhookBody({ name: 'Lookup_Order' }));
      await createTool(webhookBody({ name: 'lookup_order' }), other);
      const second = await createTool(webhookBody());
      await context.as(owner).patch(`/tools/${second.id}`).send({ name: 'lookup_order' }).expect(409);
      expect((await getTool(second.id)).name).toBe(second.name);
      // Renaming a tool to its own name is no clash.
      await context.as(owner).patch(`/tools/${first.id}`).send({ name: 'lookup_order' }).expect(200);
    });

    it('description: 1–1,000 characters after trimming, counted as PostgreSQL counts them', async () => {
      const longest = '😀'.repeat(1000);
      expect((await createTool(webhookBody({ description: longest }))).description).toBe(longest);
      expect((await createTool(webhookBody({ description: '  x  ' }))).description).toBe('x');
      for (const description of ['😀'.repeat(1001), '', '   '])
        expect(await refusal(webhookBody({ description }))).toEqual(['description']);
    });

    it('parameters: an object JSON Schema of at most 16 KiB as compact JSON', async () => {
      expect(Buffer.byteLength(JSON.stringify(schemaOf(16_384)))).toBe(16_384);
      await createTool(webhookBody({ parameters: schemaOf(16_384) }));
      const tooLarge = await create(webhookBody({ parameters: schemaOf(16_385) })).expect(400);
      expect(tooLarge.body.details).toEqual([
        { field: 'parameters', message: 'parameters must be at most 16 KiB (16,384 bytes) as compact JSON (16385 here)' },
      ]);
      const refused: object[] = [
        [],
        { type: 'string' },
        { properties: {} },
        { type: 'object', properties: { people: { type: 'integr' } } },
        { type: 'object', required: 'people' },
        { type: 'object', properties: { people: { $ref: 'https://schemas.example.com/people.json' } } },
        { type: 'object', properties: { code: { type: 'string', pattern: '^(?=a)b' } } },
        { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' },
      ];
      for (const parameters of refused) expect(await refusal(webhookBody({ parameters }))).toEqual(['parameters']);
      const accepted: object[] = [
        { type: 'object' },
        {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          $defs: { n: { type: 'integer' } },
          properties: { n: { $ref: '#/$defs/n' } },
        },
        { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}-\\d+$', format: 'anything' } } },
      ];
      for (const parameters of accepted) await createTool(webhookBody({ parameters }));
    });

    it('url: under the webhooks rules (https, no private address, no credentials, at most 2,000 characters)', async () => {
      const longest = `https://8.8.8.8/${'p'.repeat(2000 - 'https://8.8.8.8/'.length)}`;
      expect((await createTool(webhookBody({ url: longest }))).url).toBe(longest);
      const refused = [
        `${longest}p`,
        'http://8.8.8.8/tool',
        'https://127.0.0.1/tool',
        'https://10.1.2.3/tool',
        'https://169.254.169.254/',
        'https://user:pw@8.8.8.8/',
        'not a url',
      ];
      for (const url of refused) expect(await refusal(webhookBody({ url }))).toEqual(['url']);
      // A name that does not resolve now may later: accepted, checked again at each call.
      await createTool(webhookBody({ url: 'https://tools.invalid/book' }));
    });

    it('timeoutSeconds: an integer from 1 to 60', async () => {
      expect((await createTool(webhookBody({ timeoutSeconds: 1 }))).timeoutSeconds).toBe(1);
      expect((await createTool(webhookBody({ timeoutSeconds: 60 }))).timeoutSeconds).toBe(60);
      for (const timeoutSeconds of [0, 61, 1.5, '10', null])
        expect(await refusal(webhookBody({ timeoutSeconds }))).toEqual(['timeoutSeconds']);
    });

    it('speakWhileRunning: at most 200 characters', async () => {
      expect((await createTool(webhookBody({ speakWhileRunning: '😀'.repeat(200) }))).speakWhileRunning).toBe('😀'.repeat(200));
      expect(await refusal(webhookBody({ speakWhileRunning: '😀'.repeat(201) }))).toEqual(['speakWhileRunning']);
    });

    it('number: E.164, + and 8 to 15 digits', async () => {
      const transfer = (number: unknown) => ({ type: 'transfer_call', name: uniqueName(), description: 'Sales', number });
      await createTool(transfer('+12345678'));
      await createTool(transfer('+123456789012345'));
      for (const number of ['+1234567', '+1234567890123456', '919876543210', '+91 98765 43210']) {
        expect(await refusal(transfer(number))).toEqual(['number']);
      }
    });
  });

  describe('update, delete, rotate', () => {
    it('PATCH changes the fields given, keeps the others, and refuses a field of another type or a new type', async () => {
      const tool = await createTool(webhookBody({ speakWhileRunning: 'Wait' }));
      const changed = (
        await context
          .as(owner)
          .patch(`/tools/${tool.id}`)
          .send({
            description: 'Books a table for up to 8.',
            timeoutSeconds: 20,
            parameters: { type: 'object', properties: { n: { type: 'integer' } } },
          })
          .expect(200)
      ).body;
      expect(changed).toMatchObject({
        name: tool.name,
        description: 'Books a table for up to 8.',
        timeoutSeconds: 20,
        speakWhileRunning: 'Wait',
        url: PUBLIC_URL,
      });
      expect(changed.updatedAt >= tool.updatedAt).toBe(true);
      expect(await getTool(tool.id)).toEqual(changed);
      expect((await context.as(owner).patch(`/tools/${tool.id}`).send({}).expect(200)).body).toEqual(changed);
      const wrongField = await context.as(owner).patch(`/tools/${tool.id}`).send({ number: '+919876543210' }).expect(400);
      expect(wrongField.body.details).toEqual([
        { field: 'number', message: 'number applies only to transfer_call tools, not to webhook ones' },
      ]);
      const newType = await context.as(owner).patch(`/tools/${tool.id}`).send({ type: 'end_call' }).expect(400);
      expect(newType.body.details).toEqual([{ field: 'type', message: 'property type should not exist' }]);
      await context.as(owner).patch(`/tools/${tool.id}`).send({ url: 'https://192.168.1.1/' }).expect(400);
      await context
        .as(owner)
        .patch(`/tools/${tool.id}`)
        .send({ parameters: { type: 'array' } })
        .expect(400);
      expect(await getTool(tool.id)).toEqual(changed);
      await context.as(owner).patch('/tools/2000000000').send({ description: 'x' }).expect(404);
    });

    it('DELETE removes the tool (204, then 404)', async () => {
      const tool = await createTool();
      await context.as(owner).delete(`/tools/${tool.id}`).expect(204);
      await context.as(owner).get(`/tools/${tool.id}`).expect(404);
      await context.as(owner).delete(`/tools/${tool.id}`).expect(404);
    });

    it('rotate-secret answers a new secret once; only a webhook tool has one', async () => {
      const tool = await createTool();
      const rotated = (await context.as(owner).post(`/tools/${tool.id}/rotate-secret`).expect(200)).body;
      expect(rotated).toEqual({ secret: expect.stringMatching(SECRET) });
      expect(rotated.secret).not.toBe(tool.secret);
      const endCall = await createTool({ type: 'end_call', name: uniqueName() });
      const conflict = await context.as(owner).post(`/tools/${endCall.id}/rotate-secret`).expect(409);
      expect(conflict.body.message).toBe(`Tool ${endCall.id} is a end_call tool: it sends no requests, so it has no signing secret`);
      await context.as(owner).post(`/tools/${tool.id}/rotate-secret`).send({ bogus: 1 }).expect(400);
      await context.as(owner).post('/tools/2000000000/rotate-secret').expect(404);
    });

    it('another account can neither read, list, change, rotate nor delete a tool', async () => {
      const tool = await createTool();
      const intruder = context.as(other);
      await intruder.get(`/tools/${tool.id}`).expect(404);
      await intruder.patch(`/tools/${tool.id}`).send({ description: 'Mine now' }).expect(404);
      await intruder.post(`/tools/${tool.id}/rotate-secret`).expect(404);
      await intruder.delete(`/tools/${tool.id}`).expect(404);
      const listed = (await intruder.get('/tools').expect(200)).body as { id: number }[];
      expect(listed.some((listedTool) => listedTool.id === tool.id)).toBe(false);
      const { secret, ...shown } = tool;
      expect(await getTool(tool.id)).toEqual(shown);
    });
  });

  describe("agents' toolIds", () => {
    const createAgent = async (body: object, account = owner) => (await context.as(account).post('/agents').send(body).expect(201)).body;

    it('defaults to [], takes tools of the account (duplicates once, ascending) and is replaced by PATCH', async () => {
      expect((await createAgent({})).toolIds).toEqual([]);
      const [first, second] = [await createTool(), await createTool({ type: 'end_call', name: uniqueName() })];
      const agent = await createAgent({ toolIds: [second.id, first.id, second.id] });
      expect(agent.toolIds).toEqual([first.id, second.id]);
      expect((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body).toEqual(agent);
      const replaced = (
        await context
          .as(owner)
          .patch(`/agents/${agent.id}`)
          .send({ toolIds: [second.id] })
          .expect(200)
      ).body;
      expect(replaced.toolIds).toEqual([second.id]);
      expect((await context.as(owner).patch(`/agents/${agent.id}`).send({ name: 'Renamed' }).expect(200)).body.toolIds).toEqual([
        second.id,
      ]);
      expect((await context.as(owner).patch(`/agents/${agent.id}`).send({ toolIds: [] }).expect(200)).body.toolIds).toEqual([]);
    });

    it('takes at most 20', async () => {
      const tools = await Promise.all(Array.from({ length: 21 }, () => createTool()));
      const ids = tools.map((tool) => tool.id as number).sort((a, b) => a - b);
      expect((await createAgent({ toolIds: ids.slice(0, 20) })).toolIds).toEqual(ids.slice(0, 20));
      const refused = await context.as(owner).post('/agents').send({ toolIds: ids }).expect(400);
      expect(refused.body.details).toEqual([{ field: 'toolIds', message: 'toolIds must contain no more than 20 elements' }]);
    });

    it("refuses another account's tool, or an unknown one, with a 400 naming them, and changes nothing", async () => {
      const own = await createTool();
      const foreign = await createTool(webhookBody(), other);
      const agent = await createAgent({ toolIds: [own.id] });
      const refused = await context
        .as(owner)
        .patch(`/agents/${agent.id}`)
        .send({ name: 'Changed', toolIds: [own.id, foreign.id, 2_000_000_000] })
        .expect(400);
      expect(refused.body.details).toEqual([
        { field: 'toolIds', message: `toolIds ${foreign.id}, 2000000000 are not tools of this account` },
      ]);
      expect((await context.as(owner).get(`/agents/${agent.id}`).expect(200)).body).toEqual(agent);
      const onCreate = await context
        .as(owner)
        .post('/agents')
        .send({ toolIds: [foreign.id] })
        .expect(400);
      expect(onCreate.body.message).toBe(`toolIds ${foreign.id} is not a tool of this account`);
    });

    it('loses a tool that is deleted, keeping the others', async () => {
      const [kept, deleted] = [await createTool(), await createTool()];
      const agents = [await createAgent({ toolIds: [kept.id, deleted.id] }), await createAgent({ toolIds: [deleted.id] })];
      await context.as(owner).delete(`/tools/${deleted.id}`).expect(204);
      expect((await context.as(owner).get(`/agents/${agents[0].id}`).expect(200)).body.toolIds).toEqual([kept.id]);
      expect((await context.as(owner).get(`/agents/${agents[1].id}`).expect(200)).body.toolIds).toEqual([]);
    });
  });
});
