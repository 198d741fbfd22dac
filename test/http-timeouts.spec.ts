import * as http from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';
import { answerClientErrors } from '../src/common/client-error';
import { applyHttpTimeouts, HTTP_TIMEOUTS } from '../src/common/http-timeouts';
import { ConfigError, loadConfig } from '../src/config/config';
import { createTestContext, listenOnLoopback, TestAccount, TestContext } from './helpers';
import { localTestStorage, TestStorage } from './recordings-helpers';

describe('HTTP server timeouts', () => {
  it('are set on the server the app creates: keep-alive beyond load balancers, its own bound on each request, a cap on connections', async () => {
    const context = await createTestContext();
    try {
      const server: http.Server = context.app.getHttpServer();
      expect(server.keepAliveTimeout).toBe(65_000);
      expect(server.headersTimeout).toBeGreaterThan(server.keepAliveTimeout);
      expect(server.headersTimeout).toBeLessThanOrEqual(120_000); // still a bound on slowloris
      // Node's whole-request limit is one for all routes (its default, 300 s, cut 200 MiB uploads on slow links):
      // the app bounds each request itself, uploads with a longer bound (see 'the bound on receiving a request').
      expect(server.requestTimeout).toBe(0);
      expect(server.timeout).toBe(HTTP_TIMEOUTS.idleMs);
      expect(server.timeout).toBeGreaterThan(server.keepAliveTimeout);
      expect(server.maxConnections).toBe(4096);
    } finally {
      await context.close();
    }
  });

  /**
   * The same settings, scaled down to seconds, on a bare server that counts the bytes of each body. Node checks
   * the request and headers timeouts every `connectionsCheckingInterval` (30 s by default): 50 ms here.
   */
  describe('scaled down (idle 2.5 s, headers 1 s)', () => {
    const servers: http.Server[] = [];
    const start = async (options: http.ServerOptions, timeouts?: Parameters<typeof applyHttpTimeouts>[1]) => {
      const server = http.createServer({ connectionsCheckingInterval: 50, ...options }, (request, response) => {
        let bytes = 0;
        request.on('data', (chunk: Buffer) => (bytes += chunk.length));
        request.on('end', () => response.end(String(bytes)));
      });
      answerClientErrors(server);
      if (timeouts) applyHttpTimeouts(server, timeouts);
      servers.push(server);
      await listenOnLoopback(server);
      return (server.address() as AddressInfo).port;
    };
    afterAll(() => Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve)))));

    const scaled = { keepAliveMs: 500, headersMs: 1_000, requestMs: 0, uploadMs: 0, idleMs: 2_500 };

    /** Sends a POST whose body is `chunks` bytes, one every `intervalMs`; resolves with what came back before the socket closed. */
    function slowPost(port: number, chunks: number, intervalMs: number, contentLength = chunks): Promise<string> {
      return new Promise((resolve) => {
        const socket: Socket = connect(port, '127.0.0.1');
        let answer = '';
        socket.on('data', (data) => (answer += data.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', () => undefined);
        socket.write(`POST / HTTP/1.1\r\nHost: test\r\nContent-Length: ${contentLength}\r\nConnection: close\r\n\r\n`);
        let sent = 0;
        const timer = setInterval(() => {
          if (socket.destroyed || sent === chunks) return clearInterval(timer);
          socket.write('x');
          sent++;
        }, intervalMs);
      });
    }

    it('takes a body sent slowly and steadily for longer than a whole-request limit would allow', async () => {
      // Control: Node's request timeout (its default is 300 s; 1 s here) cuts the same upload with a 408.
      const limited = await start({ requestTimeout: 1_000, headersTimeout: 1_000 });
      expect(await slowPost(limited, 20, 100)).toMatch(/^HTTP\/1\.1 408 /);

      const port = await start({}, scaled);
      const answer = await slowPost(port, 20, 100); // 2 s in all, a byte every 100 ms
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      expect(answer.endsWith('\r\n\r\n20')).toBe(true);
    });

    it('closes a connection whose upload stalled for longer than the idle timeout', async () => {
      const port = await start({}, scaled);
      const startedAt = Date.now();
      const answer = await slowPost(port, 2, 100, 1_000); // two bytes of a 1,000-byte body, then silence
      expect(answer).toBe('');
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(scaled.idleMs);
    });

    it('answers 408 in the error shape to a client that trickles its headers (slowloris)', async () => {
      const port = await start({}, scaled);
      const answer = await new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        let received = '';
        socket.on('data', (data) => (received += data.toString()));
        socket.on('close', () => resolve(received));
        socket.write('GET / HTTP/1.1\r\nHost: test\r\n');
        const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write('X-Slow: 1\r\n')), 100);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(JSON.parse(answer.split('\r\n\r\n')[1])).toEqual({
        statusCode: 408,
        error: 'Request Timeout',
        message: 'The request was not received in time',
      });
    });
  });
});

