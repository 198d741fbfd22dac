import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { ProviderHttp } from '../src/conversations/answering/provider-http';
import { eventually, listenOnLoopback } from './helpers';
import { selfSignedCertificate } from './self-signed-certificate';

/**
 * The provider's `fetch` (src/conversations/answering/provider-http.ts) against real servers on loopback: what the
 * openai client relies on of a fetch, and the kept-alive connections it is there for.
 */

type Handler = (request: http.IncomingMessage, response: http.ServerResponse, body: string) => void;

interface TestServer {
  url: string;
  /** Connections the server accepted. */
  connections: number;
  /** Connections currently open. */
  open: Set<import('node:net').Socket>;
  server: http.Server;
  handle(handler: Handler): void;
  close(): Promise<void>;
}

async function startServer(tls?: { key: string; cert: string }): Promise<TestServer> {
  let handler: Handler = (_request, response) => response.end('ok');
  const onRequest = (request: http.IncomingMessage, response: http.ServerResponse) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (part: string) => (body += part));
    request.on('end', () => handler(request, response, body));
  };
  const server = tls ? https.createServer(tls, onRequest) : http.createServer(onRequest);
  const state: TestServer = {
    url: '',
    server,
    connections: 0,
    open: new Set(),
    handle: (next) => (handler = next),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on(tls ? 'secureConnection' : 'connection', (socket) => {
    state.connections++;
    state.open.add(socket);
    socket.on('close', () => state.open.delete(socket));
  });
  await listenOnLoopback(server);
  state.url = `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

describe('ProviderHttp: the fetch the provider client is given', () => {
  let server: TestServer;
  let provider: ProviderHttp;

  beforeEach(async () => {
    server = await startServer();
    provider = new ProviderHttp();
  });
  afterEach(async () => {
    provider.onApplicationShutdown();
    await server.close();
  });

  it('sends the method, the headers and the body with its length; answers the status, headers and URL', async () => {
    let seen: { method?: string; headers?: http.IncomingHttpHeaders; body?: string } = {};
    server.handle((request, response, body) => {
      seen = { method: request.method, headers: request.headers, body };
      response.writeHead(201, 'Made', { 'Content-Type': 'application/json', 'X-Request-Id': 'req_1' });
      response.end('{"id":1}');
    });
    const body = JSON.stringify({ text: 'नमस्ते 😀' });
    const response = await provider.fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: new Headers({ Authorization: 'Bearer sk-1', 'Content-Type': 'application/json' }),
      body,
    });
    expect(seen).toMatchObject({
      method: 'POST',
      body,
      headers: { authorization: 'Bearer sk-1', 'content-length': String(Buffer.byteLength(body)) },
    });
    expect(seen.headers).not.toHaveProperty('transfer-encoding');
    expect(seen.headers).not.toHaveProperty('accept-encoding');
    expect(response).toMatchObject({ status: 201, statusText: 'Made', ok: true, url: `${server.url}/v1/chat/completions` });
    expect(response.headers.get('x-request-id')).toBe('req_1');
    expect(await response.json()).toEqual({ id: 1 });
  });

  it('streams the body as it arrives', async () => {
    let finish = () => undefined as void;
    server.handle((_request, response) => {
      response.writeHead(200, { 'Content-Type': 'text/event-stream' });
      response.write('data: first\n\n');
      finish = () => void response.end('data: [DONE]\n\n');
    });
    const response = await provider.fetch(server.url, { method: 'POST', body: '{}' });
    const reader = response.body!.getReader();
    expect(Buffer.from((await reader.read()).value).toString()).toBe('data: first\n\n');
    finish();
    let rest = '';
    for (let part = await reader.read(); !part.done; part = await reader.read()) rest += Buffer.from(part.value).toString();
    expect(rest).toBe('data: [DONE]\n\n');
  });

  it('keeps the connection for the next request', async () => {
    for (let index = 0; index < 3; index++)
      expect(await (await provider.fetch(server.url, { method: 'POST', body: '{}' })).text()).toBe('ok');
    expect(server.connections).toBe(1);
  });

  it('closes a connection idle for 4 s, and not a reply that pauses longer', async () => {
    server.server.keepAliveTimeout = 30_000;
    server.handle((_request, response) => {
      response.writeHead(200).write('data: first\n\n');
      setTimeout(() => response.end('data: [DONE]\n\n'), 4_500);
    });
    expect(await (await provider.fetch(server.url)).text()).toBe('data: first\n\ndata: [DONE]\n\n');
    expect(server.open.size).toBe(1);
    // The server would keep it 30 s (and says so): the client closes it first.
    const idleSince = Date.now();
    await eventually(async () => (server.open.size === 0 ? true : undefined), 20_000);
    expect(Date.now() - idleSince).toBeGreaterThanOrEqual(3_900);
  }, 30_000);

  it('closes its idle connections at shut-down', async () => {
    await (await provider.fetch(server.url)).text();
    expect(server.open.size).toBe(1);
    provider.onApplicationShutdown();
    await eventually(async () => (server.open.size === 0 ? true : undefined), 2_000);
  });

  it('rejects with the AbortError when the signal fires before the answer, and drops the connection', async () => {
    server.handle(() => undefined); // never answers
    const controller = new AbortController();
    const pending = provider.fetch(server.url, { method: 'POST', body: '{}', signal: controller.signal });
    await eventually(async () => (server.connections === 1 ? true : undefined), 2_000);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await eventually(async () => (server.open.size === 0 ? true : undefined), 2_000);
  });

  it('rejects at once for a signal already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(provider.fetch(server.url, { signal: controller.signal })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('errors the body with the AbortError when the signal fires mid-body', async () => {
    server.handle((_request, response) => response.writeHead(200).write('data: first\n\n'));
    const controller = new AbortController();
    const response = await provider.fetch(server.url, { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('errors the body when the provider cuts the connection mid-body', async () => {
    server.handle((request, response) => {
      response.writeHead(200).write('data: first\n\n');
      setTimeout(() => request.socket.destroy(), 20);
    });
    const response = await provider.fetch(server.url);
    await expect(response.text()).rejects.toThrow();
  });

  it('rejects with a TypeError whose cause is the socket error when nothing listens', async () => {
    const address = server.url;
    await server.close();
    const error = await provider.fetch(address).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('fetch failed');
    expect((error as TypeError).cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('answers no body for 204, 304 and HEAD, and keeps the connection', async () => {
    server.handle((request, response) => {
      const status = request.url === '/204' ? 204 : request.url === '/304' ? 304 : 200;
      response
        .writeHead(status, status === 200 ? { 'Content-Length': '2' } : {})
        .end(status === 200 && request.method !== 'HEAD' ? 'ok' : undefined);
    });
    for (const [url, method] of [
      ['/204', 'GET'],
      ['/304', 'GET'],
      ['/', 'HEAD'],
    ] as const) {
      const response = await provider.fetch(`${server.url}${url}`, { method });
      expect(response.body).toBeNull();
    }
    expect(server.connections).toBe(1);
  });

  it('does not follow a redirect: the 3xx is the answer', async () => {
    server.handle((request, response) =>
      request.url === '/moved' ? response.writeHead(200).end('moved') : response.writeHead(307, { Location: '/moved' }).end(),
    );
    const response = await provider.fetch(`${server.url}/v1`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(307);
    expect(response.headers.get('location')).toBe('/moved');
  });

  it('refuses other schemes and bodies that are neither text nor bytes', async () => {
    await expect(provider.fetch('file:///etc/passwd')).rejects.toBeInstanceOf(TypeError);
    await expect(provider.fetch(server.url, { method: 'POST', body: new FormData() })).rejects.toBeInstanceOf(TypeError);
    expect(await (await provider.fetch(server.url, { method: 'POST', body: new TextEncoder().encode('{}') })).text()).toBe('ok');
  });
});

describe('ProviderHttp over HTTPS', () => {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'provider-http-'));
  const tls = selfSignedCertificate(directory);
  afterAll(() => fs.rmSync(directory, { recursive: true, force: true }));

  it('speaks TLS, checks the certificate, and keeps the connection', async () => {
    const server = await startServer(tls);
    const trusting = new ProviderHttp({ ca: tls.cert });
    const untrusting = new ProviderHttp();
    try {
      expect(await (await trusting.fetch(server.url)).text()).toBe('ok');
      expect(await (await trusting.fetch(server.url)).text()).toBe('ok');
      expect(server.connections).toBe(1);
      const refused = await untrusting.fetch(server.url).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(refused).toBeInstanceOf(TypeError);
      expect((refused as TypeError).cause).toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    } finally {
      trusting.onApplicationShutdown();
      untrusting.onApplicationShutdown();
      await server.close();
    }
  });
});
