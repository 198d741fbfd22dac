import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeListCursor } from '../src/calls/list-cursor';
import { PUBLIC_ROUTES, registeredRoutes } from './routes';
import { createTestContext, TestAccount, TestContext } from './helpers';
import { FakeTwilio } from './support/fake-twilio';
import { connectNumber, telephonyOverrides } from './support/telephony';

/**
 * The cross-account matrix, generated from the registered routes: account B, with A's ids, gets a 404 on
 * every route that takes an id, and A's data is unchanged; no list shows B any of A's rows, whatever the
 * filters. A route with an id that has no fixture below fails the test, so a new route cannot go uncovered.
 */

/** What a fixture created for account A: the path parameters, and a way to read A's state back. */
interface Fixture {
  params: Record<string, string>;
  snapshot(): Promise<unknown>;
}

type FixtureFactory = (context: TestContext, owner: TestAccount, marker: string) => Promise<Fixture>;

async function body(response: Promise<{ status: number; body: unknown }>): Promise<unknown> {
  const { status, body: content } = await response;
  return { status, content };
}

const agentFixture: FixtureFactory = async (context, owner, marker) => {
  const agent = (await context.as(owner).post('/agents').send({ name: marker }).expect(201)).body;
  return { params: { agentId: String(agent.id) }, snapshot: () => body(context.as(owner).get(`/agents/${agent.id}`)) };
};

/** An agent of A's with a published version, then a change (so that a restore by B would show). */
const agentVersionFixture: FixtureFactory = async (context, owner, marker) => {
  const agent = (await context.as(owner).post('/agents').send({ name: marker, systemPrompt: marker }).expect(201)).body;
  await context.as(owner).post(`/agents/${agent.id}/versions`).send({ description: marker }).expect(201);
  await context
    .as(owner)
    .patch(`/agents/${agent.id}`)
    .send({ systemPrompt: `${marker} changed` })
    .expect(200);
  return {
    params: { agentId: String(agent.id), version: '1' },
    snapshot: async () => [
      await body(context.as(owner).get(`/agents/${agent.id}`)),
      await body(context.as(owner).get(`/agents/${agent.id}/versions`)),
    ],
  };
};

const knowledgeBaseFixture: FixtureFactory = async (context, owner, marker) => {
  const kb = (await context.as(owner).post('/knowledge-bases').send({ name: marker }).expect(201)).body;
  const source = (await context.as(owner).post(`/knowledge-bases/${kb.id}/sources`).send({ name: marker, content: marker }).expect(201))
    .body;
  return {
    params: { kbId: String(kb.id), sourceId: String(source.id) },
    snapshot: () => body(context.as(owner).get(`/knowledge-bases/${kb.id}`)),
  };
};

/** A url source, once its fetch has ended (it is refused: loopback), so that its snapshot holds still. */
const urlSourceFixture: FixtureFactory = async (context, owner, marker) => {
  const kb = (await context.as(owner).post('/knowledge-bases').send({ name: marker }).expect(201)).body;
  const url = `http://127.0.0.1:9/${marker}`;
  const source = (
    await context.as(owner).post(`/knowledge-bases/${kb.id}/sources`).send({ name: marker, type: 'url', content: url }).expect(201)
  ).body;
  while ((await context.as(owner).get(`/knowledge-bases/${kb.id}`).expect(200)).body.sources[0].status === 'pending') await sleep(20);
  return {
    params: { kbId: String(kb.id), sourceId: String(source.id) },
    snapshot: () => body(context.as(owner).get(`/knowledge-bases/${kb.id}`)),
  };
};

const callFixture: FixtureFactory = async (context, owner, marker) => {
  const agent = (await context.as(owner).post('/agents').send({ name: marker }).expect(201)).body;
  const call = (
    await context
      .as(owner)
      .post('/calls')
      .send({
        name: marker,
        phone: '+91-98765-43210',
        status: 'qualified',
        agentId: agent.id,
        durationSeconds: 95,
        transcript: [{ speaker: 'user', text: marker }],
      })
      .expect(201)
  ).body;
  return {
    params: { callId: call.id, agentId: String(agent.id) },
    snapshot: async () => [
      await body(context.as(owner).get(`/calls/${call.id}`)),
      await body(context.as(owner).get(`/calls/${call.id}/recording`)),
    ],
  };
};

