import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { createClient, nextCursor, uploadRecording, type ApiClient } from '../clients/typescript/src';
import { createTestContext, TestContext } from './helpers';
import { freePort } from './recordings-helpers';

describe('the typed client (clients/typescript)', () => {
  it('is generated from the current openapi.json (else run `npm run client`)', async () => {
    // In a process of its own: openapi-typescript loads ES modules, which Jest cannot require on Node 20.
    const root = path.join(__dirname, '..');
    await expect(promisify(execFile)(process.execPath, ['-r', './scripts/register.js', 'scripts/client.ts', '--check'], { cwd: root })).resolves.toBeDefined();
  }, 60_000);

  describe('against the running service', () => {
    let context: TestContext;
    let api: ApiClient;

    beforeAll(async () => {
      // Listening where PUBLIC_BASE_URL says, so that the recording URLs it signs play.
      const port = await freePort();
      context = await createTestContext({ publicBaseUrl: `http://127.0.0.1:${port}` });
      await new Promise<void>((resolve) => context.app.getHttpServer().listen(port, '127.0.0.1', resolve));
      const account = await context.createAccount();
      api = createClient({ baseUrl: `http://127.0.0.1:${port}/`, apiKey: account.apiKey });
    });
    afterAll(() => context.close());

    it('creates an agent and reads it back, typed', async () => {
      const { data: agent, response } = await api.POST('/agents', { body: { name: 'Reception', language: 'en-IN' } });
      expect(response.status).toBe(201);
      const { data: read } = await api.GET('/agents/{agentId}', { params: { path: { agentId: agent!.id } } });
      expect(read).toEqual(agent);
      expect(read!.language).toBe('en-IN');
    });

    it('returns errors in the error shape', async () => {
      const { data, error, response } = await api.GET('/agents/{agentId}', { params: { path: { agentId: 999_999 } } });
      expect(data).toBeUndefined();
      expect(response.status).toBe(404);
      expect(error).toEqual({ statusCode: 404, error: 'Not Found', message: 'Agent 999999 not found' });
    });

    it('lists calls newest first with filters', async () => {
      for (const minutes of [3, 2, 1]) {
        await api.POST('/calls', { body: { name: `Caller ${minutes}`, callDate: new Date(Date.now() - minutes * 60_000).toISOString() } });
      }
      const { data: calls, response } = await api.GET('/calls', { params: { query: { limit: 2, search: 'Caller' } } });
      expect(calls!.map((call) => call.name)).toEqual(['Caller 1', 'Caller 2']);
      expect(nextCursor(response) === undefined || typeof nextCursor(response) === 'string').toBe(true);
    });

    it('uploads a recording and gets a playback URL that plays it', async () => {
      const { data: call } = await api.POST('/calls', { body: { name: 'With audio' } });
      const audio = new Uint8Array([0xff, 0xfb, 0x90, 0x64, 1, 2, 3]);
      expect(await uploadRecording(api, call!.id, audio)).toEqual({ ok: true, status: 204 });
      const { data: recording } = await api.GET('/calls/{callId}/recording', { params: { path: { callId: call!.id } } });
      const played = await fetch(recording!.url);
      expect(new Uint8Array(await played.arrayBuffer())).toEqual(audio);
    });
  });
});

describe('nextCursor', () => {
  it('reads the before cursor of rel="next", and nothing without one', () => {
    const withNext = new Response(null, { headers: { Link: '<https://api.example.com/calls?limit=2&before=abc_-1>; rel="next"' } });
    expect(nextCursor(withNext)).toBe('abc_-1');
    expect(nextCursor(new Response(null))).toBeUndefined();
    expect(nextCursor(new Response(null, { headers: { Link: '<https://x/y?before=z>; rel="prev"' } }))).toBeUndefined();
  });
});