/** What came back on a connection before it closed (the fence: its close event), and how many body bytes were sent. */
interface Exchange {
  answer: string;
  sent: number;
}

/**
 * Sends a request's head, then its body a byte every `intervalMs`, `stopAfter` bytes at most (then silence), until the
 * body is complete or the server closes the connection. The body is `body`, or `length` bytes of a JSON object.
 */
function trickle(
  port: number,
  head: string,
  length: number,
  intervalMs: number,
  stopAfter = length,
  connection = 'close',
  body?: string,
): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    let sent = 0;
    socket.on('data', (data) => (answer += data.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer, sent });
    });
    socket.write(`${head}Content-Length: ${length}\r\nConnection: ${connection}\r\n\r\n`);
    const timer = setInterval(() => {
      if (socket.destroyed || sent >= stopAfter) return;
      socket.write(body?.[sent] ?? (sent === 0 ? '{' : sent === length - 1 ? '}' : ' '));
      sent++;
    }, intervalMs);
  });
}

const REQUEST_TIMEOUT = { statusCode: 408, error: 'Request Timeout', message: 'The request was not received in time' };
const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe('the bound on receiving a request (HTTP_REQUEST_TIMEOUT_MS, HTTP_UPLOAD_TIMEOUT_MS)', () => {
  let context: TestContext;
  let storage: TestStorage;
  let account: TestAccount;
  let port: number;
  beforeAll(async () => {
    storage = await localTestStorage();
    context = await createTestContext({ ...storage.config, httpRequestTimeoutMs: 300, httpUploadTimeoutMs: 4_000 });
    account = await context.createAccount();
    port = await listenOnLoopback(context.app.getHttpServer());
  });
  afterAll(async () => {
    await context.close();
    await storage.stop();
  });

  const post = (path: string) =>
    `POST ${path} HTTP/1.1\r\nHost: test\r\nX-Api-Key: ${account.apiKey}\r\nContent-Type: application/json\r\n`;

  it('cuts a body that stops (408 in the error shape, then the connection closes), long before the idle timeout', async () => {
    const { answer, sent } = await trickle(port, post('/agents'), 1_000, 10, 5);
    expect(sent).toBe(5);
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(bodyOf(answer)).toEqual(REQUEST_TIMEOUT);
  });

  it('cuts a body that trickles in, however steadily (a byte every 20 ms of 100,000)', async () => {
    const { answer, sent } = await trickle(port, post('/agents'), 100_000, 20);
    expect(sent).toBeLessThan(100_000);
    expect(bodyOf(answer)).toEqual(REQUEST_TIMEOUT);
    expect((await context.as(account).get('/agents').expect(200)).body).toEqual([]);
  });

  it('gives a recording upload its own, longer bound: a slow one completes, a stalled one is cut', async () => {
    const call = (await context.as(account).post('/calls').send({ name: 'Slow upload' }).expect(201)).body;
    const put = `PUT /calls/${call.id}/recording HTTP/1.1\r\nHost: test\r\nX-Api-Key: ${account.apiKey}\r\nContent-Type: audio/mpeg\r\n`;
    // 16 bytes, one every 50 ms: at least 750 ms, longer than the 300 ms of other requests.
    const slow = await trickle(port, put, 16, 50);
    expect([slow.sent, slow.answer.slice(0, 12)]).toEqual([16, 'HTTP/1.1 204']);
    const stalled = await trickle(port, put, 1_000, 10, 5);
    expect(bodyOf(stalled.answer)).toEqual(REQUEST_TIMEOUT);
    expect((await context.as(account).get(`/calls/${call.id}/recording/download`).expect(200)).body).toHaveLength(16); // the slow one's
  }, 15_000);
});

describe('the bound on receiving a knowledge-base file (HTTP_REQUEST_TIMEOUT_MS: the upload bound is for recordings only)', () => {
  let context: TestContext;
  let account: TestAccount;
  let port: number;
  beforeAll(async () => {
    context = await createTestContext({ httpRequestTimeoutMs: 300, httpUploadTimeoutMs: 30_000 });
    account = await context.createAccount();
    port = await listenOnLoopback(context.app.getHttpServer());
  });
  afterAll(() => context.close());

  it('cuts an upload that trickles in like any other body (408), and keeps nothing of it', async () => {
    const kbId = (await context.as(account).post('/knowledge-bases').send({}).expect(201)).body.id as number;
    const form =
      '--slow\r\nContent-Disposition: form-data; name="file"; filename="hours.txt"\r\nContent-Type: text/plain\r\n\r\n' +
      'Open from nine to six.\r\n--slow--\r\n';
    const head =
      `POST /knowledge-bases/${kbId}/sources HTTP/1.1\r\nHost: test\r\nX-Api-Key: ${account.apiKey}\r\n` +
      'Content-Type: multipart/form-data; boundary=slow\r\n';
    // A byte every 20 ms: some 3 s for the whole form, well within the upload bound, ten times the request bound.
    const { answer, sent } = await trickle(port, head, form.length, 20, form.length, 'close', form);
    expect(sent).toBeLessThan(form.length);
    expect(bodyOf(answer)).toEqual(REQUEST_TIMEOUT);
    expect((await context.as(account).get(`/knowledge-bases/${kbId}/sources`).expect(200)).body).toEqual([]);
  });
});