/** A call with a recording; the snapshot reads the audio back (a playback URL is fresh each time, so not that). */
const recordingFixture: FixtureFactory = async (context, owner, marker) => {
  const { params } = await callFixture(context, owner, marker);
  await context.as(owner).put(`/calls/${params.callId}/recording`).set('Content-Type', 'audio/mpeg').send(Buffer.from(marker)).expect(204);
  const download = async () => {
    const response = await context
      .as(owner)
      .get(`/calls/${params.callId}/recording/download`)
      .buffer(true)
      .parse((res, done) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('end', () => done(null, Buffer.concat(parts).toString('hex')));
      });
    return { status: response.status, audio: response.body };
  };
  return { params, snapshot: async () => [await body(context.as(owner).get(`/calls/${params.callId}`)), await download()] };
};

/** A published agent of A's (version 1), which a site or number of A's may pin. */
const publishedAgent = async (context: TestContext, owner: TestAccount, marker: string) => {
  const agent = (await context.as(owner).post('/agents').send({ name: marker }).expect(201)).body;
  await context.as(owner).post(`/agents/${agent.id}/versions`).send({}).expect(201);
  return agent as { id: number };
};

/** A site of A's, answered by a published agent of A's and pinned to its version 1. */
const widgetSiteFixture: FixtureFactory = async (context, owner, marker) => {
  const agent = await publishedAgent(context, owner, marker);
  const site = (await context.as(owner).post('/widget/sites').send({ name: marker, agentId: agent.id, agentVersion: 1 }).expect(201)).body;
  return { params: { siteId: String(site.id) }, snapshot: () => body(context.as(owner).get(`/widget/sites/${site.id}`)) };
};

/**
 * A webhook with one delivery (a ping). The snapshot leaves out what the delivery's own attempts change (its
 * target does not resolve, so it is being retried meanwhile): only B's requests must not change A's data.
 */
const webhookFixture: FixtureFactory = async (context, owner, marker) => {
  const webhook = (
    await context
      .as(owner)
      .post('/webhooks')
      .send({ url: `https://${marker}.invalid/hooks`, events: ['call.created'], description: marker })
      .expect(201)
  ).body;
  const delivery = (await context.as(owner).post(`/webhooks/${webhook.id}/test`).expect(202)).body;
  const deliveries = async () => {
    const { status, body: rows } = await context.as(owner).get(`/webhooks/${webhook.id}/deliveries`);
    if (!Array.isArray(rows)) return { status, rows };
    return {
      status,
      rows: (rows as { id: string; eventId: string; event: string }[]).map(({ id, eventId, event }) => ({ id, eventId, event })),
    };
  };
  return {
    params: { webhookId: String(webhook.id), deliveryId: delivery.id },
    snapshot: async () => [await body(context.as(owner).get(`/webhooks/${webhook.id}`)), await deliveries()],
  };
};

/** A webhook tool of A's, on an agent of A's (B's requests must change neither). */
const toolFixture: FixtureFactory = async (context, owner, marker) => {
  const tool = (
    await context
      .as(owner)
      .post('/tools')
      .send({
        type: 'webhook',
        name: `tool_${marker.replace(/-/g, '_').slice(-50)}`,
        description: marker,
        url: `https://${marker}.invalid/tool`,
      })
      .expect(201)
  ).body;
  const agent = (
    await context
      .as(owner)
      .post('/agents')
      .send({ name: marker, toolIds: [tool.id] })
      .expect(201)
  ).body;
  return {
    params: { toolId: String(tool.id) },
    snapshot: async () => [
      await body(context.as(owner).get(`/tools/${tool.id}`)),
      await body(context.as(owner).get(`/agents/${agent.id}`)),
    ],
  };
};

/** A second key of A's; the snapshot leaves out lastUsedAt, which A's own reads may write (once a minute). */
const apiKeyFixture: FixtureFactory = async (context, owner, marker) => {
  const key = (await context.as(owner).post('/api-keys').send({ name: marker }).expect(201)).body;
  return {
    params: { keyId: String(key.id) },
    snapshot: async () => {
      const { status, body: keys } = await context.as(owner).get('/api-keys');
      return {
        status,
        key: (keys as { id: number; lastUsedAt?: string }[])
          .filter((listed) => listed.id === key.id)
          .map(({ lastUsedAt, ...rest }) => rest),
      };
    },
  };
};

