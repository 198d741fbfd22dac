import type { OpenAPIObject } from '@nestjs/swagger';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { codePointLength } from '../src/common/code-points';
import { loadConfig } from '../src/config/config';
import { generateOpenApiDocument } from '../src/openapi';
import { accountFingerprint, createTestContext, TestAccount, TestContext } from './helpers';
import { FakeTwilio } from './support/fake-twilio';
import { connectNumber, createAgent, telephonyOverrides } from './support/telephony';

/**
 * Every length limit of the API, at the limit and one past it, counted in code points as PostgreSQL counts
 * them, with text whose UTF-16 length or grapheme count differs from its code points. The limits come from
 * the OpenAPI document, so a new limited field without a row in TARGETS fails the first test.
 */

/** Text units whose code points are not what a naive count sees. */
const KINDS: Record<string, string> = {
  ascii: 'a',
  'astral (emoji)': '😀',
  'combining marks': 'e\u0301\u0323', // e + acute + dot below: 3 code points, 1 grapheme
  'variation selectors': 'a\uFE0F\u2764\uFE0E', // validator.js's isLength does not count U+FE0E/U+FE0F
  'ZWJ sequences': '👩\u200D💻', // 3 code points, 5 UTF-16 units, 1 grapheme
};

/** `count` code points made of `unit`, padded with ASCII (never white space at either end: names are trimmed). */
function textOf(unit: string, count: number): string {
  const repeated = unit.repeat(Math.floor(count / codePointLength(unit)));
  return repeated + 'b'.repeat(count - codePointLength(repeated));
}

/** An address of exactly `count` characters (64-character local part, then labels of at most 63). */
function emailOf(count: number): string {
  let domain = 'com';
  while (domain.length < count - 65) {
    const label = 'd'.repeat(Math.min(63, count - 65 - domain.length - 1));
    domain = label.length > 0 ? `${label}.${domain}` : `d${domain}`;
  }
  return `${'l'.repeat(64)}@${domain}`;
}

interface Limit {
  schema: string;
  field: string;
  min: number;
  max: number;
  /** A format or pattern restricts the characters: such a field is filled with what it allows. */
  restricted?: 'email' | 'pattern' | 'uri';
}

/** Limited fields that name an existing resource rather than store text: tested on their own below. */
const REFERENCES = ['StartWidgetSessionDto.siteKey'];

function limitsOf(document: OpenAPIObject): Limit[] {
  const schemas = (document.components?.schemas ?? {}) as Record<string, { properties?: Record<string, Record<string, unknown>> }>;
  return Object.entries(schemas).flatMap(([schema, { properties = {} }]) =>
    Object.entries(properties)
      .filter(([field, property]) => typeof property.maxLength === 'number' && !REFERENCES.includes(`${schema}.${field}`))
      .map(([field, property]) => ({
        schema,
        field,
        min: (property.minLength as number | undefined) ?? 0,
        max: property.maxLength as number,
        restricted:
          property.format === 'email'
            ? ('email' as const)
            : property.format === 'uri'
              ? ('uri' as const)
              : property.pattern
                ? ('pattern' as const)
                : undefined,
      })),
  );
}

/** How to write a field of a schema, and read back what was stored. */
interface Target {
  write(context: TestContext, account: TestAccount, field: string, value: string): Promise<Response>;
  read(context: TestContext, account: TestAccount, written: Response, field: string): Promise<unknown>;
}

/** A resource made once per account for the PATCH and nested targets. */
const parents = new Map<string, Promise<number>>();
const parent = (context: TestContext, account: TestAccount, path: string, body: object) => {
  const key = `${account.id} ${path}`;
  if (!parents.has(key))
    parents.set(
      key,
      context
        .as(account)
        .post(path)
        .send(body)
        .expect(201)
        .then((response) => response.body.id as number),
    );
  return parents.get(key)!;
};

/** The conversation of the account that the message target writes to (its id and bearer token). */
const conversations = new Map<number, Promise<{ conversationId: string; token: string }>>();
const conversation = (context: TestContext, account: TestAccount) => {
  if (!conversations.has(account.id)) {
    conversations.set(
      account.id,
      parent(context, account, '/agents', {}).then(
        async (agentId) => (await context.as(account).post(`/agents/${agentId}/conversations`).send({}).expect(201)).body,
      ),
    );
  }
  return conversations.get(account.id)!;
};

