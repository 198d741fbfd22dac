import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { PUBLIC_ROUTES, registeredRoutes } from './routes';
import { createTestContext, TestAccount, TestContext } from './helpers';

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

const knowledgeBaseFixture: FixtureFactory = async (context, owner, marker) => {
  const kb = (await context.as(owner).post('/knowledge-bases').send({ name: marker }).expect(201)).body;
  const source = (await context.as(owner).post(`/knowledge-bases/${kb.id}/sources`).send({ name: marker, content: marker }).expect(201)).body;
  return {
    params: { kbId: String(kb.id), sourceId: String(source.id) },
    snapshot: () => body(context.as(owner).get(`/knowledge-bases/${kb.id}`)),
  };
};

/** A url source, once its fetch has ended (it is refused: loopback), so that its snapshot holds still. */
const urlSourceFixture: FixtureFactory = async (context, owner, marker) => {
  const kb = (await context.as(owner).post('/knowledge-bases').send({ name: marker }).expect(201)).body;
  const url = `http://127.0.0.1:9/${marker}`;
  const source = (await context.as(owner).post(`/knowledge-bases/${kb.id}/sources`).send({ name: marker, type: 'url', content: url }).expect(201)).body;
  while ((await context.as(owner).get(`/knowledge-bases/${kb.id}`).expect(200)).body.sources[0].status === 'pending') await sleep(20);
  return { params: { kbId: String(kb.id), sourceId: String(source.id) }, snapshot: () => body(context.as(owner).get(`/knowledge-bases/${kb.id}`)) };
};

const callFixture: FixtureFactory = async (context, owner, marker) => {
  const agent = (await context.as(owner).post('/agents').send({ name: marker }).expect(201)).body;
  const call = (
    await context
      .as(owner)
      .post('/calls')
      .send({ name: marker, phone: '+91-98765-43210', status: 'qualified', agentId: agent.id, durationSeconds: 95, transcript: [{ speaker: 'user', text: marker }] })
      .expect(201)
  ).body;
  return {
    params: { callId: call.id, agentId: String(agent.id) },
    snapshot: async () => [await body(context.as(owner).get(`/calls/${call.id}`)), await body(context.as(owner).get(`/calls/${call.id}/recording`))],
  };
};

/** A call with a recording; the snapshot reads the audio back (a playback URL is fresh each time, so not that). */
const recordingFixture: FixtureFactory = async (context, owner, marker) => {
  const { params } = await callFixture(context, owner, marker);
  await context.as(owner).put(`/calls/${params.callId}/recording`).set('Content-Type', 'audio/mpeg').send(Buffer.from(marker)).expect(204);
  const download = async () => {
    const response = await context.as(owner).get(`/calls/${params.callId}/recording/download`).buffer(true).parse((res, done) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => done(null, Buffer.concat(parts).toString('hex')));
    });
    return { status: response.status, audio: response.body };
  };
  return { params, snapshot: async () => [await body(context.as(owner).get(`/calls/${params.callId}`)), await download()] };
};

const widgetSiteFixture: FixtureFactory = async (context, owner, marker) => {
  const site = (await context.as(owner).post('/widget/sites').send({ name: marker }).expect(201)).body;
  return { params: { siteId: String(site.id) }, snapshot: () => body(context.as(owner).get(`/widget/sites/${site.id}`)) };
};

/** A conversation of A's, with its token; the snapshot reads it back with that token. */
const conversationFixture: FixtureFactory = async (context, owner, marker) => {
  const agent = (await context.as(owner).post('/agents').send({ name: marker }).expect(201)).body;
  const started = (await context.as(owner).post(`/agents/${agent.id}/conversations`).send({ name: marker }).expect(201)).body;
  await context.http.post(`/conversations/${started.conversationId}/messages`).set('Authorization', `Bearer ${started.token}`).send({ text: marker }).expect(200);
  return {
    params: { conversationId: started.conversationId, agentId: String(agent.id) },
    snapshot: () => body(context.http.get(`/conversations/${started.conversationId}`).set('Authorization', `Bearer ${started.token}`)),
  };
};