/** A conversation of A's, with its token; the snapshot reads it back with that token. */
const conversationFixture: FixtureFactory = async (context, owner, marker) => {
  const agent = (await context.as(owner).post('/agents').send({ name: marker }).expect(201)).body;
  const started = (await context.as(owner).post(`/agents/${agent.id}/conversations`).send({ name: marker }).expect(201)).body;
  await context.http
    .post(`/conversations/${started.conversationId}/messages`)
    .set('Authorization', `Bearer ${started.token}`)
    .send({ text: marker })
    .expect(200);
  return {
    params: { conversationId: started.conversationId, agentId: String(agent.id) },
    snapshot: () => body(context.http.get(`/conversations/${started.conversationId}`).set('Authorization', `Bearer ${started.token}`)),
  };
};

/** The stand-in carrier the phone numbers are connected through (started with the context). */
let carrier: FakeTwilio;

/** A phone number of A's (its label the marker); the snapshot reads it back, with what the carrier was told and asked. */
const phoneNumberFixture: FixtureFactory = async (context, owner, marker) => {
  const agent = await publishedAgent(context, owner, marker);
  const { phone, carrierNumber } = await connectNumber(context, owner, carrier, { label: marker, agentId: agent.id, agentVersion: 1 });
  return {
    params: { phoneNumberId: String(phone.id), agentId: String(agent.id) },
    snapshot: async () => [
      await body(context.as(owner).get(`/phone-numbers/${phone.id}`)),
      carrier.number(carrierNumber.phoneNumber),
      carrier.requestsTo('POST', /Calls\.json$/).length,
    ],
  };
};

/** Every route path with parameters → how to create the resource it names, for account A. */
/**
 * Routes whose id names an entry of the voice catalog, the same for every account (no account's row): which
 * voices an account may use is tested with them (test/voice-calls.spec.ts, the preview's 403).
 */
const CATALOG_ROUTES = ['/voices/:voiceId/preview'];

export const FIXTURES: Record<string, FixtureFactory> = {
  '/agents/:agentId': agentFixture,
  '/agents/:agentId/conversations': agentFixture,
  '/agents/:agentId/versions': agentVersionFixture,
  '/agents/:agentId/versions/:version': agentVersionFixture,
  '/agents/:agentId/versions/:version/restore': agentVersionFixture,
  '/knowledge-bases/:kbId': knowledgeBaseFixture,
  '/knowledge-bases/:kbId/sources': knowledgeBaseFixture,
  '/knowledge-bases/:kbId/sources/:sourceId': knowledgeBaseFixture,
  '/knowledge-bases/:kbId/sources/:sourceId/refresh': urlSourceFixture,
  '/knowledge-bases/:kbId/search': knowledgeBaseFixture,
  '/calls/:callId': callFixture,
  '/calls/:callId/recording': recordingFixture,
  '/calls/:callId/recording/download': recordingFixture,
  '/widget/sites/:siteId': widgetSiteFixture,
  '/widget/sites/:siteId/rotate-key': widgetSiteFixture,
  '/webhooks/:webhookId': webhookFixture,
  '/webhooks/:webhookId/rotate-secret': webhookFixture,
  '/webhooks/:webhookId/test': webhookFixture,
  '/webhooks/:webhookId/deliveries': webhookFixture,
  '/webhooks/:webhookId/deliveries/:deliveryId/retry': webhookFixture,
  '/api-keys/:keyId': apiKeyFixture,
  '/tools/:toolId': toolFixture,
  '/tools/:toolId/rotate-secret': toolFixture,
  '/phone-numbers/:phoneNumberId': phoneNumberFixture,
  '/phone-numbers/:phoneNumberId/calls': phoneNumberFixture,
};

/** The filters of GET /calls and GET /calls/export, built from A's resources. */
const callFilters = (marker: string, params: Record<string, string>) => [
  `?search=${marker}`,
  '?search=98765',
  '?search=%2B91-98765-43210',
  '?status=qualified',
  '?days=3650',
  ...(params.agentId ? [`?agentId=${params.agentId}`] : []),
];

/** A cursor made of one of A's calls' ids (cursors carry no account: B still sees only B's calls). */
const cursorAt = (callId: string) => encodeListCursor({ callDate: new Date(Date.now() + 86_400_000), id: callId });

/** Today, as GET /usage takes it. */
const today = () => new Date().toISOString().slice(0, 10);

/** The public routes of a conversation (its bearer token instead of an API key) → the fixture of one of A's. */
const BEARER_FIXTURES: Record<string, FixtureFactory> = {
  '/conversations/:conversationId': conversationFixture,
  '/conversations/:conversationId/messages': conversationFixture,
  '/conversations/:conversationId/end': conversationFixture,
};

