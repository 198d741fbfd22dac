import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { createClient, nextCursor, uploadRecording, type ApiClient } from '../clients/typescript/src';
import { createListeningTestContext, TestContext } from './helpers';

describe('the typed client (clients/typescript)', () => {
  it('is generated from the current openapi.json (else run `npm run client`)', async () => {
    // In a process of its own: openapi-typescript loads ES modules, which Jest cannot require on Node 20.
    const root = path.join(__dirname, '..');
    await expect(
      promisify(execFile)(process.execPath, ['-r', './scripts/register.js', 'scripts/client.ts', '--check'], { cwd: root }),
    ).resolves.toBeDefined();
  }, 60_000);

  describe('webhook types, for a partner receiving what the service sends', () => {
    const clientDir = path.join(__dirname, '..', 'clients', 'typescript');
    const fixtures = path.join(__dirname, 'fixtures');
    const receiver = path.join(fixtures, 'webhook-receiver.ts');

    /** The compiler's errors for `files` under the client's own settings (strict, no DOM-less shortcuts). */
    function typeErrors(files: string[], extra: Record<string, string> = {}): string[] {
      const config = ts.getParsedCommandLineOfConfigFile(
        path.join(clientDir, 'tsconfig.json'),
        {},
        { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
      )!;
      const options = { ...config.options, noEmit: true, rootDir: path.join(__dirname, '..') };
      const host = ts.createCompilerHost(options);
      const readFile = host.readFile.bind(host);
      host.readFile = (file) => extra[file] ?? readFile(file);
      host.fileExists = (file) => file in extra || ts.sys.fileExists(file);
      const program = ts.createProgram([...files, ...Object.keys(extra)], options, host);
      return ts.getPreEmitDiagnostics(program).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    }

    it('type-checks a receiver of every event and of a tool call written with the exported types', () => {
      expect(typeErrors([receiver])).toEqual([]);
    });

    it('refuses a receiver that reads a field the payload does not have, or an event type that does not exist', () => {
      const wrong = path.join(fixtures, 'wrong-receiver.ts');
      const source = `import type { WebhookEvent } from '../../clients/typescript/src';
export function onEvent(event: WebhookEvent): string {
  if (event.type === 'call.updated') return 'no such event';
  return event.type === 'call.created' ? event.data.callerNumber : '';
}
`;
      const errors = typeErrors([], { [wrong]: source });
      expect(errors).toHaveLength(2);
      expect(errors.join('\n')).toMatch(/call\.updated/);
      expect(errors.join('\n')).toMatch(/callerNumber/);
    });
  });

  describe('against the running service', () => {
    let context: TestContext;
    let api: ApiClient;
    let baseUrl: string;

    beforeAll(async () => {
      // Listening where PUBLIC_BASE_URL says, so that the recording URLs it signs play.
      const listening = await createListeningTestContext({ rateLimit: 10_000, rateLimitWindowSeconds: 60 });
      context = listening.context;
      const account = await context.createAccount();
      baseUrl = `${listening.baseUrl}/`;
      api = createClient({ baseUrl, apiKey: account.apiKey });
    });
    afterAll(async () => {
      // fetch() of the playback URL leaves a second connection open on which no request ever arrives: Node's
      // server.close() does not count it as idle and waited for its 66 s header timeout (the afterAll timed out in
      // about half the runs of this file alone). Nothing is in flight any more here.
      context.app.getHttpServer().closeAllConnections();
      await context.close();
    });

    it('creates an agent and reads it back, typed', async () => {
      const { data: agent, response } = await api.POST('/agents', { body: { name: 'Reception', language: 'en-IN' } });
      expect(response.status).toBe(201);
      const { data: read } = await api.GET('/agents/{agentId}', { params: { path: { agentId: agent!.id } } });
      expect(read).toEqual(agent);
      expect(read!.language).toBe('en-IN');
    });

    it('makes a read-only key (safe to retry with an Idempotency-Key), which reads but cannot write, then revokes it', async () => {
      const idempotencyKey = randomUUID();
      const create = () =>
        api.POST('/api-keys', {
          body: { name: 'Dashboard (read only)', scopes: ['read'] },
          params: { header: { 'Idempotency-Key': idempotencyKey } },
        });
      const { data: created, response } = await create();
      expect(response.status).toBe(201);
      expect(response.headers.get('RateLimit-Policy')).toBe('10000;w=60');
      expect(response.headers.get('RateLimit')).toMatch(/^limit=10000, remaining=\d+, reset=\d+$/);
      const { data: retried, response: replay } = await create(); // a retry after a timeout, say: the same key, not a second one
      expect([replay.headers.get('Idempotent-Replayed'), retried]).toEqual(['true', created]);

      const reader = createClient({ baseUrl, apiKey: created!.apiKey });
      expect((await reader.GET('/agents')).response.status).toBe(200);
      const { error, response: refused } = await reader.POST('/agents', { body: { name: 'Not allowed' } });
      expect([refused.status, error?.message]).toEqual([403, 'This API key has the read scope only; this request needs the write scope']);

      const { data: keys } = await api.GET('/api-keys');
      const listed = keys!.find((key) => key.id === created!.id)!;
      expect(listed).toMatchObject({ name: 'Dashboard (read only)', scopes: ['read'], revokedAt: null });
      expect(listed).not.toHaveProperty('apiKey');
      const { response: revoked } = await api.DELETE('/api-keys/{keyId}', { params: { path: { keyId: created!.id } } });
      expect(revoked.status).toBe(204);
      expect((await reader.GET('/agents')).response.status).toBe(401);
    });

    it('returns errors in the error shape', async () => {
      const { data, error, response } = await api.GET('/agents/{agentId}', { params: { path: { agentId: 999_999 } } });
      expect(data).toBeUndefined();
      expect(response.status).toBe(404);
      expect(error).toEqual({ statusCode: 404, error: 'Not Found', message: 'Agent 999999 not found' });
    });

    it('pages through calls newest first with filters, following nextCursor until there is none', async () => {
      for (const minutes of [5, 4, 3, 2, 1]) {
        await api.POST('/calls', { body: { name: `Pager ${minutes}`, callDate: new Date(Date.now() - minutes * 60_000).toISOString() } });
      }
      const pages: string[][] = [];
      let before: string | undefined;
      do {
        const { data: calls, response } = await api.GET('/calls', {
          params: { query: { limit: 2, search: 'Pager', ...(before ? { before } : {}) } },
        });
        pages.push(calls!.map((call) => call.name));
        before = nextCursor(response);
      } while (before !== undefined && pages.length < 10);
      expect(pages).toEqual([['Pager 1', 'Pager 2'], ['Pager 3', 'Pager 4'], ['Pager 5']]); // the last page has no cursor
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
