import { randomBytes } from 'node:crypto';
import { readlink, readdir } from 'node:fs/promises';
import { get as httpGet, request as httpRequest } from 'node:http';
import type { Readable } from 'node:stream';
import { DataSource } from 'typeorm';
import { PLAYBACK_SIGNER } from '../src/recordings/playback.controller';
import { RecordingStorage } from '../src/recordings/recording-storage';
import { PlaybackUrlSigner } from '../src/recordings/signed-url';
import { createListeningTestContext, createTestContext, eventually, listenOnLoopback, TestAccount, TestContext } from './helpers';
import { chunks, localTestStorage, rawRequest, s3TestStorage, TestStorage } from './recordings-helpers';
import { SIGNING_SECRET_FILE } from '../src/recordings/signing-secret';

/** The limit in these tests: small enough to cross quickly, larger than the recordings below. */
const TEST_LIMIT = 12 * 1024 * 1024;
const MP3 = { 'Content-Type': 'audio/mpeg' };

describe.each([
  ['local', () => localTestStorage(TEST_LIMIT)],
  ['s3', () => s3TestStorage(TEST_LIMIT)],
])('recordings (%s storage)', (_driver, makeStorage) => {
  let storage: TestStorage;
  let context: TestContext;
  let baseUrl: string;
  let owner: TestAccount;
  let other: TestAccount;

  beforeAll(async () => {
    storage = await makeStorage();
    ({ context, baseUrl } = await createListeningTestContext(storage.config));
    owner = await context.createAccount();
    other = await context.createAccount();
  });
  afterAll(async () => {
    await context.close();
    await storage.stop();
  });

  const createCall = async (name = 'Priya Sharma', account = owner): Promise<string> =>
    (await context.as(account).post('/calls').send({ name }).expect(201)).body.id;
  const upload = (callId: string, body: Buffer, account = owner) =>
    context.as(account).put(`/calls/${callId}/recording`).set(MP3).send(body);
  const hasRecording = async (callId: string) => (await context.as(owner).get(`/calls/${callId}`).expect(200)).body.hasRecording;
  const storedKey = async (callId: string): Promise<string | null> =>
    (await context.app.get(DataSource).query('SELECT recording_key FROM calls WHERE id = $1', [callId]))[0].recording_key;
  const playbackUrl = async (callId: string): Promise<string> =>
    (await context.as(owner).get(`/calls/${callId}/recording`).expect(200)).body.url;
  const fetchBytes = async (url: string, headers: Record<string, string> = {}) => {
    const response = await fetch(url, { headers });
    return { response, body: Buffer.from(await response.arrayBuffer()) };
  };

  describe('upload', () => {
    it('stores the body and answers 204; the call then has a recording', async () => {
      const callId = await createCall();
      expect(await hasRecording(callId)).toBe(false);
      const response = await upload(callId, randomBytes(1000)).expect(204);
      expect(response.text).toBe('');
      expect(await hasRecording(callId)).toBe(true);
    });

    it('accepts audio/mpeg with parameters, and a chunked body without Content-Length', async () => {
      const callId = await createCall();
      const response = await rawRequest(
        `${baseUrl}/calls/${callId}/recording`,
        'PUT',
        { 'X-Api-Key': owner.apiKey, 'Content-Type': 'Audio/MPEG; foo=bar' },
        chunks(20),
      );
      expect(response.status).toBe(204);
      const { body } = await fetchBytes(await playbackUrl(callId));
      expect(body.equals(Buffer.concat([...chunks(20)]))).toBe(true);
    });

    it('streams a body of several multipart parts (11 MiB: three 5 MiB parts on S3)', async () => {
      const callId = await createCall();
      const response = await rawRequest(`${baseUrl}/calls/${callId}/recording`, 'PUT', { 'X-Api-Key': owner.apiKey, ...MP3 }, chunks(176));
      expect(response.status).toBe(204);
      const { response: played, body } = await fetchBytes(await playbackUrl(callId));
      expect(played.status).toBe(200);
      expect(body.equals(Buffer.concat([...chunks(176)]))).toBe(true);
    });

    it('replaces an existing recording, and deletes the old object once the new one is in', async () => {
      const callId = await createCall();
      await upload(callId, Buffer.from('first recording')).expect(204);
      const firstKey = await storedKey(callId);
      await upload(callId, Buffer.from('second recording')).expect(204);
      const secondKey = await storedKey(callId);
      expect(secondKey).not.toBe(firstKey);
      const { body } = await fetchBytes(await playbackUrl(callId));
      expect(body.toString()).toBe('second recording');
      await expect(context.app.get(RecordingStorage).size(firstKey!)).resolves.toBeUndefined();
    });

    it('orphans no object when uploads to one call race each other', async () => {
      const callId = await createCall();
      const before = (await storage.objects()).length;
      const bodies = Array.from({ length: 5 }, (_, index) => Buffer.from(`take ${index}`.repeat(1000)));
      await Promise.all(bodies.map((body) => upload(callId, body).expect(204)));
      expect((await storage.objects()).length).toBe(before + 1);
      const { body } = await fetchBytes(await playbackUrl(callId));
      expect(bodies.some((candidate) => candidate.equals(body))).toBe(true);
      await context.as(owner).delete(`/calls/${callId}/recording`).expect(204);
      expect((await storage.objects()).length).toBe(before);
    });

    it.each([
      ['application/json', { 'Content-Type': 'application/json' }],
      ['audio/mp3', { 'Content-Type': 'audio/mp3' }],
      ['audio/mpegx', { 'Content-Type': 'audio/mpegx' }],
      ['no Content-Type', {}],
    ])('refuses %s with a 415 and stores nothing', async (_, headers) => {
      const callId = await createCall();
      const before = await storage.objects();
      const response = await rawRequest(`${baseUrl}/calls/${callId}/recording`, 'PUT', { 'X-Api-Key': owner.apiKey, ...headers }, [
        Buffer.from('{"a":1}'),
      ]);
      expect(response.status).toBe(415);
      expect(JSON.parse(response.body.toString())).toEqual({
        statusCode: 415,
        error: 'Unsupported Media Type',
        message: 'Content-Type must be audio/mpeg',
      });
      expect(await hasRecording(callId)).toBe(false);
      expect(await storage.objects()).toEqual(before);
    });

    it('refuses an empty body with a 400', async () => {
      const callId = await createCall();
      const response = await upload(callId, Buffer.alloc(0)).expect(400);
      expect(response.body).toEqual({ statusCode: 400, error: 'Bad Request', message: 'The recording is empty' });
      expect(await hasRecording(callId)).toBe(false);
    });

    it('refuses a declared Content-Length over the limit with a 413 before reading the body', async () => {
      const callId = await createCall();
      const response = await rawRequest(
        `${baseUrl}/calls/${callId}/recording`,
        'PUT',
        { 'X-Api-Key': owner.apiKey, ...MP3, 'Content-Length': String(TEST_LIMIT + 1) },
        [Buffer.alloc(1024)],
      );
      expect(response.status).toBe(413);
      expect(JSON.parse(response.body.toString())).toEqual({
        statusCode: 413,
        error: 'Payload Too Large',
        message: 'A recording may be at most 12 MiB',
      });
      expect(response.headers.connection).toBe('close');
      expect(await hasRecording(callId)).toBe(false);
    });

    it('counts the bytes of a chunked body: a 413 one byte over, nothing half-written left, the old recording kept', async () => {
      const callId = await createCall();
      await upload(callId, Buffer.from('the recording to keep')).expect(204);
      const before = await storage.objects();
      const body = [...chunks(TEST_LIMIT / (64 * 1024)), Buffer.from('!')];
      const response = await rawRequest(`${baseUrl}/calls/${callId}/recording`, 'PUT', { 'X-Api-Key': owner.apiKey, ...MP3 }, body);
      expect(response.status).toBe(413);
      expect(await storage.objects()).toEqual(before);
      const { body: kept } = await fetchBytes(await playbackUrl(callId));
      expect(kept.toString()).toBe('the recording to keep');
    });

    it('takes a body of exactly the limit', async () => {
      const callId = await createCall();
      const response = await rawRequest(
        `${baseUrl}/calls/${callId}/recording`,
        'PUT',
        { 'X-Api-Key': owner.apiKey, ...MP3 },
        chunks(TEST_LIMIT / (64 * 1024)),
      );
      expect(response.status).toBe(204);
    });

    it('leaves nothing behind when the client goes away mid-upload', async () => {
      const callId = await createCall();
      const before = await storage.objects();
      const request = httpRequest(`${baseUrl}/calls/${callId}/recording`, {
        method: 'PUT',
        headers: { 'X-Api-Key': owner.apiKey, ...MP3, 'Content-Length': String(3 * 1024 * 1024) },
      });
      const closed = new Promise<void>((resolve) => {
        request.on('error', () => resolve());
        request.on('close', () => resolve());
      });
      await new Promise<void>((resolve) => request.write(Buffer.alloc(1024 * 1024), () => resolve()));
      // Locally the object is written as the body arrives: wait until it is there, so that its removal is what is
      // checked below. (On S3, a body under a part's size stays in the service until the end: there the check is
      // that the truncated body never becomes an object.)
      if (storage.name === 'local') await eventually(async () => ((await storage.objects()).length > before.length ? true : undefined));
      request.destroy();
      await closed;
      await eventually(async () => (JSON.stringify(await storage.objects()) === JSON.stringify(before) ? true : undefined), 5_000);
      expect(await storage.objects()).toEqual(before);
      expect(await hasRecording(callId)).toBe(false);
    });
  });

  describe('playback URL', () => {
    let callId: string;
    const audio = randomBytes(100_000);
    beforeAll(async () => {
      callId = await createCall();
      await upload(callId, audio).expect(204);
    });

    it('answers {url, expiresAt}, expiring after RECORDING_URL_TTL_SECONDS', async () => {
      const before = Date.now();
      const { body } = await context.as(owner).get(`/calls/${callId}/recording`).expect(200);
      expect(Object.keys(body).sort()).toEqual(['expiresAt', 'url']);
      expect(body.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const after = Date.now();
      // Whole seconds: the expiry is the request's second plus the TTL.
      const ttl = context.config.recordingUrlTtlSeconds * 1000;
      expect(Date.parse(body.expiresAt)).toBeGreaterThan(before - 1000 + ttl);
      expect(Date.parse(body.expiresAt)).toBeLessThanOrEqual(after + ttl);
    });

    it('gives a fresh URL on every request', async () => {
      const first = await playbackUrl(callId);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expect(await playbackUrl(callId)).not.toBe(first);
    });

    it('names neither the call nor the account', async () => {
      const url = await playbackUrl(callId);
      expect(url).not.toContain(callId);
      // No path segment or query value is the account id (the URL's lifetime, a number of seconds, may equal it by
      // chance; so may S3's shard of the object's key, the first two characters of the object's own random id:
      // recordings/5f/5f0c….mp3, left out).
      const { pathname, searchParams } = new URL(url);
      const parts = [
        ...pathname.replace(/\/([0-9a-f]{2})\/(?=\1[0-9a-f]{6}-)/, '/').split('/'),
        ...[...searchParams].filter(([name]) => !/^(expires|X-Amz-Expires)$/i.test(name)).map(([, value]) => value),
      ];
      expect(parts).not.toContain(String(owner.id));
    });

    it('plays the whole recording without an API key, as audio/mpeg inline', async () => {
      const { response, body } = await fetchBytes(await playbackUrl(callId));
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('audio/mpeg');
      expect(response.headers.get('content-disposition')).toBe('inline');
      expect(body.equals(audio)).toBe(true);
    });

    it('honours Range with a 206 and Content-Range', async () => {
      const url = await playbackUrl(callId);
      const { response, body } = await fetchBytes(url, { Range: 'bytes=1000-1999' });
      expect(response.status).toBe(206);
      expect(response.headers.get('content-range')).toBe(`bytes 1000-1999/${audio.length}`);
      expect(body.equals(audio.subarray(1000, 2000))).toBe(true);
      const tail = await fetchBytes(url, { Range: 'bytes=99990-' });
      expect(tail.response.status).toBe(206);
      expect(tail.response.headers.get('content-range')).toBe(`bytes 99990-99999/${audio.length}`);
      expect(tail.body.equals(audio.subarray(99_990))).toBe(true);
    });

    it('answers 416 to a range outside the recording', async () => {
      const { response } = await fetchBytes(await playbackUrl(callId), { Range: `bytes=${audio.length + 10}-` });
      expect(response.status).toBe(416);
    });

    it('answers 404 for a call without a recording, and for unknown or malformed call ids', async () => {
      const bare = await createCall();
      const missing = await context.as(owner).get(`/calls/${bare}/recording`).expect(404);
      expect(missing.body).toEqual({ statusCode: 404, error: 'Not Found', message: `Call ${bare} has no recording` });
      await context.as(owner).get('/calls/00000000-0000-4000-8000-000000000000/recording').expect(404);
      await context.as(owner).get('/calls/not-a-uuid/recording').expect(404);
    });
  });

  describe('download', () => {
    const audio = randomBytes(50_000);
    const download = (callId: string) =>
      context
        .as(owner)
        .get(`/calls/${callId}/recording/download`)
        .buffer(true)
        .parse((response, done) => {
          const parts: Buffer[] = [];
          response.on('data', (part: Buffer) => parts.push(part));
          response.on('end', () => done(null, Buffer.concat(parts)));
        });

    it('streams the MP3 with its type, length and an attachment file name', async () => {
      const callId = await createCall('Priya Sharma');
      await upload(callId, audio).expect(204);
      const response = await download(callId).expect(200);
      expect(response.headers['content-type']).toBe('audio/mpeg');
      expect(response.headers['content-length']).toBe(String(audio.length));
      expect(response.headers['content-disposition']).toBe('attachment; filename="Priya Sharma.mp3"');
      expect((response.body as Buffer).equals(audio)).toBe(true);
    });

    it.each([
      [
        'राज कुमार',
        (id: string) =>
          `attachment; filename="call-${id}.mp3"; filename*=UTF-8''%E0%A4%B0%E0%A4%BE%E0%A4%9C%20%E0%A4%95%E0%A5%81%E0%A4%AE%E0%A4%BE%E0%A4%B0.mp3`,
      ],
      ['O\'Brien "Jr"', () => 'attachment; filename="OBrien Jr.mp3"'],
      ['a/b\\c', () => 'attachment; filename="abc.mp3"'],
      ['Ana\nMaria', () => 'attachment; filename="Ana Maria.mp3"'],
      ['José', () => 'attachment; filename="Jose.mp3"; filename*=UTF-8\'\'Jos%C3%A9.mp3'],
      ['', (id: string) => `attachment; filename="call-${id}.mp3"`],
    ])('downloads a caller named %j with a 200 and a safe header', async (name, expected) => {
      const callId = await createCall(name);
      await upload(callId, audio).expect(204);
      const response = await download(callId).expect(200);
      expect(response.headers['content-disposition']).toBe(expected(callId));
      expect((response.body as Buffer).length).toBe(audio.length);
    });

    it('answers 404 for a call without a recording', async () => {
      const callId = await createCall();
      await context.as(owner).get(`/calls/${callId}/recording/download`).expect(404);
    });

    it('leaks nothing when the client aborts mid-download: the storage stream is destroyed and closed', async () => {
      const callId = await createCall();
      const big = Buffer.concat([...chunks(56)]);
      await upload(callId, big).expect(204);
      const service = context.app.get(RecordingStorage);
      const opened: Readable[] = [];
      const open = service.open.bind(service);
      const spy = jest.spyOn(service, 'open').mockImplementation(async (...args) => {
        const result = await open(...args);
        if (result) opened.push(result.stream);
        return result;
      });
      const openFiles = async () => {
        const links = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
        return links.filter((link) => link.startsWith(context.config.dataDir)).length;
      };
      const filesBefore = await openFiles();
      try {
        await new Promise<void>((resolve, reject) => {
          const request = httpGet(
            `${baseUrl}/calls/${callId}/recording/download`,
            { headers: { 'X-Api-Key': owner.apiKey } },
            (response) => {
              expect(response.statusCode).toBe(200);
              response.once('data', () => {
                request.destroy();
                resolve();
              });
            },
          );
          request.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
        });
        expect(opened).toHaveLength(1);
        const stream = opened[0];
        if (!stream.closed) await new Promise((resolve) => stream.once('close', resolve));
        expect(stream.destroyed).toBe(true);
        expect(stream.readableEnded).toBe(false);
        expect(await openFiles()).toBe(filesBefore);
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('delete', () => {
    it('deletes the recording and its object: 204, then 404 everywhere', async () => {
      const callId = await createCall();
      await upload(callId, randomBytes(500)).expect(204);
      const key = await storedKey(callId);
      const url = await playbackUrl(callId);
      const response = await context.as(owner).delete(`/calls/${callId}/recording`).expect(204);
      expect(response.text).toBe('');
      expect(await hasRecording(callId)).toBe(false);
      expect(await storedKey(callId)).toBeNull();
      await expect(context.app.get(RecordingStorage).size(key!)).resolves.toBeUndefined();
      await context.as(owner).get(`/calls/${callId}/recording`).expect(404);
      await context.as(owner).get(`/calls/${callId}/recording/download`).expect(404);
      await context.as(owner).delete(`/calls/${callId}/recording`).expect(404);
      expect((await fetch(url)).status).toBe(404);
    });
  });

  describe('another account', () => {
    let callId: string;
    const audio = Buffer.from("A's private recording");
    beforeAll(async () => {
      callId = await createCall('Secret Caller');
      await upload(callId, audio).expect(204);
    });

    const expectUnchanged = async () => {
      const { body } = await fetchBytes(await playbackUrl(callId));
      expect(body.equals(audio)).toBe(true);
    };

    it("cannot upload to A's call (404), and A's recording is untouched", async () => {
      const response = await upload(callId, Buffer.from('overwritten'), other).expect(404);
      expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: `Call ${callId} not found` });
      await expectUnchanged();
    });

    it('cannot get a playback URL (404)', async () => {
      const response = await context.as(other).get(`/calls/${callId}/recording`).expect(404);
      expect(JSON.stringify(response.body)).not.toContain('http');
    });

    it('cannot download (404)', async () => {
      const response = await context.as(other).get(`/calls/${callId}/recording/download`).expect(404);
      expect(response.headers['content-disposition']).toBeUndefined();
      expect(JSON.stringify(response.body)).not.toContain('Secret');
    });

    it("cannot delete (404), and A's recording is untouched", async () => {
      await context.as(other).delete(`/calls/${callId}/recording`).expect(404);
      await expectUnchanged();
    });
  });

  it('never shows the storage key in a response', async () => {
    const callId = await createCall('Key Watcher');
    await upload(callId, randomBytes(100)).expect(204);
    const key = (await storedKey(callId))!;
    const id = key.split('/').at(-1)!.replace('.mp3', '');
    const responses = [
      await context.as(owner).get(`/calls/${callId}`),
      await context.as(owner).get('/calls'),
      await context.as(owner).get(`/calls/${callId}/recording/download`),
    ];
    for (const response of responses) {
      expect(JSON.stringify(response.headers)).not.toContain(id);
      expect(response.text ?? '').not.toContain(id);
    }
    if (storage.name === 'local') expect(await playbackUrl(callId)).not.toContain(id);
  });
});

describe("recordings: the local driver's signed URLs", () => {
  let storage: TestStorage;
  let context: TestContext;
  let owner: TestAccount;
  let callId: string;
  const audio = randomBytes(10_000);

  beforeAll(async () => {
    storage = await localTestStorage();
    context = await createTestContext({ ...storage.config, publicBaseUrl: 'https://api.example.com' });
    owner = await context.createAccount();
    callId = (await context.as(owner).post('/calls').send({ name: 'Priya' }).expect(201)).body.id;
    await context.as(owner).put(`/calls/${callId}/recording`).set(MP3).send(audio).expect(204);
  });
  afterAll(async () => {
    await context.close();
    await storage.stop();
  });

  /** The playback URL's path and query, to ask the app directly. */
  const signedPath = async () => {
    const url = new URL((await context.as(owner).get(`/calls/${callId}/recording`).expect(200)).body.url);
    expect(url.origin).toBe('https://api.example.com');
    return { path: url.pathname, expires: url.searchParams.get('expires')!, signature: url.searchParams.get('signature')! };
  };
  const forbidden = { statusCode: 403, error: 'Forbidden', message: 'This recording URL has expired or is not valid' };

  it('is served under PUBLIC_BASE_URL without an API key, with Accept-Ranges', async () => {
    const { path, expires, signature } = await signedPath();
    const response = await context.http.get(path).query({ expires, signature }).buffer(true).expect(200);
    expect(response.headers['accept-ranges']).toBe('bytes');
    expect(response.headers['content-length']).toBe(String(audio.length));
    expect(response.headers['cache-control']).toBe('private, no-store');
    expect(Buffer.from(response.body).equals(audio)).toBe(true);
  });

  it('serves a suffix range, and the whole file for several ranges (allowed by RFC 9110)', async () => {
    const { path, expires, signature } = await signedPath();
    const suffix = await context.http.get(path).query({ expires, signature }).set('Range', 'bytes=-10').buffer(true).expect(206);
    expect(suffix.headers['content-range']).toBe(`bytes 9990-9999/${audio.length}`);
    expect(Buffer.from(suffix.body).equals(audio.subarray(9990))).toBe(true);
    const several = await context.http.get(path).query({ expires, signature }).set('Range', 'bytes=0-1,5-6').buffer(true).expect(200);
    expect(several.headers['content-length']).toBe(String(audio.length));
  });

  it('answers 416 with Content-Range: bytes */size', async () => {
    const { path, expires, signature } = await signedPath();
    const response = await context.http.get(path).query({ expires, signature }).set('Range', 'bytes=10000-').expect(416);
    expect(response.headers['content-range']).toBe(`bytes */${audio.length}`);
    expect(response.body).toEqual({
      statusCode: 416,
      error: 'Range Not Satisfiable',
      message: `The range is outside the recording (${audio.length} bytes)`,
    });
  });

  it('answers HEAD with the headers only', async () => {
    const { path, expires, signature } = await signedPath();
    const response = await context.http.head(path).query({ expires, signature }).expect(200);
    expect(response.headers['content-length']).toBe(String(audio.length));
    expect(response.headers['content-type']).toBe('audio/mpeg');
  });

  it('refuses an expired URL with a 403', async () => {
    const signer: PlaybackUrlSigner = context.app.get(PLAYBACK_SIGNER);
    const { path, expires, signature } = await signedPath();
    const key = signer.verify(path.split('/')[2], expires, signature, 0)!;
    const expired = signer.sign(key, Math.floor(Date.now() / 1000) - 1);
    const response = await context.http
      .get(`/recordings/${expired.token}`)
      .query({ expires: expired.expires, signature: expired.signature })
      .expect(403);
    expect(response.body).toEqual(forbidden);
  });

  it.each([
    [
      'a later expiry',
      (url: { path: string; expires: string; signature: string }) => ({ ...url, expires: String(Number(url.expires) + 3600) }),
    ],
    [
      'another token',
      (url: { path: string; expires: string; signature: string }) => ({
        ...url,
        path: `${url.path.slice(0, -1)}${url.path.endsWith('A') ? 'B' : 'A'}`,
      }),
    ],
    ['no signature', (url: { path: string; expires: string; signature: string }) => ({ ...url, signature: '' })],
    ['no expiry', (url: { path: string; expires: string; signature: string }) => ({ ...url, expires: '' })],
    [
      'a garbage token',
      (url: { path: string; expires: string; signature: string }) => ({ ...url, path: '/recordings/..%2F..%2Fetc%2Fpasswd' }),
    ],
  ])('refuses an altered URL (%s) with a 403', async (_, alter) => {
    const { path, expires, signature } = alter(await signedPath());
    const response = await context.http.get(path).query({ expires, signature }).expect(403);
    expect(response.body).toEqual(forbidden);
  });

  // Every other last character, not one picked at random: 3 of the 63 decode to the same bytes (padding bits),
  // which a check on the decoded bytes accepted (the test failed one run in sixteen when it picked one of them).
  it('refuses a signature with any other last character with a 403', async () => {
    const { path, expires, signature } = await signedPath();
    const base64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const variants = [...base64url]
      .filter((character) => character !== signature.at(-1))
      .map((character) => `${signature.slice(0, -1)}${character}`);
    const statuses = await Promise.all(
      variants.map(async (variant) => (await context.http.get(path).query({ expires, signature: variant })).status),
    );
    expect(statuses).toEqual(variants.map(() => 403));
  });

  it('refuses repeated query parameters with a 403, not a 500', async () => {
    const { path, expires, signature } = await signedPath();
    await context.http.get(`${path}?expires=${expires}&expires=${expires}&signature=${signature}`).expect(403);
  });

  it('answers 404 once the recording is deleted', async () => {
    const secondCall = (await context.as(owner).post('/calls').send({}).expect(201)).body.id;
    await context.as(owner).put(`/calls/${secondCall}/recording`).set(MP3).send(audio).expect(204);
    const url = new URL((await context.as(owner).get(`/calls/${secondCall}/recording`).expect(200)).body.url);
    await context.as(owner).delete(`/calls/${secondCall}/recording`).expect(204);
    await context.http.get(`${url.pathname}${url.search}`).expect(404);
  });

  it('keeps the generated secret under DATA_DIR, so URLs survive a restart', async () => {
    const { path, expires, signature } = await signedPath();
    const restarted = await createTestContext({ ...storage.config, publicBaseUrl: 'https://api.example.com' });
    try {
      await restarted.http.get(path).query({ expires, signature }).expect(200);
    } finally {
      await restarted.close();
    }
  });

  it('uses RECORDING_SIGNING_SECRET when set: URLs signed with another secret are refused', async () => {
    const { path, expires, signature } = await signedPath();
    const configured = await createTestContext({
      ...storage.config,
      storage: { ...storage.config.storage!, signingSecret: 'x'.repeat(40) },
    });
    try {
      await configured.http.get(path).query({ expires, signature }).expect(403);
    } finally {
      await configured.close();
    }
  });
});

describe('recordings: limits and driver routing', () => {
  const STORAGE_UNAVAILABLE = {
    statusCode: 503,
    error: 'Service Unavailable',
    message: 'Recording storage is unavailable; try again shortly',
  };

  /** Uploads to a fresh call and checks the 503, and that nothing was recorded. */
  async function expectUploadUnavailable(context: TestContext, body: Buffer): Promise<void> {
    const owner = await context.createAccount();
    const callId = (await context.as(owner).post('/calls').send({}).expect(201)).body.id;
    const response = await context.as(owner).put(`/calls/${callId}/recording`).set(MP3).send(body).expect(503);
    expect(response.body).toEqual(STORAGE_UNAVAILABLE);
    expect((await context.as(owner).get(`/calls/${callId}`).expect(200)).body.hasRecording).toBe(false);
    await context.as(owner).get(`/calls/${callId}/recording`).expect(404);
  }

  it('answers a storage failure with a 503 that names no file, and records nothing', async () => {
    const storage = await localTestStorage();
    const context = await createTestContext(storage.config);
    try {
      const { mkdir, writeFile } = await import('node:fs/promises');
      await mkdir(`${context.config.dataDir}/recordings`, { recursive: true });
      await writeFile(`${context.config.dataDir}/recordings/.incoming`, 'not a directory');
      await expectUploadUnavailable(context, Buffer.from('audio'));
    } finally {
      await context.close();
      await storage.stop();
    }
  });

  it('answers a full disk with a 503, leaving no partial file', async () => {
    // A 1 MiB tmpfs as the data directory (root can mount one; CI runs as root), then a 2 MiB upload.
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { execFileSync } = await import('node:child_process');
    const dataDir = await mkdtemp('/tmp/full-disk-');
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dataDir]);
    const local = await localTestStorage();
    const context = await createTestContext({ dataDir, storage: local.config.storage });
    try {
      await expectUploadUnavailable(context, randomBytes(2 * 1024 * 1024));
      const leftovers = (await readdir(dataDir, { recursive: true, withFileTypes: true })).filter(
        (entry) => entry.isFile() && entry.name.endsWith('.mp3'),
      );
      expect(leftovers).toEqual([]);
    } finally {
      await context.close();
      execFileSync('umount', [dataDir]);
      await rm(dataDir, { recursive: true, force: true });
      await local.stop();
    }
  });

  it('answers an unreachable S3 store with a 503 within seconds, recording nothing', async () => {
    const storage = await s3TestStorage();
    // Port 9 (discard), which nothing serves here; a free ephemeral port could be taken meanwhile by another test file.
    const s3 = { ...storage.config.storage!.s3!, endpoint: 'http://127.0.0.1:9' };
    const context = await createTestContext({ ...storage.config, storage: { ...storage.config.storage!, s3 } });
    try {
      const started = Date.now();
      await expectUploadUnavailable(context, randomBytes(64 * 1024));
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await context.close();
      await storage.stop();
    }
  });

  it('refuses a declared Content-Length over the default 200 MiB with a 413, at once', async () => {
    const storage = await localTestStorage();
    const context = await createTestContext(storage.config);
    try {
      const owner = await context.createAccount();
      const callId = (await context.as(owner).post('/calls').send({}).expect(201)).body.id;
      const port = await listenOnLoopback(context.app.getHttpServer());
      const response = await rawRequest(
        `http://127.0.0.1:${port}/calls/${callId}/recording`,
        'PUT',
        {
          'X-Api-Key': owner.apiKey,
          ...MP3,
          'Content-Length': String(200 * 1024 * 1024 + 1),
        },
        [Buffer.alloc(1024)],
      );
      expect(response.status).toBe(413);
      expect(JSON.parse(response.body.toString()).message).toBe('A recording may be at most 200 MiB');
    } finally {
      await context.close();
      await storage.stop();
    }
  });

  it('has no signed-URL route under the s3 driver (404), and creates no signing secret', async () => {
    const storage = await s3TestStorage();
    const context = await createTestContext(storage.config);
    try {
      const response = await context.http.get('/recordings/abc').query({ expires: '1', signature: 'x' }).expect(404);
      expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: 'Not found' });
      expect(await readdir(context.config.dataDir)).not.toContain(SIGNING_SECRET_FILE);
    } finally {
      await context.close();
      await storage.stop();
    }
  });
});
