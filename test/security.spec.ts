import * as http from 'node:http';
import { AddressInfo, connect } from 'node:net';
import helmet from 'helmet';
import request from 'supertest';
import { HELMET_OPTIONS, recordHelmetHeaders } from '../src/common/security';
import { createTestContext, listenOnLoopback, TestAccount, TestContext } from './helpers';

/** The headers helmet itself puts on a response of a bare node:http server (the reference). */
async function helmetReference(): Promise<Record<string, string>> {
  const protect = helmet(HELMET_OPTIONS);
  const server = http.createServer((req, res) => protect(req, res, () => res.end()));
  const { headers } = await request(server).get('/');
  const transport = ['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'];
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !transport.includes(name)));
}

describe('security headers and CORS', () => {
  let context: TestContext;
  let account: TestAccount;
  beforeAll(async () => {
    context = await createTestContext({ corsOrigins: ['https://dashboard.example.com'] });
    account = await context.createAccount();
  });
  afterAll(() => context.close());

  it('sends the usual protective headers and no X-Powered-By', async () => {
    const response = await context.as(account).get('/agents').expect(200);
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(response.headers['strict-transport-security']).toMatch(/max-age=/);
    expect(response.headers['content-security-policy']).toContain("default-src 'self'");
    expect(response.headers['x-powered-by']).toBeUndefined();
  });

  it("sends exactly helmet's headers (recorded once at start-up) on answers, errors and refusals", async () => {
    const reference = await helmetReference();
    expect(Object.keys(reference).length).toBeGreaterThanOrEqual(12);
    const responses = [
      await context.as(account).get('/agents').expect(200),
      await context.as(account).get('/agents/999999999').expect(404),
      await context.http.get('/agents').expect(401),
      await context.as(account).post('/agents').set('Content-Type', 'application/json').send('{').expect(400),
    ];
    for (const response of responses) {
      for (const [name, value] of Object.entries(reference)) expect([name, response.headers[name]]).toEqual([name, value]);
    }
    // In helmet's order, as helmet set them.
    expect(recordHelmetHeaders().set.map(([name]) => name.toLowerCase())).toEqual(Object.keys(reference));
  });

  it('adds no CORS header, and no Vary, to a request without an Origin (the cors library is skipped for it)', async () => {
    for (const response of [
      await context.as(account).get('/agents').expect(200),
      await context.http.options('/agents').set('Access-Control-Request-Method', 'POST'),
    ]) {
      expect(Object.keys(response.headers).filter((name) => name.startsWith('access-control-') || name === 'vary')).toEqual([]);
    }
  });

  it('answers oversized headers with a 431 in the error shape', async () => {
    const response = await context.as(account).get('/agents').set('X-Padding', 'a'.repeat(20_000));
    expect(response.status).toBe(431);
    expect(response.body).toEqual({ statusCode: 431, error: 'Request Header Fields Too Large', message: 'Request headers are too large' });
  });

  it('answers malformed HTTP with a 400 in the error shape', async () => {
    const server = context.app.getHttpServer();
    if (!server.listening) await listenOnLoopback(server);
    const { port } = server.address() as AddressInfo;
    const raw = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /agents HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n'));
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('close', () => resolve(data));
    });
    expect(raw).toMatch(/^HTTP\/1.1 400 Bad Request/);
    expect(JSON.parse(raw.split('\r\n\r\n')[1])).toEqual({ statusCode: 400, error: 'Bad Request', message: 'Malformed HTTP request' });
  });

  it('allows the configured origin to call the management API, with the API-key header', async () => {
    const preflight = await context.http
      .options('/agents')
      .set('Origin', 'https://dashboard.example.com')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'x-api-key, content-type, idempotency-key')
      .expect(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://dashboard.example.com');
    expect(preflight.headers['access-control-allow-headers'].split(',')).toEqual(
      expect.arrayContaining(['X-Api-Key', 'Content-Type', 'Idempotency-Key']),
    );
    const response = await context.as(account).get('/agents').set('Origin', 'https://dashboard.example.com').expect(200);
    expect(response.headers['access-control-allow-origin']).toBe('https://dashboard.example.com');
    // The browser lets the dashboard read these: the rate limit (RateLimit, RateLimit-Policy, Retry-After) and a replay.
    expect(response.headers['access-control-expose-headers'].split(',')).toEqual(
      expect.arrayContaining(['Retry-After', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed', 'X-Request-Id']),
    );
  });

  it('gives no CORS permission to any other origin', async () => {
    const response = await context.as(account).get('/agents').set('Origin', 'https://evil.example.net').expect(200);
    expect(response.headers['access-control-allow-origin']).toBeUndefined();
    const preflight = await context.http
      .options('/agents')
      .set('Origin', 'https://evil.example.net')
      .set('Access-Control-Request-Method', 'DELETE');
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('client addresses behind a proxy (TRUST_PROXY)', () => {
  // One proxy in front: it appends the address it saw to whatever X-Forwarded-For the client sent. The widget
  // rate limit counts per site key and client IP: with the forged left-most address trusted (TRUST_PROXY=true
  // did), each forged address got a budget of its own.
  it('takes the address the proxy saw, not one the client wrote, so a forged X-Forwarded-For does not escape the per-IP limit', async () => {
    const context = await createTestContext({ trustProxy: 1, widgetRateLimit: 2 });
    try {
      const account = await context.createAccount();
      const site = (await context.as(account).post('/widget/sites').send({ name: 'Proxied' }).expect(201)).body;
      const statuses = [];
      for (const forged of ['1.1.1.1', '2.2.2.2', '3.3.3.3']) {
        statuses.push((await context.http.get(`/widget/config/${site.siteKey}`).set('X-Forwarded-For', `${forged}, 203.0.113.9`)).status);
      }
      expect(statuses).toEqual([200, 200, 429]);
      // Another client behind the same proxy has its own budget.
      await context.http.get(`/widget/config/${site.siteKey}`).set('X-Forwarded-For', '203.0.113.10').expect(200);
    } finally {
      await context.close();
    }
  });
});