/**
 * The voice socket's route, public like the bearer routes but without a bearer token: over HTTP it is a 426 whatever
 * the id and the credentials (test/voice-socket-route.spec.ts), and its token is checked in the socket's first frame,
 * where another conversation's closes it with 4404 (test/voice-socket.spec.ts).
 */
const SOCKET_ROUTES = ['GET /conversations/:conversationId/voice'];

/** Extra query strings tried on list routes, built from A's resources (a filter must never widen the scope). */
const LIST_QUERIES: Record<string, (marker: string, params: Record<string, string>) => string[]> = {
  '/calls': (marker, params) => [
    ...callFilters(marker, params),
    '?limit=1000&days=3650',
    ...(params.callId ? [`?before=${cursorAt(params.callId)}`, `?limit=1&before=${cursorAt(params.callId)}&search=${marker}`] : []),
  ],
  '/calls/export': (marker, params) => [...callFilters(marker, params), '?format=ndjson', `?format=ndjson&search=${marker}`],
  '/usage': () => ['?groupBy=agent', `?groupBy=agent&from=${today()}&to=${today()}`, `?groupBy=day&from=${today()}&to=${today()}`],
};

/** Query strings a route needs to be valid when the caller owns the resource, so that only ownership can fail. */
const ROUTE_QUERIES: Record<string, (marker: string) => string> = {
  '/knowledge-bases/:kbId/search': (marker) => `?q=${marker}`,
};

/** The path parameters that hold integer ids (the others are UUIDs). */
const INTEGER_ID_PARAMS = ['version', 'agentId', 'kbId', 'sourceId', 'siteId', 'webhookId', 'keyId', 'phoneNumberId', 'toolId'];

/** Texts that JavaScript reads as the number `id` but that are not its decimal spelling: each names no resource. */
const otherSpellings = (id: number) => [
  `0${id}`,
  `${id}.0`,
  `0x${id.toString(16)}`,
  `0b${id.toString(2)}`,
  `${id}e0`,
  `+${id}`,
  `%20${id}`,
  `%09${id}`,
  `${id}%20`,
];

/**
 * Bodies that routes need beyond `{}` to be valid (a placed call needs its callee), or that reach further (a pin of
 * the version the fixture's agent has: the owner's would be a 200, so only ownership can refuse it).
 */
const ROUTE_BODIES: Record<string, object> = {
  'POST /phone-numbers/:phoneNumberId/calls': { to: '+919876543210' },
  'PATCH /widget/sites/:siteId': { agentVersion: 1 },
  'PATCH /phone-numbers/:phoneNumberId': { agentVersion: 1 },
};

/** A body each method accepts on a route when the caller owns the resource, so that only ownership can fail. */
function requestBody(method: string, path: string): object | undefined {
  return method === 'POST' || method === 'PATCH' || method === 'PUT' ? (ROUTE_BODIES[`${method} ${path}`] ?? {}) : undefined;
}

