import { randomUUID } from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import { bearer, startConversation, Started } from './conversation-helpers';
import { createListeningTestContext, TestAccount, TestContext } from './helpers';
import { VoiceClient } from './support/voice-client';

/** The answer of a plain request: status, headers (but those that differ per request) and body. */
interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: unknown;
}

const PER_REQUEST_HEADERS = ['date', 'x-request-id'];

/** A GET through Node's own client, with `agent` (keep-alive or not) and `headers`; resolves once the answer is read. */
function get(baseUrl: string, path: string, options: { agent?: http.Agent; headers?: Record<string, string> } = {}) {
  return new Promise<{ request: http.ClientRequest; response: http.IncomingMessage; text: string }>((resolve, reject) => {
    const request = http.get(`${baseUrl}${path}`, { agent: options.agent, headers: options.headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ request, response, text }));
    });
    request.on('error', reject);
  });
}

/** The `Connection` header's options, lowercased. */
const connectionOptions = (value: unknown) =>
  String(value)
    .split(',')
    .map((option) => option.trim().toLowerCase());

/**
 * `GET /conversations/{conversationId}/voice` is the voice socket (VoiceGateway takes every `Upgrade: websocket`
 * request to it before Express). A request that asks for no socket reaches the REST API's route, which answers 426.
 */
describe('GET /conversations/{conversationId}/voice without a WebSocket upgrade', () => {
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let started: Started;

  beforeAll(async () => {
    ({ context, baseUrl } = await createListeningTestContext());
    owner = await context.createAccount();
    const agent = (await context.as(owner).post('/agents').send({}).expect(201)).body;
    started = await startConversation(context, owner, agent.id);
  });
  afterAll(() => context?.close());

  it('answers 426 in the error shape with Upgrade: websocket, the same for an existing, an unknown and a malformed id, needing no credential', async () => {
    const answers: Answer[] = [];
    const requests = [
      { id: started.conversationId, headers: {} },
      { id: started.conversationId, headers: { ...bearer(started.token), 'X-Api-Key': owner.apiKey } },
      { id: randomUUID(), headers: {} },
      { id: 'not-a-uuid', headers: {} },
    ];
    for (const { id, headers } of requests) {
      const response = await context.http.get(`/conversations/${id}/voice`).set(headers);
      const kept = Object.entries(response.headers).filter(([name]) => !PER_REQUEST_HEADERS.includes(name));
      answers.push({ status: response.status, headers: Object.fromEntries(kept), body: response.body });
    }
    expect(answers[0]).toMatchObject({
      status: 426,
      headers: { 'content-type': 'application/json; charset=utf-8', upgrade: 'websocket' },
      body: { statusCode: 426, error: 'Upgrade Required', message: expect.stringContaining('WebSocket') },
    });
    expect(Object.keys(answers[0].body as object).sort()).toEqual(['error', 'message', 'statusCode']);
    expect(connectionOptions(answers[0].headers.connection)).toContain('upgrade');
    // Nothing tells the conversation, the credentials or the id apart: nothing was looked up.
    expect(answers.slice(1)).toEqual([answers[0], answers[0], answers[0]]);
  });

  it('says Connection: Upgrade on a kept-alive connection, and adds close when the client asked to close', async () => {
    const path = `/conversations/${started.conversationId}/voice`;
    const agent = new http.Agent({ keepAlive: true });
    try {
      const kept = await get(baseUrl, path, { agent });
      expect([kept.response.statusCode, kept.response.headers.upgrade, kept.response.headers.connection]).toEqual([
        426,
        'websocket',
        'Upgrade',
      ]);
      // The connection stayed open: the agent's next request goes over the same socket.
      const again = await get(baseUrl, path, { agent });
      expect([again.response.statusCode, again.request.reusedSocket]).toEqual([426, true]);
    } finally {
      agent.destroy();
    }
    const closing = await get(baseUrl, path, { agent: new http.Agent({ keepAlive: false }), headers: { Connection: 'close' } });
    expect([closing.response.statusCode, closing.response.headers.connection]).toEqual([426, 'Upgrade, close']);
    expect(JSON.parse(closing.text)).toMatchObject({ statusCode: 426, error: 'Upgrade Required' });
  });

  it('answers 426 to an upgrade to another protocol (h2c), which the voice gateway leaves to the REST API', async () => {
    const port = Number(new URL(baseUrl).port);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () =>
        socket.write(
          `GET /conversations/${started.conversationId}/voice HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n` +
            'Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n',
        ),
      );
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 426 Upgrade Required\r\n/);
    expect(answer).toMatch(/\r\nUpgrade: websocket\r\n/i);
    expect(answer).toMatch(/\r\nConnection: Upgrade, close\r\n/i);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ statusCode: 426, error: 'Upgrade Required' });
  });

  it('leaves a WebSocket handshake on the same path to the voice socket (101, then the session waits for start)', async () => {
    const client = await VoiceClient.connect(baseUrl, started.conversationId);
    client.socket.close(1000);
    expect((await client.closed).code).toBe(1000);
  });
});
