import { once } from 'node:events';
import * as fs from 'node:fs';
import type { Server } from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import WebSocket from 'ws';
import { VoiceLeasesRepository } from '../src/voice/voice-leases.repository';
import { VOICE_SESSION_TIMINGS, VoiceGateway } from '../src/voice/voice.gateway';
import { VoiceSessionTimings } from '../src/voice/voice-session';
import { bearer, startConversation, Started } from './conversation-helpers';
import { createListeningTestContext, eventually, TestAccount, TestContext } from './helpers';
import { RecordedCall, recordCalls, refusedHandshake } from './support/recorded-calls';
import { VoiceClient } from './support/voice-client';

const PAGE = 'https://shop.example.com';
const DASHBOARD = 'https://dashboard.example.net';

/** The socket's close code and the error it was told, after one send from the client. */
async function closeAfter(client: VoiceClient, send: (socket: WebSocket) => void): Promise<{ code: number; error: unknown }> {
  send(client.socket);
  const { code } = await client.closed;
  return { code, error: client.messages.find((message) => message.type === 'error')?.message };
}

/** `ms` of a 440 Hz tone at `rate` (what a microphone would send). */
function tone(ms: number, rate: number, offset = 0): Int16Array {
  const samples = new Int16Array((rate * ms) / 1000);
  for (let index = 0; index < samples.length; index++)
    samples[index] = Math.round(8_000 * Math.sin((2 * Math.PI * 440 * (offset + index)) / rate));
  return samples;
}

const bytes = (pcm: Int16Array) => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
const concat = (frames: Int16Array[]) => {
  const all = new Int16Array(frames.reduce((total, frame) => total + frame.length, 0));
  frames.reduce((offset, frame) => (all.set(frame, offset), offset + frame.length), 0);
  return all;
};

/** The process's active handles by type (sockets, timers…). */
const resourceCounts = () =>
  process.getActiveResourcesInfo().reduce<Record<string, number>>((counts, type) => ({ ...counts, [type]: (counts[type] ?? 0) + 1 }), {});

/** The sessions the gateway is waiting for (one per upgraded socket until its close has been handled). */
const sessionsOf = (context: TestContext) => context.app.get<VoiceGateway, { sessions: Set<unknown> }>(VoiceGateway).sessions;