/** A conversation's stored visitor name or phone (not shown by any route until its call is recorded). */
const storedConversationField = async (context: TestContext, written: Response, field: string) =>
  (await context.app.get(DataSource).query(`SELECT name, phone FROM conversations WHERE id = $1`, [written.body.conversationId]))[0][field];

/** A widget site of the account whose agent answers, for POST /widget/sessions. */
const siteKeys = new Map<number, Promise<string>>();
const answeringSiteKey = (context: TestContext, account: TestAccount) => {
  if (!siteKeys.has(account.id)) {
    siteKeys.set(
      account.id,
      parent(context, account, '/agents', {}).then(
        async (agentId) =>
          (await context.as(account).post('/widget/sites').send({ name: 'Talking site', agentId }).expect(201)).body.siteKey,
      ),
    );
  }
  return siteKeys.get(account.id)!;
};

let toolSerial = 0;

/** The stand-in carrier the phone numbers are connected through (started with the context). */
let carrier: FakeTwilio;

/** A phone number of the account with an agent (made once per account), for the PATCH and the calls placed from it. */
const phoneNumbers = new Map<number, Promise<number>>();
const phoneNumber = (context: TestContext, account: TestAccount) => {
  if (!phoneNumbers.has(account.id)) {
    phoneNumbers.set(
      account.id,
      createAgent(context, account).then(async (agentId) => (await connectNumber(context, account, carrier, { agentId })).phone.id),
    );
  }
  return phoneNumbers.get(account.id)!;
};

/** A call's conversation's name, or its first message (the greeting): what a placed call keeps of its fields. */
const placedCallField = async (context: TestContext, written: Response, field: string) => {
  const database = context.app.get(DataSource);
  const id = written.body.conversationId as string;
  if (field === 'greeting')
    return (await database.query(`SELECT text FROM conversation_messages WHERE conversation_id = $1 AND seq = 0`, [id]))[0]?.text;
  return (await database.query(`SELECT name FROM conversations WHERE id = $1`, [id]))[0].name;
};