describe('the bound on a body that is never read', () => {
  let context: TestContext;
  let port: number;
  beforeAll(async () => {
    // The upload bound at its default (an hour): a request given it would outlast the test.
    context = await createTestContext({ httpRequestTimeoutMs: 300 });
    port = await listenOnLoopback(context.app.getHttpServer());
  });
  afterAll(() => context.close());

  it('is the request bound, on the upload route too: the upload bound is only given once the request is authenticated', async () => {
    for (const head of [
      'PUT /calls/00000000-0000-4000-8000-000000000000/recording HTTP/1.1\r\nHost: test\r\nContent-Type: audio/mpeg\r\n',
      'POST /agents HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n',
    ]) {
      // Answered 401 at once; on a keep-alive connection Node then skips the body as it comes, until the request
      // bound closes the connection.
      const { answer, sent } = await trickle(port, head, 1_000, 10, 5, 'keep-alive');
      expect([sent, answer.slice(0, 12), bodyOf(answer).statusCode]).toEqual([5, 'HTTP/1.1 401', 401]);
    }
  });
});

describe('the cap on connections (HTTP_MAX_CONNECTIONS)', () => {
  let context: TestContext;
  let port: number;
  beforeAll(async () => {
    context = await createTestContext({ httpMaxConnections: 2 });
    port = await listenOnLoopback(context.app.getHttpServer());
  });
  afterAll(() => context.close());

  /** A keep-alive connection and a way to send it a request and read the status of its answer. */
  async function connection(): Promise<{ socket: Socket; status: () => Promise<string> }> {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    let wake: () => void = () => undefined;
    socket.on('data', (data) => ((received += data.toString()), wake()));
    socket.on('close', () => wake());
    socket.on('error', () => undefined);
    const status = async () => {
      received = '';
      socket.write('GET /health/live HTTP/1.1\r\nHost: test\r\n\r\n');
      while (!socket.destroyed && !received.includes('"status":"ok"')) await new Promise<void>((resolve) => (wake = resolve));
      return received.slice(0, 12);
    };
    return { socket, status };
  }

  it('closes a connection over the cap at once, and serves those within it', async () => {
    const first = await connection();
    const second = await connection();
    expect([await first.status(), await second.status()]).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']); // both accepted
    const third = connect(port, '127.0.0.1');
    let answered = '';
    third.on('data', (data) => (answered += data.toString()));
    third.on('error', () => undefined);
    third.write('GET /health/live HTTP/1.1\r\nHost: test\r\n\r\n');
    await new Promise((resolve) => third.on('close', resolve));
    expect(answered).toBe('');
    expect(await first.status()).toBe('HTTP/1.1 200');
    first.socket.destroy();
    second.socket.destroy();
  });
});

describe('the configuration of the bounds', () => {
  it('has defaults: a minute for a request, an hour for an upload, 4,096 connections', () => {
    expect(loadConfig({})).toMatchObject({ httpRequestTimeoutMs: 60_000, httpUploadTimeoutMs: 3_600_000, httpMaxConnections: 4096 });
    expect(loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '5000', HTTP_UPLOAD_TIMEOUT_MS: '5000', HTTP_MAX_CONNECTIONS: '10' })).toMatchObject({
      httpRequestTimeoutMs: 5_000,
      httpUploadTimeoutMs: 5_000,
      httpMaxConnections: 10,
    });
  });

  it.each([
    ['HTTP_REQUEST_TIMEOUT_MS', { HTTP_REQUEST_TIMEOUT_MS: '0' }],
    ['HTTP_REQUEST_TIMEOUT_MS', { HTTP_REQUEST_TIMEOUT_MS: 'soon' }],
    ['HTTP_UPLOAD_TIMEOUT_MS', { HTTP_UPLOAD_TIMEOUT_MS: '999' }],
    ['HTTP_UPLOAD_TIMEOUT_MS', { HTTP_REQUEST_TIMEOUT_MS: '120000', HTTP_UPLOAD_TIMEOUT_MS: '60000' }],
    ['HTTP_MAX_CONNECTIONS', { HTTP_MAX_CONNECTIONS: '0' }],
    ['HTTP_MAX_CONNECTIONS', { HTTP_MAX_CONNECTIONS: 'many' }],
  ])('stops on a bad %s with a message naming it', (variable, env) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(variable);
  });
});
