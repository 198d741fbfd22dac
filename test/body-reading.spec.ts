import * as http from 'node:http';
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { JSON_MAX_VALUES } from '../src/common/json-body.middleware';
import { createTestContext, listenOnLoopback, TestContext } from './helpers';

/** What a raw HTTP exchange answered: the status, the headers' text and the body parsed as JSON. */
interface RawAnswer {
  status: number;
  head: string;
  body: { statusCode?: number; error?: string; message?: string };
}

/**
 * Sends a request's head and the first bytes of the body it declares, never the rest, and resolves with the
 * answer. An answer proves the server did not wait for the body, so did not read it: a server that reads the
 * body before answering never answers (the test then times out).
 */
function answerWithoutTheBody(port: number, head: string, start: Buffer | string = '{"name":'): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (data) => {
      received += data.toString();
      const end = received.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(received.slice(0, end));
      if (end < 0 || !length || received.length < end + 4 + Number(length[1])) return;
      socket.destroy();
      resolve({ status: Number(received.slice(9, 12)), head: received.slice(0, end), body: JSON.parse(received.slice(end + 4)) });
    });
    socket.on('error', reject);
    socket.write(head);
    socket.write(start);
  });
}

/** The head of a POST declaring a body of 1 MB. */
const postHead = (path: string, headers: Record<string, string> = {}) =>
  `POST ${path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n` +
  Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('') +
  '\r\n';

/** Just under 2 MiB of `[0,0,…]` in 2 KB of gzip: costly to inflate and walk, so it must be refused before either. */
const ZEROS = Buffer.from(`[${'0,'.repeat(1024 * 1024 - 16)}0]`);

describe('request bodies are read only once the request is authenticated and counted', () => {
  let context: TestContext;
  let port: number;
  beforeAll(async () => {
    context = await createTestContext({ rateLimit: 3, unauthenticatedRateLimit: 100, widgetRateLimit: 2, rateLimitWindowSeconds: 60 });
    port = await listenOnLoopback(context.app.getHttpServer());
  });
  afterAll(() => context.close());

  it('answers 401 without reading the body of a request without a valid key, compressed or not', async () => {
    for (const headers of [{}, { 'X-Api-Key': 'vak_notakeyatall' }, { 'Content-Encoding': 'gzip' }] as Record<string, string>[]) {
      const answer = await answerWithoutTheBody(port, postHead('/agents', headers));
      expect([answer.status, answer.body.statusCode]).toEqual([401, 401]);
    }
  }, 10_000);

  it('answers 403 (no scope) and 429 (over the budget) without reading the body', async () => {
    const owner = await context.createAccount();
    const read = await context.app.get(ApiKeysService).create(owner.id, { scopes: ['read'] });
    expect((await answerWithoutTheBody(port, postHead('/agents', { 'X-Api-Key': read.apiKey, 'Content-Encoding': 'gzip' }))).status).toBe(
      403,
    );
    for (let i = 0; i < 2; i++) await context.as(owner).get('/agents').expect(200); // the rest of the budget of 3
    const limited = await answerWithoutTheBody(port, postHead('/agents', { 'X-Api-Key': owner.apiKey }));
    expect([limited.status, limited.body.error]).toEqual([429, 'Too Many Requests']);
  }, 10_000);

  it('answers a public route over its rate limit 429 without reading the body', async () => {
    const conversation = '00000000-0000-4000-8000-000000000000';
    const send = () =>
      context.http.post(`/conversations/${conversation}/messages`).set('Authorization', 'Bearer vac_x').send({ text: 'hi' });
    expect([(await send()).status, (await send()).status]).toEqual([404, 404]); // the widget limit is 2
    const limited = await answerWithoutTheBody(
      port,
      postHead(`/conversations/${conversation}/messages`, { Authorization: 'Bearer vac_x' }),
    );
    expect(limited.status).toBe(429);
  }, 10_000);
});