const TARGETS: Record<string, Target> = {
  CreatePhoneNumberDto: {
    // A number of a new carrier account each time: numbers are unique within the account.
    write: (context, account, field, value) => {
      const carrierAccount = carrier.addAccount();
      const number = carrier.addNumber(carrierAccount);
      return context
        .as(account)
        .post('/phone-numbers')
        .send({
          number: number.phoneNumber,
          twilioAccountSid: carrierAccount.sid,
          twilioAuthToken: carrierAccount.authToken,
          [field]: value,
        });
    },
    read: async (context, account, written, field) =>
      (await context.as(account).get(`/phone-numbers/${written.body.id}`).expect(200)).body[field],
  },
  UpdatePhoneNumberDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .patch(`/phone-numbers/${await phoneNumber(context, account)}`)
        .send({ [field]: value }),
    read: async (context, account, written, field) =>
      (await context.as(account).get(`/phone-numbers/${written.body.id}`).expect(200)).body[field],
  },
  PlaceCallDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .post(`/phone-numbers/${await phoneNumber(context, account)}/calls`)
        .send({ to: '+919876543210', [field]: value }),
    read: (context, account, written, field) => placedCallField(context, written, field),
  },
  CreateAgentDto: {
    write: (context, account, field, value) =>
      context
        .as(account)
        .post('/agents')
        .send({ [field]: value }),
    read: async (context, account, written, field) => (await context.as(account).get(`/agents/${written.body.id}`).expect(200)).body[field],
  },
  UpdateAgentDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .patch(`/agents/${await parent(context, account, '/agents', {})}`)
        .send({ [field]: value }),
    read: async (context, account, written, field) => (await context.as(account).get(`/agents/${written.body.id}`).expect(200)).body[field],
  },
  PublishVersionDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .post(`/agents/${await parent(context, account, '/agents', {})}/versions`)
        .send({ [field]: value }),
    read: async (context, account, written, field) =>
      (
        await context
          .as(account)
          .get(`/agents/${await parent(context, account, '/agents', {})}/versions/${written.body.version}`)
          .expect(200)
      ).body[field],
  },
  CreateKnowledgeBaseDto: {
    write: (context, account, field, value) =>
      context
        .as(account)
        .post('/knowledge-bases')
        .send({ [field]: value }),
    read: async (context, account, written, field) =>
      (await context.as(account).get(`/knowledge-bases/${written.body.id}`).expect(200)).body[field],
  },
  CreateSourceDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .post(`/knowledge-bases/${await parent(context, account, '/knowledge-bases', {})}/sources`)
        .send({ [field]: value }),
    read: async (context, account, written, field) => {
      const sources = (await context.as(account).get(`/knowledge-bases/${written.body.knowledgeBaseId}/sources`).expect(200)).body;
      return sources.find((source: { id: number }) => source.id === written.body.id)[field];
    },
  },
  // The multipart form of a file upload: its text fields beside a small text file.
  SourceUploadForm: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .post(`/knowledge-bases/${await parent(context, account, '/knowledge-bases', {})}/sources`)
        .field(field, value)
        .attach('file', Buffer.from('Opening hours: nine to six.'), 'hours.txt'),
    read: async (context, account, written, field) => {
      const sources = (await context.as(account).get(`/knowledge-bases/${written.body.knowledgeBaseId}/sources`).expect(200)).body;
      return sources.find((source: { id: number }) => source.id === written.body.id)[field];
    },
  },
  CreateCallDto: {
    write: (context, account, field, value) =>
      context
        .as(account)
        .post('/calls')
        .send({ [field]: value }),
    read: async (context, account, written, field) => (await context.as(account).get(`/calls/${written.body.id}`).expect(200)).body[field],
  },
  TranscriptTurnDto: {
    write: (context, account, field, value) =>
      context
        .as(account)
        .post('/calls')
        .send({ transcript: [{ speaker: 'user', text: 'hello', [field]: value }] }),
    read: async (context, account, written, field) =>
      (await context.as(account).get(`/calls/${written.body.id}`).expect(200)).body.transcript[0][field],
  },
  CreateWidgetSiteDto: {
    write: (context, account, field, value) =>
      context
        .as(account)
        .post('/widget/sites')
        .send({ name: 'Site', [field]: value }),
    read: async (context, account, written, field) =>
      (await context.as(account).get(`/widget/sites/${written.body.id}`).expect(200)).body[field],
  },
  CreateApiKeyDto: {
    write: (context, account, field, value) =>
      context
        .as(account)
        .post('/api-keys')
        .send({ [field]: value }),
    read: async (context, account, written, field) =>
      ((await context.as(account).get('/api-keys').expect(200)).body as Record<string, unknown>[]).find(
        (key) => key.id === written.body.id,
      )![field],
  },
  UpdateWidgetSiteDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .patch(`/widget/sites/${await parent(context, account, '/widget/sites', { name: 'Site' })}`)
        .send({ [field]: value }),
    read: async (context, account, written, field) =>
      (await context.as(account).get(`/widget/sites/${written.body.id}`).expect(200)).body[field],
  },
  CreateWebhookDto: {
    // A public address written as an IP literal: nothing to resolve, and nothing is delivered to it here.
    write: (context, account, field, value) =>
      context
        .as(account)
        .post('/webhooks')
        .send({ url: 'https://8.8.8.8/hook', events: ['call.deleted'], [field]: value }),
    read: async (context, account, written, field) =>
      (await context.as(account).get(`/webhooks/${written.body.id}`).expect(200)).body[field],
  },
  StartConversationDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .post(`/agents/${await parent(context, account, '/agents', {})}/conversations`)
        .send({ [field]: value }),
    read: (context, account, written, field) => storedConversationField(context, written, field),
  },
  StartWidgetSessionDto: {
    write: async (context, account, field, value) =>
      context.http
        .post('/widget/sessions')
        .set('Origin', 'https://shop.example.com')
        .send({ siteKey: await answeringSiteKey(context, account), [field]: value }),
    read: (context, account, written, field) => storedConversationField(context, written, field),
  },
  SendMessageDto: {
    // One conversation per account, started before the fingerprints (a refused message must change nothing).
    write: async (context, account, field, value) => {
      const { conversationId, token } = await conversation(context, account);
      return context.http
        .post(`/conversations/${conversationId}/messages`)
        .set('Authorization', `Bearer ${token}`)
        .send({ [field]: value });
    },
    read: async (context, account, written, field) => {
      const { conversationId, token } = await conversation(context, account);
      const { messages } = (await context.http.get(`/conversations/${conversationId}`).set('Authorization', `Bearer ${token}`).expect(200))
        .body;
      return (messages as { speaker: string; text: string }[]).filter((message) => message.speaker === 'user').at(-1)![field as 'text'];
    },
  },
  // A webhook tool of a name of its own each time (names are unique within the account), or of the name written: that
  // one is deleted once read, so that UpdateToolDto can give its tool the same name.
  CreateToolDto: {
    write: (context, account, field, value) =>
      context
        .as(account)
        .post('/tools')
        .send({ type: 'webhook', name: `limit_${++toolSerial}`, description: 'Limits.', url: 'https://8.8.8.8/tool', [field]: value }),
    read: async (context, account, written, field) => {
      const stored = (await context.as(account).get(`/tools/${written.body.id}`).expect(200)).body[field];
      if (field === 'name') await context.as(account).delete(`/tools/${written.body.id}`).expect(204);
      return stored;
    },
  },
  UpdateToolDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .patch(
          `/tools/${await parent(context, account, '/tools', { type: 'webhook', name: 'patched', description: 'Limits.', url: 'https://8.8.8.8/tool' })}`,
        )
        .send({ [field]: value }),
    read: async (context, account, written, field) => (await context.as(account).get(`/tools/${written.body.id}`).expect(200)).body[field],
  },
  UpdateWebhookDto: {
    write: async (context, account, field, value) =>
      context
        .as(account)
        .patch(`/webhooks/${await parent(context, account, '/webhooks', { url: 'https://8.8.8.8/hook', events: ['call.deleted'] })}`)
        .send({ [field]: value }),
    read: async (context, account, written, field) =>
      (await context.as(account).get(`/webhooks/${written.body.id}`).expect(200)).body[field],
  },
};

