import { BadRequestException, PayloadTooLargeException } from '@nestjs/common';
import { mkdtemp, readFile, rm, stat, utimes, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConfigError, loadConfig, MAX_RECORDING_BYTES } from '../src/config/config';
import { parseRange } from '../src/recordings/byte-range';
import { ByteLimit } from '../src/recordings/byte-limit';
import { contentDisposition, recordingFileName } from '../src/recordings/content-disposition';
import { LocalRecordingStorage } from '../src/recordings/local-recording-storage';
import { newRecordingKey, RECORDING_KEY, RecordingStorageError, storageFailure } from '../src/recordings/recording-storage';
import { PlaybackUrlSigner, playbackUrl } from '../src/recordings/signed-url';
import { loadSigningSecret, SIGNING_SECRET_FILE } from '../src/recordings/signing-secret';

const CALL_ID = '6f1c2a3e-8d9b-4c1a-9e2f-0123456789ab';

describe('recording file name', () => {
  it.each([
    ['Priya Sharma', 'Priya Sharma.mp3', undefined],
    ['राज कुमार', `call-${CALL_ID}.mp3`, 'राज कुमार.mp3'],
    ['O\'Brien "Jr"', 'OBrien Jr.mp3', undefined],
    ['a/b\\c', 'abc.mp3', undefined],
    ['line one\nline two', 'line one line two.mp3', undefined],
    ['bell\u0007 and \u0000nul', 'bell and nul.mp3', undefined],
    ['tab\tand   spaces  ', 'tab and spaces.mp3', undefined],
    ['José Müller', 'Jose Muller.mp3', 'José Müller.mp3'],
    ['Zoë 李', 'Zoe.mp3', 'Zoë 李.mp3'],
    ['evil\u202Egpj.exe', 'evilgpj.exe.mp3', undefined],
    ['', `call-${CALL_ID}.mp3`, undefined],
    ['   \n\t ', `call-${CALL_ID}.mp3`, undefined],
    ['"\'/\\', `call-${CALL_ID}.mp3`, undefined],
  ])('%j gives filename %j and filename* %j', (name, ascii, utf8) => {
    expect(recordingFileName(name, CALL_ID)).toEqual({ ascii, utf8 });
  });

  it('caps the name at 100 characters, without splitting a character', () => {
    const { ascii, utf8 } = recordingFileName('😀'.repeat(150), CALL_ID);
    expect(utf8).toBe(`${'😀'.repeat(100)}.mp3`);
    expect(ascii).toBe(`call-${CALL_ID}.mp3`);
  });

  it('percent-encodes filename* outside RFC 8187 attr-char, UTF-8 byte by byte', () => {
    expect(contentDisposition('attachment', 'राज a(*)%', CALL_ID)).toBe(
      `attachment; filename="a(*)%.mp3"; filename*=UTF-8''%E0%A4%B0%E0%A4%BE%E0%A4%9C%20a%28%2A%29%25.mp3`,
    );
  });

  it('writes filename*, only for names that are not plain ASCII', () => {
    expect(contentDisposition('attachment', 'Priya Sharma', CALL_ID)).toBe('attachment; filename="Priya Sharma.mp3"');
    expect(contentDisposition('attachment', 'राज कुमार', CALL_ID)).toBe(
      `attachment; filename="call-${CALL_ID}.mp3"; filename*=UTF-8''%E0%A4%B0%E0%A4%BE%E0%A4%9C%20%E0%A4%95%E0%A5%81%E0%A4%AE%E0%A4%BE%E0%A4%B0.mp3`,
    );
  });

  it('never lets a header-breaking or quoting character through', () => {
    const nasty = ['a\r\nSet-Cookie: x=1', 'a"; filename="evil.exe', '\u0000\u0001\u007f', 'x\u2028y\u2029z', '../../etc/passwd'];
    for (const name of nasty) {
      const header = contentDisposition('attachment', name, CALL_ID);
      expect(header).toMatch(/^attachment; filename="[\x20-\x21\x23-\x7e]*"(; filename\*=UTF-8''[A-Za-z0-9!#$&+\-.^_`|~%]+)?$/);
      expect(header).not.toMatch(/[/\\]/);
    }
  });
});

describe('Range header', () => {
  const size = 1000;
  it.each([
    [undefined, { kind: 'whole' }],
    ['bytes=0-99', { kind: 'partial', range: { start: 0, end: 99 } }],
    ['bytes=500-', { kind: 'partial', range: { start: 500, end: 999 } }],
    ['bytes=-100', { kind: 'partial', range: { start: 900, end: 999 } }],
    ['bytes=-5000', { kind: 'partial', range: { start: 0, end: 999 } }],
    ['bytes=990-5000', { kind: 'partial', range: { start: 990, end: 999 } }],
    ['bytes=999-999', { kind: 'partial', range: { start: 999, end: 999 } }],
    ['bytes=1000-', { kind: 'unsatisfiable' }],
    ['bytes=5000-6000', { kind: 'unsatisfiable' }],
    ['bytes=-0', { kind: 'unsatisfiable' }],
    ['bytes=99999999999999999999-', { kind: 'unsatisfiable' }],
    ['bytes=50-10', { kind: 'whole' }],
    ['bytes=0-1,5-9', { kind: 'whole' }],
    ['bytes=0-1,2-3', { kind: 'whole' }],
    ['bytes= 0-99 ', { kind: 'partial', range: { start: 0, end: 99 } }],
    ['bytes= -100', { kind: 'partial', range: { start: 900, end: 999 } }],
    ['bytes=0-99999999999999999999', { kind: 'partial', range: { start: 0, end: 999 } }],
    ['items=0-9', { kind: 'whole' }],
    ['bytes=-', { kind: 'whole' }],
    ['bytes=a-b', { kind: 'whole' }],
  ])('%s', (header, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });

  it('finds nothing satisfiable in an empty object', () => {
    expect(parseRange('bytes=0-', 0)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-1', 0)).toEqual({ kind: 'unsatisfiable' });
  });
});

describe('signed playback URLs', () => {
  const signer = new PlaybackUrlSigner('s'.repeat(40));
  const key = newRecordingKey();
  const now = 1_800_000_000;

  it('round-trips the key, which the token does not reveal', () => {
    const signed = signer.sign(key, now + 60);
    expect(signer.verify(signed.token, String(signed.expires), signed.signature, now)).toBe(key);
    expect(signed.token).not.toContain(key.split('/')[2].slice(0, 8));
    expect(Buffer.from(signed.token, 'base64url').toString('latin1')).not.toContain('recordings');
  });

  it('makes a different token each time for the same key', () => {
    expect(signer.sign(key, now).token).not.toBe(signer.sign(key, now).token);
  });

  it('refuses an expired URL', () => {
    const signed = signer.sign(key, now - 1);
    expect(signer.verify(signed.token, String(signed.expires), signed.signature, now)).toBeUndefined();
  });

  it('accepts a URL up to its expiry second', () => {
    const signed = signer.sign(key, now);
    expect(signer.verify(signed.token, String(signed.expires), signed.signature, now)).toBe(key);
  });

  it('refuses a changed expiry, token or signature, and one signed with another secret', () => {
    const signed = signer.sign(key, now + 60);
    const flip = (value: string) => `${value.slice(0, -2)}${value.at(-2) === 'A' ? 'B' : 'A'}${value.at(-1)}`;
    expect(signer.verify(signed.token, String(signed.expires + 3600), signed.signature, now)).toBeUndefined();
    expect(signer.verify(flip(signed.token), String(signed.expires), signed.signature, now)).toBeUndefined();
    expect(signer.verify(signed.token, String(signed.expires), flip(signed.signature), now)).toBeUndefined();
    const other = new PlaybackUrlSigner('t'.repeat(40)).sign(key, now + 60);
    expect(signer.verify(other.token, String(other.expires), other.signature, now)).toBeUndefined();
  });

  // The 43rd character of a 32-byte base64url value carries 4 bits and 2 padding bits: a check that decodes the
  // signature first accepts 3 other spellings of it. Every other character must be refused.
  it('refuses every other last character of the signature, including those that decode to the same bytes', () => {
    const signed = signer.sign(key, now + 60);
    const base64url = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const variants = [...base64url]
      .filter((character) => character !== signed.signature.at(-1))
      .map((character) => `${signed.signature.slice(0, -1)}${character}`);
    expect(variants).toHaveLength(63);
    expect(variants.filter((variant) => Buffer.from(variant, 'base64url').equals(Buffer.from(signed.signature, 'base64url')))).toHaveLength(
      3,
    );
    for (const variant of variants) expect(signer.verify(signed.token, String(signed.expires), variant, now)).toBeUndefined();
    expect(signer.verify(signed.token, String(signed.expires), signed.signature, now)).toBe(key);
  });

  it.each([
    ['missing expiry', undefined, 'sig'],
    ['array expiry', ['1', '2'], 'sig'],
    ['negative expiry', '-5', 'sig'],
    ['non-numeric expiry', '12abc', 'sig'],
    ['short signature', 'now', 'abc'],
    ['signature with padding', 'now', `${'A'.repeat(43)}=`],
  ])('refuses a malformed query (%s) without throwing', (_, expires, signature) => {
    const signed = signer.sign(key, now + 60);
    const expiry = expires === 'now' ? String(signed.expires) : expires;
    expect(signer.verify(signed.token, expiry, signature, now)).toBeUndefined();
  });

  it('builds the URL under the public base URL', () => {
    const url = new URL(playbackUrl('https://api.example.com', signer.sign(key, now + 60)));
    expect(url.origin).toBe('https://api.example.com');
    expect(url.pathname).toMatch(/^\/recordings\/[A-Za-z0-9_-]+$/);
    expect([...url.searchParams.keys()]).toEqual(['expires', 'signature']);
  });
});

describe('signing secret', () => {
  let dir: string;
  beforeEach(async () => (dir = await mkdtemp(path.join(tmpdir(), 'recordings-secret-'))));
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('uses the configured one', async () => {
    await expect(loadSigningSecret('c'.repeat(32), dir)).resolves.toBe('c'.repeat(32));
  });

  it('generates one once, keeps it private under the data directory, and reuses it', async () => {
    const [first, second] = await Promise.all([loadSigningSecret(undefined, dir), loadSigningSecret(undefined, dir)]);
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(second).toBe(first);
    await expect(loadSigningSecret(undefined, dir)).resolves.toBe(first);
    const file = path.join(dir, SIGNING_SECRET_FILE);
    expect(await readFile(file, 'utf8')).toBe(first);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('refuses a file that holds no usable secret', async () => {
    await writeFile(path.join(dir, SIGNING_SECRET_FILE), 'short');
    await expect(loadSigningSecret(undefined, dir)).rejects.toThrow(SIGNING_SECRET_FILE);
  });
});

describe('ByteLimit', () => {
  const run = (chunks: Buffer[], max: number) => pipeline(Readable.from(chunks), new ByteLimit(max), new PassThrough().resume());

  it.each([
    [200 * 1024 * 1024, 'A recording may be at most 200 MiB'],
    [1024 * 1024, 'A recording may be at most 1 MiB'],
    [1024 * 1024 + 1, 'A recording may be at most 1,048,577 bytes'],
    [1000, 'A recording may be at most 1,000 bytes'],
    [1, 'A recording may be at most 1 byte'],
  ])('states a limit of %d bytes exactly', async (max, message) => {
    await expect(run([Buffer.alloc(max + 1)], max)).rejects.toThrow(new PayloadTooLargeException(message));
  });

  it('passes a body up to the limit', async () => {
    await expect(run([Buffer.alloc(600), Buffer.alloc(400)], 1000)).resolves.toBeUndefined();
  });

  it('fails with a 413 one byte over, while streaming', async () => {
    await expect(run([Buffer.alloc(600), Buffer.alloc(401)], 1000)).rejects.toBeInstanceOf(PayloadTooLargeException);
  });

  it('fails with a 400 on an empty body', async () => {
    await expect(run([], 1000)).rejects.toBeInstanceOf(BadRequestException);
  });
});

describe('local storage', () => {
  let dir: string;
  let storage: LocalRecordingStorage;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'recordings-local-'));
    storage = new LocalRecordingStorage(dir, 'http://localhost:3000', new PlaybackUrlSigner('s'.repeat(40)));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('makes random keys of one shape', () => {
    const keys = new Set(Array.from({ length: 100 }, newRecordingKey));
    expect(keys.size).toBe(100);
    for (const key of keys) expect(key).toMatch(RECORDING_KEY);
  });

  it('refuses a key it did not make (no path traversal)', async () => {
    await expect(storage.size('../../etc/passwd')).rejects.toMatchObject({ reason: 'Malformed recording key' });
    await expect(storage.open('recordings/00/../../x.mp3')).rejects.toMatchObject({ reason: 'Malformed recording key' });
  });

  it('leaves nothing when the body fails half way', async () => {
    const key = newRecordingKey();
    const body = new PassThrough().on('error', () => undefined);
    const writing = storage.write(key, body);
    body.write(Buffer.alloc(1000));
    setImmediate(() => body.destroy(new Error('client went away')));
    await expect(writing).rejects.toThrow(RecordingStorageError);
    await expect(storage.size(key)).resolves.toBeUndefined();
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(path.join(dir, 'recordings/.incoming'))).toEqual([]);
  });

  it('reports a file-system failure without the path or key', async () => {
    await mkdir(path.join(dir, 'recordings'), { recursive: true });
    await writeFile(path.join(dir, 'recordings/.incoming'), 'not a directory');
    const key = newRecordingKey();
    const failure = await storage.write(key, Readable.from([Buffer.from('audio')])).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RecordingStorageError);
    const described = JSON.stringify({ ...(failure as object), message: (failure as Error).message, stack: (failure as Error).stack });
    expect(described).toMatch(/could not store a recording: E[A-Z]+/);
    expect(described).not.toContain(dir);
    expect(described).not.toContain(key.split('/')[2]);
  });

  it('keeps HTTP errors from the body as they are', () => {
    const tooLarge = new PayloadTooLargeException('x');
    expect(storageFailure('store a recording', tooLarge)).toBe(tooLarge);
    const s3Like = Object.assign(new Error('Access Denied for recordings/ab/key.mp3'), {
      name: 'AccessDenied',
      Key: 'recordings/ab/key.mp3',
      $metadata: { httpStatusCode: 403 },
    });
    const replaced = storageFailure('open a recording', s3Like);
    expect((replaced as RecordingStorageError).reason).toBe('could not open a recording: AccessDenied (HTTP 403)');
    expect(JSON.stringify({ ...replaced, message: replaced.message })).not.toContain('key.mp3');
  });

  it('removes stale half-written uploads at start-up, and only those', async () => {
    const incoming = path.join(dir, 'recordings/.incoming');
    await mkdir(incoming, { recursive: true });
    await writeFile(path.join(incoming, 'old.part'), 'x');
    await writeFile(path.join(incoming, 'new.part'), 'x');
    const dayAndAHalfAgo = new Date(Date.now() - 36 * 3600 * 1000);
    await utimes(path.join(incoming, 'old.part'), dayAndAHalfAgo, dayAndAHalfAgo);
    await expect(storage.removeStaleUploads()).resolves.toBe(1);
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(incoming)).toEqual(['new.part']);
  });
});

describe('storage configuration', () => {
  const s3 = { STORAGE_DRIVER: 's3', S3_BUCKET: 'recordings', S3_REGION: 'us-east-1' };

  it('defaults to local storage, a generated secret and the 200 MiB limit', () => {
    expect(loadConfig({}).storage).toEqual({
      driver: 'local',
      s3: undefined,
      signingSecret: undefined,
      maxRecordingBytes: MAX_RECORDING_BYTES,
    });
    expect(MAX_RECORDING_BYTES).toBe(200 * 1024 * 1024);
  });

  it('reads every S3 variable', () => {
    const config = loadConfig({
      ...s3,
      S3_ENDPOINT: 'http://127.0.0.1:9000/',
      S3_ACCESS_KEY_ID: 'minio',
      S3_SECRET_ACCESS_KEY: 'minio-secret',
      S3_FORCE_PATH_STYLE: 'true',
    });
    expect(config.storage.s3).toEqual({
      bucket: 'recordings',
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9000',
      accessKeyId: 'minio',
      secretAccessKey: 'minio-secret',
      forcePathStyle: true,
    });
  });

  it('leaves credentials to the SDK when neither key is given', () => {
    expect(loadConfig(s3).storage.s3).toMatchObject({ accessKeyId: undefined, secretAccessKey: undefined, forcePathStyle: false });
  });

  it.each([
    [{ STORAGE_DRIVER: 'ftp' }, 'STORAGE_DRIVER'],
    [{ STORAGE_DRIVER: 's3', S3_REGION: 'us-east-1' }, 'S3_BUCKET'],
    [{ STORAGE_DRIVER: 's3', S3_BUCKET: 'recordings' }, 'S3_REGION'],
    [{ ...s3, S3_BUCKET: 'Not_A_Bucket' }, 'S3_BUCKET'],
    [{ ...s3, S3_REGION: 'us east' }, 'S3_REGION'],
    [{ ...s3, S3_ENDPOINT: 'minio:9000' }, 'S3_ENDPOINT'],
    [{ ...s3, S3_ENDPOINT: 'ftp://minio:9000' }, 'S3_ENDPOINT'],
    [{ ...s3, S3_ACCESS_KEY_ID: 'minio' }, 'S3_SECRET_ACCESS_KEY'],
    [{ ...s3, S3_SECRET_ACCESS_KEY: 'secret' }, 'S3_ACCESS_KEY_ID'],
    [{ ...s3, S3_FORCE_PATH_STYLE: 'maybe' }, 'S3_FORCE_PATH_STYLE'],
    [{ RECORDING_SIGNING_SECRET: 'too-short' }, 'RECORDING_SIGNING_SECRET'],
    [{ RECORDING_MAX_BYTES: '0' }, 'RECORDING_MAX_BYTES'],
    [{ RECORDING_MAX_BYTES: String(MAX_RECORDING_BYTES + 1) }, 'RECORDING_MAX_BYTES'],
    [{ PUBLIC_BASE_URL: 'https://api.example.com/base/?a=b' }, 'PUBLIC_BASE_URL'],
    [{ PUBLIC_BASE_URL: 'https://api.example.com/#top' }, 'PUBLIC_BASE_URL'],
    [{ PUBLIC_BASE_URL: 'https://user:secret@api.example.com' }, 'PUBLIC_BASE_URL'],
  ])('stops on %j with a message naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(variable);
  });

  it('takes a PUBLIC_BASE_URL with a path, without its trailing slashes', () => {
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://api.example.com/voice//' }).publicBaseUrl).toBe('https://api.example.com/voice');
  });

  it('ignores the S3 variables under the local driver', () => {
    expect(loadConfig({ S3_BUCKET: 'Not_A_Bucket' }).storage.s3).toBeUndefined();
  });
});