describe('bodies, once read', () => {
  let context: TestContext;
  let port: number;
  beforeAll(async () => {
    context = await createTestContext();
    port = await listenOnLoopback(context.app.getHttpServer());
  });
  afterAll(() => context.close());

  it('answers a bomb of gzip without a key 401, and refuses compressed bodies with a key: 415, nothing inflated', async () => {
    const bomb = gzipSync(ZEROS);
    expect(bomb.length).toBeLessThan(4096);
    const unauthenticated = await context.http
      .post('/agents')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .send(bomb);
    expect(unauthenticated.status).toBe(401);
    const owner = await context.createAccount();
    for (const [encoding, body] of [
      ['gzip', bomb],
      ['br', brotliCompressSync(ZEROS)],
      ['deflate', deflateSync(Buffer.from('{"name":"Compressed"}'))],
      ['x-unknown', Buffer.from('{"name":"Compressed"}')],
    ] as const) {
      const response = await context
        .as(owner)
        .post('/agents')
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', encoding)
        .send(body);
      expect([encoding, response.status, response.body]).toEqual([
        encoding,
        415,
        {
          statusCode: 415,
          error: 'Unsupported Media Type',
          message: 'Content-Encoding must be identity: compressed request bodies are not accepted',
        },
      ]);
    }
    await context.as(owner).post('/agents').set('Content-Encoding', 'identity').send({ name: 'Plain' }).expect(201);
    expect((await context.as(owner).get('/agents').expect(200)).body.map((agent: { name: string }) => agent.name)).toEqual(['Plain']);
  });

  it('refuses a compressed recording upload too (415): a stored recording is the bytes sent, never inflated', async () => {
    const owner = await context.createAccount();
    const call = (await context.as(owner).post('/calls').send({ name: 'Recorded' }).expect(201)).body;
    const upload = await context
      .as(owner)
      .put(`/calls/${call.id}/recording`)
      .set('Content-Type', 'audio/mpeg')
      .set('Content-Encoding', 'gzip')
      .send(gzipSync(Buffer.alloc(1000)));
    expect(upload.status).toBe(415);
    expect((await context.as(owner).get(`/calls/${call.id}`).expect(200)).body.hasRecording).toBe(false);
  });

  it(`refuses a body of more than ${JSON_MAX_VALUES} values (400) before any validation walks it, and takes the largest valid bodies`, async () => {
    const owner = await context.createAccount();
    const many = await context.as(owner).post('/calls').set('Content-Type', 'application/json').send(`{"feedback":${ZEROS.toString()}}`);
    expect(many.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      message: `Request body has more than ${JSON_MAX_VALUES} values (objects, arrays, strings, numbers, booleans and nulls)`,
    });
    // 500 turns of transcript (the most a call has) and 2,000 fields of extracted data: about 4,000 values.
    const transcript = Array.from({ length: 500 }, (_, index) => ({ speaker: index % 2 ? 'user' : 'agent', text: `Turn ${index}` }));
    const extractedData = Object.fromEntries(Array.from({ length: 2000 }, (_, index) => [`field${index}`, index]));
    const call = (await context.as(owner).post('/calls').send({ name: 'Long', transcript, extractedData }).expect(201)).body;
    expect([call.transcript.length, Object.keys(call.extractedData).length]).toEqual([500, 2000]);
  });

  it('leaves a keep-alive connection ready for the next request: the unread body is skipped, never taken for a request', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const send = (method: string, path: string, body?: string) =>
      new Promise<{ status: number; text: string; reused: boolean }>((resolve, reject) => {
        const request = http.request(
          { port, host: '127.0.0.1', method, path, agent, headers: body ? { 'Content-Type': 'application/json' } : {} },
          (response) => {
            let text = '';
            response.on('data', (chunk) => (text += chunk));
            response.on('end', () => resolve({ status: response.statusCode!, text, reused: request.reusedSocket }));
          },
        );
        request.on('error', reject);
        request.end(body);
      });
    try {
      // A body that holds a whole request: were it parsed as the connection's next request, its answer (a 404) would come next.
      const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: test\r\n\r\n';
      const first = await send('POST', '/agents', `{"name":"${'x'.repeat(200_000)}", "tail": "\r\n\r\n${smuggled}"}`);
      expect(first.status).toBe(401);
      const second = await send('GET', '/health/live');
      expect([second.status, JSON.parse(second.text), second.reused]).toEqual([200, { status: 'ok' }, true]);
    } finally {
      agent.destroy();
    }
  });
});