/** The values of `count` code points to try for a field: every kind, or what its format or pattern allows. */
function valuesOf(limit: Limit, count: number): [string, string][] {
  if (limit.restricted === 'email') return [['ascii', emailOf(count)]];
  if (limit.restricted === 'pattern') return [['digits', '1'.repeat(count)]]; // phone
  if (limit.restricted === 'uri') return [['url', `https://8.8.8.8/${'p'.repeat(Math.max(0, count - 16))}`]]; // a webhook's public address
  return Object.entries(KINDS).map(([kind, unit]) => [kind, textOf(unit, count)]);
}

/**
 * Two tests walk every limited field of the API (a few hundred requests each, more with every module): on two cores shared
 * with the rest of the suite they have passed the 30 s default (seen at load 5).
 */
jest.setTimeout(120_000);

describe('length limits, counted in code points as PostgreSQL counts them', () => {
  let context: TestContext;
  let account: TestAccount;
  let dataSource: DataSource;
  let limits: Limit[];

  beforeAll(async () => {
    limits = limitsOf(await generateOpenApiDocument(loadConfig({})));
    carrier = await FakeTwilio.start();
    // Calls placed at each limit stay in progress: the cap on phone calls is raised above their count.
    const telephony = telephonyOverrides(carrier);
    context = await createTestContext({ ...telephony, telephony: { ...telephony.telephony!, maxActiveCalls: 1_000 } });
    dataSource = context.app.get(DataSource);
    account = await context.createAccount();
    // The resources the targets write into, made before any fingerprint is taken.
    await Promise.all([conversation(context, account), answeringSiteKey(context, account), phoneNumber(context, account)]);
  });
  afterAll(async () => {
    await context.close();
    await carrier.close();
  });

  it('counts exactly as PostgreSQL char_length does', async () => {
    const samples = [...Object.values(KINDS), '', 'नमस्ते', '🏳️‍🌈', '\u{10FFFF}', 'a\u0300\u0301\u0302', '👨‍👩‍👧‍👦', 'ﷺ', '\uFE0F'.repeat(5)];
    const [row] = await dataSource.query(
      `SELECT array_agg(char_length(s) ORDER BY i) AS lengths FROM unnest($1::text[]) WITH ORDINALITY AS t(s, i)`,
      [samples],
    );
    expect(samples.map(codePointLength)).toEqual(row.lengths);
  });

  it('has a target for every limited field of the OpenAPI document', () => {
    expect(limits.length).toBeGreaterThan(20);
    expect([...new Set(limits.map((limit) => limit.schema))].sort()).toEqual(Object.keys(TARGETS).sort());
  });

  it('accepts every limited field at its limit, stored byte-exact', async () => {
    const failures: string[] = [];
    for (const limit of limits) {
      for (const [kind, value] of valuesOf(limit, limit.max)) {
        expect(codePointLength(value)).toBe(limit.max);
        const target = TARGETS[limit.schema];
        const written = await target.write(context, account, limit.field, value);
        if (written.status >= 300) {
          failures.push(
            `${limit.schema}.${limit.field} (${kind}, ${limit.max}): ${written.status} ${JSON.stringify(written.body).slice(0, 200)}`,
          );
          continue;
        }
        const stored = await target.read(context, account, written, limit.field);
        if (stored !== value) failures.push(`${limit.schema}.${limit.field} (${kind}): stored ${String(stored).slice(0, 40)}…`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('refuses every limited field one past its limit (and below its minimum) with a 400 naming it, changing nothing', async () => {
    const failures: string[] = [];
    for (const limit of limits) {
      const values = [...valuesOf(limit, limit.max + 1), ...(limit.min > 0 ? valuesOf(limit, limit.min - 1) : [])];
      for (const [kind, value] of values) {
        const before = await accountFingerprint(dataSource, account.id);
        const response = await TARGETS[limit.schema].write(context, account, limit.field, value);
        const field = limit.schema === 'TranscriptTurnDto' ? `transcript.0.${limit.field}` : limit.field;
        const named = response.body?.details?.some((detail: { field: string }) => detail.field === field);
        if (response.status !== 400 || !named) {
          failures.push(
            `${limit.schema}.${limit.field} (${kind}, ${codePointLength(value)}): ${response.status} ${JSON.stringify(response.body).slice(0, 200)}`,
          );
        }
        if ((await accountFingerprint(dataSource, account.id)) !== before)
          failures.push(`${limit.schema}.${limit.field} (${kind}): a refused write changed data`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('answers a site key at or past its limit that names no site with a 404 (the key is looked up before the body is validated)', async () => {
    const session = (siteKey: string) => context.http.post('/widget/sessions').set('Origin', 'https://shop.example.com').send({ siteKey });
    for (const siteKey of ['k'.repeat(101), '😀'.repeat(100), '😀'.repeat(101), 'e\u0301'.repeat(50)]) {
      expect((await session(siteKey).expect(404)).body.message).toBe('Unknown site key');
    }
  });

  describe('query parameters of GET /calls', () => {
    const parameters = (document: OpenAPIObject) =>
      ((document.paths['/calls'].get?.parameters ?? []) as { name: string; schema?: { maxLength?: number } }[]).filter(
        // `before` is an opaque cursor (base64url, at most 200 characters), refused whole when malformed (test/calls-paging.spec.ts).
        (parameter) => typeof parameter.schema?.maxLength === 'number' && parameter.name !== 'before',
      );

    it('accepts each text filter at its limit and refuses it one past, in every kind of text', async () => {
      const document = await generateOpenApiDocument(loadConfig({}));
      expect(
        parameters(document)
          .map((parameter) => parameter.name)
          .sort(),
      ).toEqual(['callStatus', 'search', 'status']);
      const failures: string[] = [];
      for (const { name, schema } of parameters(document)) {
        for (const [kind, unit] of Object.entries(KINDS)) {
          const atLimit = await context
            .as(account)
            .get('/calls')
            .query({ [name]: textOf(unit, schema!.maxLength!) });
          if (atLimit.status !== 200) failures.push(`${name} (${kind}) at the limit: ${atLimit.status}`);
          const past = await context
            .as(account)
            .get('/calls')
            .query({ [name]: textOf(unit, schema!.maxLength! + 1) });
          if (past.status !== 400 || past.body.details?.[0]?.field !== name)
            failures.push(`${name} (${kind}) past the limit: ${past.status}`);
        }
      }
      expect(failures).toEqual([]);
    });
  });

  describe('knowledge-base source content (its limit depends on the type)', () => {
    it.each(Object.entries(KINDS))('takes a text source of 500,000 code points of %s, refuses 500,001', async (_, unit) => {
      const kb = await parent(context, account, '/knowledge-bases', {});
      const content = textOf(unit, 500_000);
      const created = await context.as(account).post(`/knowledge-bases/${kb}/sources`).send({ content }).expect(201);
      expect(created.body.content === content).toBe(true);
      const refused = await context
        .as(account)
        .post(`/knowledge-bases/${kb}/sources`)
        .send({ content: textOf(unit, 500_001) })
        .expect(400);
      expect(refused.body.details).toEqual([{ field: 'content', message: expect.any(String) }]);
    });
  });
});