describe('the voice socket: handshake, start, frames and close codes (contract section 15)', () => {
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let agentId: number;
  let timings: VoiceSessionTimings;
  let dataSource: DataSource;
  let calls: Map<string, RecordedCall>;

  beforeAll(async () => {
    ({ context, baseUrl } = await createListeningTestContext({ widgetRateLimit: 100_000, corsOrigins: [DASHBOARD] }));
    timings = context.app.get(VOICE_SESSION_TIMINGS);
    dataSource = context.app.get(DataSource);
    calls = recordCalls(context);
    owner = await context.createAccount();
    agentId = (await context.as(owner).post('/agents').send({ name: 'Asha', language: 'en-IN' }).expect(201)).body.id;
  });
  afterAll(() => context?.close());

  /** Sets shorter timings for one test, and puts them back after it. */
  const withTimings = async (changes: Partial<VoiceSessionTimings>, run: () => Promise<void>) => {
    const before = { ...timings };
    Object.assign(timings, changes);
    try {
      await run();
    } finally {
      Object.assign(timings, before);
    }
  };
  const conversation = () => startConversation(context, owner, agentId);
  const connected = async (started: Started, origin?: string, url = baseUrl) => {
    const client = await VoiceClient.connect(url, started.conversationId, origin);
    await client.start(started.token);
    return client;
  };
  const statusOf = async (started: Started) =>
    (await context.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(200)).body.status;
  const leaseOf = async (started: Started) =>
    (
      await dataSource.query<{ lease: string | null }[]>('SELECT voice_lease_id AS lease FROM conversations WHERE id = $1', [
        started.conversationId,
      ])
    )[0].lease;
  /** Once the service has handled a socket's close, its lease is released. */
  const released = (started: Started) => eventually(async () => ((await leaseOf(started)) === null ? true : undefined));

  describe('start', () => {
    it('answers ready with the rate it sends and the input it expects, and opens the call with the conversation', async () => {
      const started = await conversation();
      const client = await VoiceClient.connect(baseUrl, started.conversationId);
      expect(await client.start(started.token, 48_000)).toEqual({ type: 'ready', sampleRate: 16_000, input: 'text' });
      const call = calls.get(started.conversationId)!;
      expect(call.context).toMatchObject({
        access: { id: started.conversationId, accountId: owner.id },
        authorization: `Bearer ${started.token}`,
        address: '127.0.0.1',
      });
      expect(await leaseOf(started)).not.toBeNull();
      client.close();
      await call.whenClosed();
      await released(started);
    });

    it('takes a start without sampleRate as 16 kHz', async () => {
      const started = await conversation();
      const client = await VoiceClient.connect(baseUrl, started.conversationId);
      client.send({ type: 'start', token: started.token });
      await client.next('ready');
      client.socket.send(bytes(tone(20, 16_000)));
      client.send({ type: 'text', text: 'fence' });
      await client.next('reply');
      expect(calls.get(started.conversationId)!.audioFrames.map((frame) => frame.length)).toEqual([expect.any(Number)]);
      client.close();
    });

    it('closes with 4404 for a wrong token and for a conversation that does not exist (revealed only after start)', async () => {
      const started = await conversation();
      const wrong = await VoiceClient.connect(baseUrl, started.conversationId);
      wrong.send({ type: 'start', token: 'vac_wrong' });
      expect((await wrong.closed).code).toBe(4404);
      const unknown = await VoiceClient.connect(baseUrl, '7d1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b');
      unknown.send({ type: 'start', token: started.token });
      expect((await unknown.closed).code).toBe(4404);
      expect(calls.has(started.conversationId)).toBe(false);
    });

    it('closes with 4410 for an ended conversation', async () => {
      const started = await conversation();
      await context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
      const client = await VoiceClient.connect(baseUrl, started.conversationId);
      client.send({ type: 'start', token: started.token });
      expect((await client.closed).code).toBe(4410);
    });

    it('closes with 4410 for an idle conversation, which it ends', async () => {
      const started = await conversation();
      await dataSource.query(`UPDATE conversations SET last_message_at = now() - interval '1 hour' WHERE id = $1`, [
        started.conversationId,
      ]);
      const client = await VoiceClient.connect(baseUrl, started.conversationId);
      client.send({ type: 'start', token: started.token });
      expect((await client.closed).code).toBe(4410);
      expect(await statusOf(started)).toBe('ended');
    });

    it('closes with 4408 when no start comes in time', async () => {
      const started = await conversation();
      await withTimings({ startTimeoutMs: 200 }, async () => {
        const client = await VoiceClient.connect(baseUrl, started.conversationId);
        expect((await client.closed).code).toBe(4408);
      });
    });

    it('refuses a second socket with 4409, the first going on; once the first closed, another may continue it', async () => {
      const started = await conversation();
      const first = await connected(started);
      const firstCall = calls.get(started.conversationId)!;
      const second = await VoiceClient.connect(baseUrl, started.conversationId);
      second.send({ type: 'start', token: started.token });
      expect((await second.closed).code).toBe(4409);
      first.send({ type: 'text', text: 'Still here?' });
      expect(await first.next('reply')).toEqual({ type: 'reply', text: 'Still here?' });
      first.close();
      await firstCall.whenClosed();
      await released(started);
      const third = await connected(started);
      expect(calls.get(started.conversationId)).not.toBe(firstCall);
      third.close();
    });

    it('lets a socket opened as soon as the previous one closed continue the conversation once that call is stored (no 4409)', async () => {
      const started = await conversation();
      const first = await connected(started);
      const firstCall = calls.get(started.conversationId)!;
      let stored!: () => void;
      firstCall.stored = new Promise((resolve) => (stored = resolve));
      first.close();
      await firstCall.whenClosed();
      const take = jest.spyOn(context.app.get(VoiceLeasesRepository), 'take');
      try {
        const second = await VoiceClient.connect(baseUrl, started.conversationId);
        second.send({ type: 'start', token: started.token });
        // It tries the lease again while the first call is being stored, and neither is refused nor ready meanwhile.
        await eventually(async () => (take.mock.calls.filter(([, id]) => id === started.conversationId).length >= 3 ? true : undefined));
        expect([second.messages, second.socket.readyState]).toEqual([[], WebSocket.OPEN]);
        stored();
        expect(await second.next('ready')).toMatchObject({ type: 'ready' });
        expect(calls.get(started.conversationId)).not.toBe(firstCall);
        second.close();
      } finally {
        take.mockRestore();
        stored();
      }
    });

    it("closes with 4404 for another account's conversation token, and leaves that conversation as it was", async () => {
      const intruder = await context.createAccount();
      const intruderAgent = (await context.as(intruder).post('/agents').send({ name: 'Other' }).expect(201)).body.id;
      const theirs = await startConversation(context, intruder, intruderAgent);
      const mine = await conversation();
      const client = await VoiceClient.connect(baseUrl, mine.conversationId);
      client.send({ type: 'start', token: theirs.token });
      expect((await client.closed).code).toBe(4404);
      expect(calls.has(mine.conversationId) || calls.has(theirs.conversationId)).toBe(false);
      expect([await leaseOf(mine), await leaseOf(theirs)]).toEqual([null, null]);
    });

    it('answers any first frame with ready, an error and 1007/1008, or 4404: never another close, never a crash', async () => {
      const started = await conversation();
      const frame = fc.oneof(
        fc.uint8Array({ maxLength: 4_000 }).map((data) => ({ binary: true, data: Buffer.from(data) })),
        fc.jsonValue().map((value) => ({ binary: false, data: Buffer.from(JSON.stringify(value) ?? 'null') })),
        fc
          .record(
            {
              type: fc.constantFrom('start', 'text', 'end'),
              token: fc.oneof(fc.string(), fc.constant(started.token)),
              sampleRate: fc.anything(),
            },
            { requiredKeys: ['type'] },
          )
          .map((message) => ({ binary: false, data: Buffer.from(JSON.stringify(message)) })),
        fc.string({ unit: 'binary' }).map((text) => ({ binary: false, data: Buffer.from(text) })),
      );
      await fc.assert(
        fc.asyncProperty(frame, async ({ binary, data }) => {
          const client = await VoiceClient.connect(baseUrl, started.conversationId);
          client.socket.send(data, { binary });
          const first = await client.until(() => client.messages[0] ?? (client.socket.readyState === WebSocket.CLOSED && { type: 'none' }));
          if (first.type === 'ready') client.close();
          const { code } = await client.closed;
          if (first.type === 'ready') {
            await calls.get(started.conversationId)!.whenClosed();
            await released(started);
          } else expect([1007, 1008, 4404]).toContain(code);
        }),
        { numRuns: 60 },
      );
    }, 60_000);

    it.each([
      ['binary before start', 1008, (socket: WebSocket) => socket.send(Buffer.alloc(640))],
      ['malformed JSON', 1007, (socket: WebSocket) => socket.send('{"type":')],
      ['a JSON array', 1007, (socket: WebSocket) => socket.send('[1]')],
      ['another type first', 1008, (socket: WebSocket) => socket.send('{"type":"text","text":"hi"}')],
      ['a token that is not text', 1008, (socket: WebSocket) => socket.send('{"type":"start","token":42}')],
      ['a rate below 8000', 1008, (socket: WebSocket) => socket.send('{"type":"start","token":"vac_x","sampleRate":7999}')],
      ['a rate above 48000', 1008, (socket: WebSocket) => socket.send('{"type":"start","token":"vac_x","sampleRate":48001}')],
      ['a rate that is not whole', 1008, (socket: WebSocket) => socket.send('{"type":"start","token":"vac_x","sampleRate":16000.5}')],
      ['a rate that is text', 1008, (socket: WebSocket) => socket.send('{"type":"start","token":"vac_x","sampleRate":"16000"}')],
    ])('refuses %s with an error and close %d', async (_name, code, send) => {
      const started = await conversation();
      const client = await VoiceClient.connect(baseUrl, started.conversationId);
      expect(await closeAfter(client, send)).toEqual({ code, error: expect.any(String) });
    });
  });

  describe('frames after ready', () => {
    it.each([
      ['an odd byte count', 1007, (socket: WebSocket) => socket.send(Buffer.alloc(641))],
      ['a frame under 10 ms', 1008, (socket: WebSocket) => socket.send(Buffer.alloc(2 * 159))],
      ['a frame over 200 ms', 1008, (socket: WebSocket) => socket.send(Buffer.alloc(2 * 3201))],
      ['malformed JSON', 1007, (socket: WebSocket) => socket.send('not json')],
      ['an unknown type', 1008, (socket: WebSocket) => socket.send('{"type":"dance"}')],
      ['a second start', 1008, (socket: WebSocket) => socket.send('{"type":"start","token":"vac_x"}')],
      ['32 s of audio at once', 1008, (socket: WebSocket) => Array.from({ length: 160 }, () => socket.send(Buffer.alloc(6400)))],
      ['a flood of text frames', 1008, (socket: WebSocket) => Array.from({ length: 10 }, () => socket.send('{"type":"text","text":"hi"}'))],
    ])('refuses %s with an error and close %d; the conversation goes on', async (_name, code, send) => {
      const started = await conversation();
      const client = await connected(started);
      expect(await closeAfter(client, send)).toEqual({ code, error: expect.any(String) });
      expect(await statusOf(started)).toBe('active');
      await calls.get(started.conversationId)!.whenClosed();
      await released(started);
      (await connected(started)).close(); // a new socket continues it
    });

    it('takes frames of 10 and 200 ms at the announced rate, and texts by the rules of a message', async () => {
      const started = await conversation();
      const client = await VoiceClient.connect(baseUrl, started.conversationId);
      await client.start(started.token, 8_000);
      client.socket.send(bytes(tone(10, 8_000)));
      client.socket.send(bytes(tone(200, 8_000)));
      client.send({ type: 'text', text: ' ' });
      expect((await client.next('error')).message).toMatch(/text/);
      client.send({ type: 'text', text: '  Open on Sundays?  ' });
      await client.next('reply');
      const call = calls.get(started.conversationId)!;
      expect(call.texts).toEqual(['Open on Sundays?']);
      expect(call.audioFrames).toHaveLength(2);
      expect(client.messages.filter((message) => message.type === 'error')).toHaveLength(1);
      client.close();
      expect((await client.closed).code).toBe(1000);
    });

    it('hands the call 48 kHz audio as it came, with its rate, for the call to resample a slice at a time', async () => {
      const started = await conversation();
      const client = await VoiceClient.connect(baseUrl, started.conversationId);
      await client.start(started.token, 48_000);
      const frames = Array.from({ length: 25 }, (_, index) => tone(20, 48_000, index * 960));
      await client.stream(concat(frames), 48_000);
      client.send({ type: 'text', text: 'fence' });
      await client.next('reply');
      const call = calls.get(started.conversationId)!;
      expect(call.context.inputSampleRate).toBe(48_000);
      expect(concat(call.audioFrames)).toEqual(concat(frames));
      client.close();
    });

    it('forwards end to the call (which answers ended, then close 1000)', async () => {
      const started = await conversation();
      const client = await connected(started);
      client.send({ type: 'end' });
      await client.next('ended');
      expect((await client.closed).code).toBe(1000);
    });

    it('does not end the conversation when the socket drops; the call is closed', async () => {
      const started = await conversation();
      const client = await connected(started);
      client.socket.terminate();
      await calls.get(started.conversationId)!.whenClosed();
      expect(await statusOf(started)).toBe('active');
    });

    it('renews the lease while the socket lives, in a commit that does not wait for the disk', async () => {
      const started = await conversation();
      const until = async () =>
        (
          await dataSource.query<{ until: Date }[]>('SELECT voice_lease_until AS until FROM conversations WHERE id = $1', [
            started.conversationId,
          ])
        )[0].until.getTime();
      await withTimings({ leaseSeconds: 0.3 }, async () => {
        const client = await connected(started);
        const first = await until();
        await eventually(async () => ((await until()) > first ? true : undefined));
        expect(await leaseOf(started)).not.toBeNull();
        client.socket.close(1000);
        await released(started);
      });
      const renewal = fs
        .readFileSync(path.join(__dirname, '..', 'src', 'queries', 'voice-leases.repository.sql'), 'utf8')
        .split(/^-- (?=VoiceLeasesRepository\.)/m)
        .find((query) => query.startsWith('VoiceLeasesRepository.renew\n'));
      expect(renewal).toContain("set_config('synchronous_commit', 'off', TRUE)");
    });

    it('says ended and closes 1000 when the conversation is ended elsewhere (its end route), noticed at the lease renewal', async () => {
      const started = await conversation();
      await withTimings({ leaseSeconds: 0.3 }, async () => {
        const client = await connected(started);
        await context.http.post(`/conversations/${started.conversationId}/end`).set(bearer(started.token)).expect(204);
        await client.next('ended');
        expect((await client.closed).code).toBe(1000);
      });
    });

    /** A client whose TCP socket is paused: it reads nothing, so it answers no ping and lets unsent bytes pile up. */
    const pausedClient = async (started: Started) => {
      const client = await connected(started);
      const raw = (client.socket as unknown as { _socket: net.Socket })._socket;
      raw.pause();
      return { client, raw };
    };

    it('drops a client that answers no ping within the interval', async () => {
      const started = await conversation();
      await withTimings({ pingIntervalMs: 100 }, async () => {
        const { client, raw } = await pausedClient(started);
        await calls.get(started.conversationId)!.whenClosed();
        raw.resume(); // the paused client learns of the cut once it reads again
        expect((await client.closed).code).toBe(1006);
      });
    });

    it('drops a client that does not read the audio it is sent, once the unsent bytes stay over 64 KiB', async () => {
      const started = await conversation();
      await withTimings({ unsentGraceMs: 300 }, async () => {
        const { client, raw } = await pausedClient(started);
        const call = calls.get(started.conversationId)!;
        // The agent's voice, sent while the socket takes it: the kernel's buffers fill, then the socket's own, until
        // the socket refuses more (over 64 KiB unsent).
        const second = new Int16Array(16_000);
        while (!call.closed && call.link.sendAudio(second)) await new Promise((resolve) => setImmediate(resolve));
        await call.whenClosed();
        raw.resume();
        expect((await client.closed).code).toBe(1006);
      });
    });
  });

  describe('the handshake', () => {
    let site: { siteKey: string };
    beforeAll(async () => {
      site = (await context.as(owner).post('/widget/sites').send({ name: 'Shop', agentId, allowedDomain: 'shop.example.com' }).expect(201))
        .body;
    });
    const widgetConversation = async (): Promise<Started> =>
      (await context.http.post('/widget/sessions').set('Origin', PAGE).send({ siteKey: site.siteKey }).expect(201)).body;

    /** The close code of a socket opened from `origin` (none: no Origin header) whose `start` carries `token`. */
    const closeCodeFrom = async (started: Started, origin: string | undefined, token = started.token) => {
      const client = await VoiceClient.connect(baseUrl, started.conversationId, origin);
      client.send({ type: 'start', token });
      return (await client.closed).code;
    };

    it("serves a widget conversation to its site's page; another page or none is told 4403 once start proved the token", async () => {
      const started = await widgetConversation();
      (await connected(started, PAGE)).close();
      await released(started);
      const pageCall = calls.get(started.conversationId);
      expect(await closeCodeFrom(started, 'https://evil.example.org')).toBe(4403);
      expect(await closeCodeFrom(started, undefined)).toBe(4403);
      expect(calls.get(started.conversationId)).toBe(pageCall); // no call was opened for them
    });

    it('serves an API conversation without an Origin or from CORS_ORIGINS; another Origin is told 4403', async () => {
      const started = await conversation();
      (await connected(started)).close();
      await released(started);
      (await connected(started, DASHBOARD)).close();
      await released(started);
      expect(await closeCodeFrom(started, PAGE)).toBe(4403);
    });

    it('takes the path as Express routes do: any case, a trailing slash', async () => {
      const started = await conversation();
      const url = `${baseUrl}/Conversations/${started.conversationId.toUpperCase()}/VOICE/`.replace('http', 'ws');
      const client = await new Promise<WebSocket>((resolve, reject) => {
        const socket = new WebSocket(url);
        socket.once('open', () => resolve(socket));
        socket.once('error', reject);
      });
      client.send(JSON.stringify({ type: 'start', token: started.token }));
      const [ready] = await once(client, 'message');
      expect(JSON.parse(String(ready))).toMatchObject({ type: 'ready' });
      client.close();
      await calls.get(started.conversationId)!.whenClosed();
      await released(started);
    });

    it('closes with 4404 after start for an id that cannot be a conversation, as for an unknown one', async () => {
      const started = await conversation();
      for (const id of ['not-a-uuid', '%F0%9F%98%80', 'x'.repeat(2_000)]) {
        const client = await VoiceClient.connect(baseUrl, id);
        client.send({ type: 'start', token: started.token });
        expect((await client.closed).code).toBe(4404);
      }
    });

    it('leaves other upgrade requests (h2c) to the REST API', async () => {
      const port = Number(new URL(baseUrl).port);
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () =>
          socket.write(
            'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n',
          ),
        );
        let text = '';
        socket.on('data', (chunk) => (text += chunk.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    });
  });

  describe('a second instance on the same database', () => {
    const RATE_LIMIT = 4;
    let other: TestContext;
    let otherUrl: string;
    let otherCalls: Map<string, RecordedCall>;
    beforeAll(async () => {
      ({ context: other, baseUrl: otherUrl } = await createListeningTestContext({ widgetRateLimit: RATE_LIMIT }));
      otherCalls = recordCalls(other);
    });
    afterAll(() => other?.close());

    it('refuses a socket there with 4409 while this one holds the conversation, and takes it once that one closed', async () => {
      const started = await conversation();
      const first = await connected(started);
      const elsewhere = await VoiceClient.connect(otherUrl, started.conversationId);
      elsewhere.send({ type: 'start', token: started.token });
      expect((await elsewhere.closed).code).toBe(4409);
      first.send({ type: 'text', text: 'Still mine?' });
      await first.next('reply');
      first.close();
      await calls.get(started.conversationId)!.whenClosed();
      await released(started);
      const second = await connected(started, undefined, otherUrl);
      expect(otherCalls.get(started.conversationId)!.context.access.id).toBe(started.conversationId);
      second.close();
    });

    it('counts the handshake in the widget rate limit: 429 before the upgrade once over', async () => {
      const started = await conversation();
      for (let index = 0; index < RATE_LIMIT; index++) {
        const client = await VoiceClient.connect(otherUrl, started.conversationId);
        client.close();
      }
      const refused = await refusedHandshake(`${otherUrl.replace('http', 'ws')}/conversations/${started.conversationId}/voice`);
      expect(refused).toMatchObject({ status: 429, body: { statusCode: 429 }, headers: { 'retry-after': expect.stringMatching(/^\d+$/) } });
      // The same counter as the conversation's HTTP routes.
      await other.http.get(`/conversations/${started.conversationId}`).set(bearer(started.token)).expect(429);
    });
  });

  it('closes every voice socket with 1001 when an instance stops, and the instance stops', async () => {
    const { context: stopping, baseUrl: stoppingUrl } = await createListeningTestContext();
    recordCalls(stopping);
    const started = await conversation();
    const client = await connected(started, undefined, stoppingUrl);
    const server = stopping.app.getHttpServer() as Server;
    await stopping.close();
    expect((await client.closed).code).toBe(1001);
    expect(server.listening).toBe(false);
    await released(started);
  });

  it('survives 8,000 sockets opened and abandoned without start: every one closed 4408, nothing left open', async () => {
    const TOTAL = 8_000;
    const BATCH = 500; // below HTTP_MAX_CONNECTIONS, which counts voice sockets too
    const server = context.app.getHttpServer() as Server;
    const connections = () =>
      new Promise<number>((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    const started = await conversation();
    const rssBefore = process.memoryUsage().rss;
    const resourcesBefore = resourceCounts();
    const codes = new Map<number, number>();
    await withTimings({ startTimeoutMs: 300 }, async () => {
      for (let opened = 0; opened < TOTAL; opened += BATCH) {
        const batch = await Promise.all(Array.from({ length: BATCH }, () => VoiceClient.connect(baseUrl, started.conversationId)));
        for (const { code } of await Promise.all(batch.map((client) => client.closed))) codes.set(code, (codes.get(code) ?? 0) + 1);
      }
    });
    expect(Object.fromEntries(codes)).toEqual({ 4408: TOTAL });
    await eventually(async () => ((await connections()) === 0 ? true : undefined));
    await eventually(async () => (sessionsOf(context).size === 0 ? true : undefined), 5_000);
    const rssAfter = process.memoryUsage().rss;
    // The rest of the handles are the database pools' connections and idle timers.
    console.log(
      `8,000 abandoned voice sockets: RSS ${(rssBefore / 2 ** 20).toFixed(0)} MiB before, ${(rssAfter / 2 ** 20).toFixed(0)} MiB after; ` +
        `active resources ${JSON.stringify(resourcesBefore)} before, ${JSON.stringify(resourceCounts())} after`,
    );
  }, 120_000);
});