describe('cross-account matrix', () => {
  let context: TestContext;
  let owner: TestAccount;
  let intruder: TestAccount;
  const markers: string[] = [];
  const markerOf = new Map<string, string>();
  const fixtures = new Map<string, Fixture>();

  beforeAll(async () => {
    carrier = await FakeTwilio.start();
    context = await createTestContext(telephonyOverrides(carrier));
    owner = await context.createAccount();
    intruder = await context.createAccount();
    for (const [path, factory] of Object.entries(FIXTURES)) {
      const marker = `secret-${randomUUID()}`;
      markers.push(marker);
      markerOf.set(path, marker);
      fixtures.set(path, await factory(context, owner, marker));
    }
  });
  afterAll(async () => {
    await context.close();
    await carrier.close();
  });

  const protectedRoutes = () => registeredRoutes(context).filter((route) => !PUBLIC_ROUTES.includes(route));
  const callIds = () => [...fixtures.values()].flatMap((fixture) => (fixture.params.callId ? [fixture.params.callId] : []));

  it('has a fixture for every route that takes an id', () => {
    const uncovered = protectedRoutes()
      .map((route) => route.split(' ')[1])
      .filter((path) => path.includes(':') && !FIXTURES[path] && !CATALOG_ROUTES.includes(path));
    expect(uncovered).toEqual([]);
  });

  it("answers 404 to another account on every route with an id, and changes nothing of A's", async () => {
    const failures: string[] = [];
    for (const route of protectedRoutes()) {
      const [method, path] = route.split(' ');
      const fixture = fixtures.get(path);
      if (!fixture) continue;
      const url = path.replace(/:(\w+)/g, (_, name: string) => fixture.params[name]) + (ROUTE_QUERIES[path]?.(markerOf.get(path)!) ?? '');
      const before = await fixture.snapshot();
      const call = context.as(intruder)[method.toLowerCase() as 'get'](url);
      const payload = requestBody(method, path);
      const response = await (payload ? call.send(payload) : call);
      if (response.status !== 404) failures.push(`${route} answered ${response.status}`);
      if (JSON.stringify(response.body).includes('secret-')) failures.push(`${route} leaked A's data`);
      if (JSON.stringify(await fixture.snapshot()) !== JSON.stringify(before)) failures.push(`${route} changed A's data`);
    }
    expect(failures).toEqual([]);
  });

  it('answers 404 to the owner for every other spelling of its own integer ids, and changes nothing', async () => {
    const failures: string[] = [];
    for (const route of protectedRoutes()) {
      const [method, path] = route.split(' ');
      const fixture = fixtures.get(path);
      if (!fixture) continue;
      for (const name of Object.keys(fixture.params).filter((param) => INTEGER_ID_PARAMS.includes(param) && path.includes(`:${param}`))) {
        for (const spelling of otherSpellings(Number(fixture.params[name]))) {
          const url =
            path.replace(/:(\w+)/g, (_, param: string) => (param === name ? spelling : fixture.params[param])) +
            (ROUTE_QUERIES[path]?.(markerOf.get(path)!) ?? '');
          const before = await fixture.snapshot();
          const call = context.as(owner)[method.toLowerCase() as 'get'](url);
          const payload = requestBody(method, path);
          const response = await (payload ? call.send(payload) : call);
          if (response.status !== 404) failures.push(`${method} ${url} answered ${response.status}`);
          if (JSON.stringify(await fixture.snapshot()) !== JSON.stringify(before)) failures.push(`${method} ${url} changed the data`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it('refuses a field in the body of every action that takes none (a 400 naming it), and changes nothing', async () => {
    const document = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8')) as {
      paths: Record<string, Record<string, { requestBody?: { content: { 'application/json': { schema: { maxProperties?: number } } } } }>>;
    };
    const bodyless = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, operation]) => operation.requestBody?.content['application/json']?.schema.maxProperties === 0)
        .map(([method]) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    const withKey = bodyless.filter((route) => protectedRoutes().includes(route));
    expect(withKey.length).toBeGreaterThanOrEqual(5);
    const failures: string[] = [];
    for (const route of withKey) {
      const [method, path] = route.split(' ');
      const fixture = fixtures.get(path)!;
      const url = path.replace(/:(\w+)/g, (_, name: string) => fixture.params[name]);
      const before = await fixture.snapshot();
      const response = await context.as(owner)[method.toLowerCase() as 'post'](url).send({ bogus: 1 });
      if (response.status !== 400) failures.push(`${route} answered ${response.status}`);
      else if (JSON.stringify(response.body.details) !== JSON.stringify([{ field: 'bogus', message: 'property bogus should not exist' }]))
        failures.push(`${route}: ${JSON.stringify(response.body)}`);
      if (JSON.stringify(await fixture.snapshot()) !== JSON.stringify(before)) failures.push(`${route} changed the data`);
      // The path's ids come first, as for every body: a malformed one is a 404 whatever the body holds.
      const asOwner = context.as(owner);
      const malformed = await asOwner[method.toLowerCase() as 'post'](path.replace(/:(\w+)/g, 'abc')).send({ bogus: 1 });
      if (malformed.status !== 404) failures.push(`${route} with malformed ids answered ${malformed.status}`);
    }
    expect(failures).toEqual([]);
  });

  it("answers 404 on every conversation route to B's token with A's conversation id, and changes nothing of A's", async () => {
    const intruderAgent = (await context.as(intruder).post('/agents').send({}).expect(201)).body;
    const own = (await context.as(intruder).post(`/agents/${intruderAgent.id}/conversations`).send({}).expect(201)).body;
    const bearerRoutes = registeredRoutes(context).filter(
      (route) => PUBLIC_ROUTES.includes(route) && route.includes(':conversationId') && !SOCKET_ROUTES.includes(route),
    );
    expect(
      bearerRoutes
        .filter((route) => !route.startsWith('OPTIONS'))
        .map((route) => route.split(' ')[1])
        .sort(),
    ).toEqual(Object.keys(BEARER_FIXTURES).sort());
    const failures: string[] = [];
    for (const route of bearerRoutes.filter((candidate) => !candidate.startsWith('OPTIONS'))) {
      const [method, path] = route.split(' ');
      const fixture = await BEARER_FIXTURES[path](context, owner, `secret-${randomUUID()}`);
      const url = path.replace(':conversationId', fixture.params.conversationId);
      const before = await fixture.snapshot();
      const call = context.http[method.toLowerCase() as 'get'](url).set('Authorization', `Bearer ${own.token}`);
      const response = await (method === 'POST' ? call.send({ text: 'intrusion' }) : call);
      if (response.status !== 404) failures.push(`${route} answered ${response.status}`);
      if (JSON.stringify(response.body).includes('secret-')) failures.push(`${route} leaked A's data`);
      if (JSON.stringify(await fixture.snapshot()) !== JSON.stringify(before)) failures.push(`${route} changed A's data`);
    }
    expect(failures).toEqual([]);
  });

  it("never lists A's rows to B, whatever the filters", async () => {
    const failures: string[] = [];
    for (const route of protectedRoutes()) {
      const [method, path] = route.split(' ');
      if (method !== 'GET' || path.includes(':')) continue;
      const queries = [
        '',
        ...[...fixtures.entries()].flatMap(
          ([fixturePath, fixture]) => LIST_QUERIES[path]?.(markerOf.get(fixturePath)!, fixture.params) ?? [],
        ),
      ];
      for (const query of queries) {
        // As text: exports are CSV and NDJSON, which supertest does not parse.
        const response = await context.as(intruder).get(`${path}${query}`).buffer(true).parse(asText);
        if (response.status !== 200) failures.push(`GET ${path}${query} answered ${response.status}`);
        const text: string = response.body;
        if (markers.some((marker) => text.includes(marker))) failures.push(`GET ${path}${query} listed A's rows`);
        if (callIds().some((callId) => text.includes(callId))) failures.push(`GET ${path}${query} showed A's call ids`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("refuses B's file upload into A's knowledge base, and leaves A's file source unseen and unchanged", async () => {
    const marker = `secret-${randomUUID()}`;
    const kb = (await context.as(owner).post('/knowledge-bases').send({ name: marker }).expect(201)).body;
    const file = (
      await context
        .as(owner)
        .post(`/knowledge-bases/${kb.id}/sources`)
        .attach('file', Buffer.from(`Opening hours ${marker}`), `${marker}.txt`)
        .expect(201)
    ).body;
    while ((await context.as(owner).get(`/knowledge-bases/${kb.id}`).expect(200)).body.sources[0].status === 'pending') await sleep(20);
    const snapshot = () => body(context.as(owner).get(`/knowledge-bases/${kb.id}`));
    const before = await snapshot();
    const attempts = [
      context.as(intruder).post(`/knowledge-bases/${kb.id}/sources`).attach('file', Buffer.from('intrusion'), 'intrusion.txt'),
      context.as(intruder).get(`/knowledge-bases/${kb.id}/sources`),
      context.as(intruder).post(`/knowledge-bases/${kb.id}/sources/${file.id}/refresh`),
      context.as(intruder).delete(`/knowledge-bases/${kb.id}/sources/${file.id}`),
    ];
    for (const response of await Promise.all(attempts)) {
      expect(response.status).toBe(404);
      expect(JSON.stringify(response.body)).not.toContain('secret-');
    }
    expect(JSON.stringify((await context.as(intruder).get('/knowledge-bases').expect(200)).body)).not.toContain(marker);
    expect(await snapshot()).toEqual(before);
  });

  it("counts none of A's calls in B's usage", async () => {
    const days = (await context.as(intruder).get('/usage').expect(200)).body as { calls: number; creditsUsed: number }[];
    expect(days.length).toBe(30);
    expect(days.every((day) => day.calls === 0 && day.creditsUsed === 0)).toBe(true);
    expect((await context.as(intruder).get('/usage?groupBy=agent').expect(200)).body).toEqual([]);
    // While A's own usage does count them (the fixtures are real calls of today).
    const ownDays = (await context.as(owner).get('/usage').expect(200)).body as { calls: number }[];
    expect(ownDays.reduce((sum, day) => sum + day.calls, 0)).toBeGreaterThan(0);
  });
});

/** supertest parser that keeps any body as text. */
function asText(response: import('superagent').Response, done: (error: Error | null, body: string) => void): void {
  let body = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => (body += chunk));
  response.on('end', () => done(null, body));
}