/** Every route path with parameters → how to create the resource it names, for account A. */
export const FIXTURES: Record<string, FixtureFactory> = {
  '/agents/:agentId': agentFixture,
  '/agents/:agentId/conversations': agentFixture,
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
};

/** The public routes of a conversation (its bearer token instead of an API key) → the fixture of one of A's. */
const BEARER_FIXTURES: Record<string, FixtureFactory> = {
  '/conversations/:conversationId': conversationFixture,
  '/conversations/:conversationId/messages': conversationFixture,
  '/conversations/:conversationId/end': conversationFixture,
};

/** Extra query strings tried on list routes, built from A's resources (a filter must never widen the scope). */
const LIST_QUERIES: Record<string, (marker: string, params: Record<string, string>) => string[]> = {
  '/calls': (marker, params) => [
    `?search=${marker}`,
    '?search=98765',
    '?search=%2B91-98765-43210',
    '?status=qualified',
    '?limit=1000&days=3650',
    ...(params.agentId ? [`?agentId=${params.agentId}`] : []),
  ],
};

/** Query strings a route needs to be valid when the caller owns the resource, so that only ownership can fail. */
const ROUTE_QUERIES: Record<string, (marker: string) => string> = {
  '/knowledge-bases/:kbId/search': (marker) => `?q=${marker}`,
};

/** A body each method accepts on a route when the caller owns the resource, so that only ownership can fail. */
function requestBody(method: string): object | undefined {
  return method === 'POST' || method === 'PATCH' || method === 'PUT' ? {} : undefined;
}

describe('cross-account matrix', () => {
  let context: TestContext;
  let owner: TestAccount;
  let intruder: TestAccount;
  const markers: string[] = [];
  const markerOf = new Map<string, string>();
  const fixtures = new Map<string, Fixture>();

  beforeAll(async () => {
    context = await createTestContext();
    owner = await context.createAccount();
    intruder = await context.createAccount();
    for (const [path, factory] of Object.entries(FIXTURES)) {
      const marker = `secret-${randomUUID()}`;
      markers.push(marker);
      markerOf.set(path, marker);
      fixtures.set(path, await factory(context, owner, marker));
    }
  });
  afterAll(() => context.close());

  const protectedRoutes = () => registeredRoutes(context).filter((route) => !PUBLIC_ROUTES.includes(route));

  it('has a fixture for every route that takes an id', () => {
    const uncovered = protectedRoutes()
      .map((route) => route.split(' ')[1])
      .filter((path) => path.includes(':') && !FIXTURES[path]);
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
      const payload = requestBody(method);
      const response = await (payload ? call.send(payload) : call);
      if (response.status !== 404) failures.push(`${route} answered ${response.status}`);
      if (JSON.stringify(response.body).includes('secret-')) failures.push(`${route} leaked A's data`);
      if (JSON.stringify(await fixture.snapshot()) !== JSON.stringify(before)) failures.push(`${route} changed A's data`);
    }
    expect(failures).toEqual([]);
  });

  it("answers 404 on every conversation route to B's token with A's conversation id, and changes nothing of A's", async () => {
    const intruderAgent = (await context.as(intruder).post('/agents').send({}).expect(201)).body;
    const own = (await context.as(intruder).post(`/agents/${intruderAgent.id}/conversations`).send({}).expect(201)).body;
    const bearerRoutes = registeredRoutes(context).filter((route) => PUBLIC_ROUTES.includes(route) && route.includes(':conversationId'));
    expect(bearerRoutes.filter((route) => !route.startsWith('OPTIONS')).map((route) => route.split(' ')[1]).sort()).toEqual(Object.keys(BEARER_FIXTURES).sort());
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
      const queries = ['', ...[...fixtures.entries()].flatMap(([fixturePath, fixture]) => LIST_QUERIES[path]?.(markerOf.get(fixturePath)!, fixture.params) ?? [])];
      for (const query of queries) {
        const response = await context.as(intruder).get(`${path}${query}`);
        if (response.status !== 200) failures.push(`GET ${path}${query} answered ${response.status}`);
        const text = JSON.stringify(response.body);
        if (markers.some((marker) => text.includes(marker))) failures.push(`GET ${path}${query} listed A's rows`);
      }
    }
    expect(failures).toEqual([]);
  });
});
