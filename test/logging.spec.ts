import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import { AddressInfo, connect } from 'node:net';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { INestApplication, Logger } from '@nestjs/common';
import { Client } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createApp } from '../src/app';
import { AccountsService } from '../src/auth/accounts.service';
import { generateApiKey } from '../src/auth/api-key-token';
import { createLogger, PinoLoggerService, requestLogger, serializeError } from '../src/common/logger';
import { loadConfig } from '../src/config/config';
import { createTestContext, eventually, listenOnLoopback } from './helpers';
import { localTestStorage, s3TestStorage } from './recordings-helpers';

/** A line the logger wrote, parsed: pino's fields, and those of the request logger and the error serializer. */
interface LogEntry {
  [field: string]: unknown;
  level: number;
  msg: string;
  req?: { id: string; method: string; path: string };
  res?: { statusCode: number };
  err?: { type: string; message: string };
  responseTime?: number;
}

/** A logger writing its lines into an array (parsed). */
function capturedLogger(level: 'info' | 'debug' = 'info') {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ logLevel: level }, sink);
  return { logger, lines, entries: () => lines.map((line) => JSON.parse(line) as LogEntry) };
}

/** Waits for the lines a test expects, up to 10 s (a busy machine), then lets the test's assertions say what is missing. */
const until = async (condition: () => boolean) => {
  for (let i = 0; i < 2_000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('request logs', () => {
  it('carry a request id, method, path, status and time, and never a header, the API key or the query string', async () => {
    const { logger, lines, entries } = capturedLogger();
    const log = requestLogger(logger);
    const server = http.createServer((req, res) => log(req, res, () => res.end('ok')));
    const apiKey = generateApiKey().apiKey;
    await request(server).get('/calls?search=Rahul&signature=abc').set('X-Api-Key', apiKey).set('X-Request-Id', 'req-42').expect(200);
    await until(() => lines.length > 0);

    const [entry] = entries();
    expect(entry).toMatchObject({
      level: 30,
      msg: 'request completed',
      req: { id: 'req-42', method: 'GET', path: '/calls' },
      res: { statusCode: 200 },
    });
    expect(entry.req).toEqual({ id: 'req-42', method: 'GET', path: '/calls' });
    expect(typeof entry.responseTime).toBe('number');
    const text = lines.join('\n');
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain('Rahul');
    expect(text).not.toContain('signature');
  });

  it('masks the token of a signed recording URL (the storage key, encrypted), and keeps every other path', async () => {
    const { logger, lines, entries } = capturedLogger();
    const log = requestLogger(logger);
    const server = http.createServer((req, res) => log(req, res, () => res.end('ok')));
    const token = 'v1.secret-storage-key-sealed';
    await request(server).get(`/recordings/${token}?expires=1&signature=abc`).expect(200);
    await request(server).get('/calls/5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90/recording').expect(200);
    await until(() => lines.length > 1);
    expect(entries().map((entry) => entry.req?.path)).toEqual([
      '/recordings/:token',
      '/calls/5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90/recording',
    ]);
    expect(lines.join('\n')).not.toContain(token);
  });

  it('writes the line pino-http 11 wrote, key for key and in its order (an error of the response with its err)', async () => {
    const { logger, lines } = capturedLogger();
    const log = requestLogger(logger);
    const server = http.createServer((req, res) =>
      log(req, res, () => {
        if (req.url === '/broken') res.emit('error', Object.assign(new Error('socket trouble'), { code: 'EPIPE', syscall: 'write' }));
        res.end('ok');
      }),
    );
    await request(server).get('/agents?x=1').expect(200);
    await request(server).get('/broken').expect(200);
    await until(() => lines.length >= 2);
    const [completed, broken] = lines.map((line) => JSON.parse(line) as LogEntry);
    expect(Object.keys(completed)).toEqual(['level', 'time', 'pid', 'hostname', 'req', 'res', 'responseTime', 'msg']);
    expect(Object.keys(completed.req!)).toEqual(['id', 'method', 'path']);
    expect(Object.keys(broken)).toEqual(['level', 'time', 'pid', 'hostname', 'req', 'res', 'err', 'responseTime', 'msg']);
    expect(broken).toMatchObject({
      level: 50,
      msg: 'request aborted',
      req: { path: '/broken' },
      res: {}, // the response had not started: no status was sent
      err: { type: 'Error', code: 'EPIPE', syscall: 'write' },
    });
    expect(lines).toHaveLength(2); // one line per request, whichever of finish, close and error came first
  });

  it('makes an id when the incoming one is missing or malformed, and echoes it', async () => {
    const { logger, lines, entries } = capturedLogger();
    const log = requestLogger(logger);
    const server = http.createServer((req, res) => log(req, res, () => res.end('ok')));
    const response = await request(server).get('/agents').set('X-Request-Id', 'not a valid id!').expect(200);
    await until(() => lines.length > 0);
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(entries()[0].req?.id).toBe(response.headers['x-request-id']);
  });

  it('logs a 5xx at error level, and a request the client abandoned at warn level, without the status it was never sent', async () => {
    const { logger, lines, entries } = capturedLogger();
    const log = requestLogger(logger);
    const server = http.createServer((req, res) =>
      log(req, res, () => {
        if (req.url === '/fail') {
          res.statusCode = 503;
          res.end();
        } // /hang: never answered, the client gives up
      }),
    );
    await request(server).get('/fail').expect(503);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const received = new Promise((resolve) => server.once('request', resolve));
    const hanging = http.get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hang`);
    hanging.on('error', () => undefined);
    await received; // abandoned once the server has it, not before it arrives
    hanging.destroy();
    await until(() => lines.length >= 2);
    server.close();

    const [failed, aborted] = entries();
    expect(failed).toMatchObject({ level: 50, msg: 'request completed', res: { statusCode: 503 } });
    expect(aborted).toMatchObject({ level: 40, msg: 'request aborted', req: { method: 'GET', path: '/hang' }, res: {} });
    expect(aborted.err).toBeUndefined();
  });

  it("logs an upload the client dropped as the client's doing: an info line without a status, no error, no stack", async () => {
    const { logger, lines, entries } = capturedLogger('debug');
    const context = await createTestContext({}, { logger });
    try {
      const account = await context.createAccount();
      const kbId = (await context.as(account).post('/knowledge-bases').send({}).expect(201)).body.id as number;
      const port = await listenOnLoopback(context.app.getHttpServer());
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write(
        `POST /knowledge-bases/${kbId}/sources HTTP/1.1\r\nHost: test\r\nX-Api-Key: ${account.apiKey}\r\n` +
          'Content-Type: multipart/form-data; boundary=dropped\r\nContent-Length: 10000000\r\n\r\n' +
          '--dropped\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\n',
      );
      socket.write(Buffer.alloc(1536 * 1024, 'a'));
      // Dropped once the upload is being stored (its first MiB is in the database), long before its end.
      const stored = `SELECT count(*)::int AS n FROM knowledge_file_chunks WHERE account_id = $1`;
      await eventually(async () => ((await context.app.get(DataSource).query(stored, [account.id]))[0].n > 0 ? true : undefined));
      socket.destroy();
      // Fences: the request's line, and the exception filter's word on the error that follows (multer's "Request aborted").
      const aborted = await eventually(async () => entries().find((entry) => entry.msg === 'request aborted'));
      await eventually(async () => entries().find((entry) => entry.requestId === aborted.req!.id));
      expect(aborted).toMatchObject({ level: 30, req: { method: 'POST', path: `/knowledge-bases/${kbId}/sources` }, res: {} });
      expect(entries().filter((entry) => entry.requestId === aborted.req!.id)).toEqual([
        expect.objectContaining({ level: 20, msg: 'Request abandoned by the client', errorType: 'Error' }),
      ]);
      expect(entries().filter((entry) => entry.level >= 40)).toEqual([]);
      expect(lines.join('\n')).not.toContain('    at ');
    } finally {
      await context.close();
    }
  });
});

describe('Nest logs', () => {
  it('go to the same logger with their context, fields and message', async () => {
    const { logger, lines, entries } = capturedLogger('debug');
    const service = new PinoLoggerService(logger);
    Logger.overrideLogger(service);
    try {
      const nest = new Logger('Exceptions');
      nest.warn({ requestId: 'req-7', reason: 'timeout' }, 'Database unavailable');
      nest.error('Shutdown failed', 'Error: boom\n    at stack');
      nest.log('plain message');
      service.error(new Error('thrown'));
      await until(() => lines.length >= 4);
    } finally {
      Logger.overrideLogger(false);
    }
    const [warned, failed, plain, thrown] = entries();
    expect(warned).toMatchObject({ level: 40, context: 'Exceptions', requestId: 'req-7', reason: 'timeout', msg: 'Database unavailable' });
    expect(failed).toMatchObject({ level: 50, context: 'Exceptions', msg: 'Shutdown failed', stack: '    at stack' }); // frames only: the first line repeats the message
    expect(plain).toMatchObject({ level: 30, context: 'Exceptions', msg: 'plain message' });
    expect(thrown).toMatchObject({ level: 50, msg: 'thrown', err: { message: 'thrown', type: 'Error' } });
  });
});

/**
 * No log line carries request data: a marker planted in every place a client can put data (body fields,
 * names, phones, transcripts, search terms and other query strings, headers, an API key) while every error
 * path is driven (validation 400, the database refusing a value, the database unavailable, an unexpected
 * 500, storage failures), and the marker must be in no line. The database errors come from PostgreSQL
 * (a trigger raises them, with the values in their message and detail, as PostgreSQL's own errors have).
 */
describe('logs without customer data', () => {
  const MARKER = `mrk${randomUUID().replace(/-/g, '')}`;
  const suffix = randomUUID().replace(/-/g, '');
  const { logger, lines, entries } = capturedLogger('debug');
  let app: INestApplication;
  let dataSource: DataSource;
  let apiKey: string;
  let requests = 0;
  /** Requests made, and lines expected: exactly one request line each. */
  const sent = <T>(response: T) => {
    requests++;
    return response;
  };

  /** A trigger that raises a PostgreSQL error of the given SQLSTATE for calls whose name starts with the code. */
  const RAISED = { refused: '22023', unavailable: '57014', unexpected: 'P0001' };

  beforeAll(async () => {
    const config = { ...loadConfig({ ...process.env, RATE_LIMIT: '0' }), logLevel: 'debug' as const };
    app = await createApp(config, process.env.DATABASE_URL!, { logger, openApiAtStartup: false });
    dataSource = app.get(DataSource);
    apiKey = (await app.get(AccountsService).create('Logging')).key.apiKey;
    const cases = Object.values(RAISED).map(
      (code) =>
        `WHEN NEW.name LIKE '${code}%' THEN RAISE EXCEPTION 'refused %', NEW.name USING ERRCODE = '${code}', DETAIL = NEW.phone || NEW.transcript::text;`,
    );
    await dataSource.query(`CREATE FUNCTION log_probe_${suffix}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN CASE ${cases.join(' ')} ELSE END CASE; RETURN NEW; END $$`);
    await dataSource.query(`CREATE TRIGGER log_probe_${suffix} BEFORE INSERT ON calls FOR EACH ROW EXECUTE FUNCTION log_probe_${suffix}()`);
  });
  afterAll(async () => {
    await dataSource.query(`DROP TRIGGER log_probe_${suffix} ON calls`);
    await dataSource.query(`DROP FUNCTION log_probe_${suffix}()`);
    await app.close();
  });

  /** Headers a client may send, each carrying the marker. */
  const markedHeaders = () => ({
    'User-Agent': `agent-${MARKER}`,
    Referer: `https://shop.example.com/?q=${MARKER}`,
    Cookie: `session=${MARKER}`,
    Authorization: `Bearer ${MARKER}`,
    'X-Forwarded-For': '203.0.113.7',
    'X-Customer-Note': MARKER,
  });
  const call = (name: string) => ({
    name: `${name} ${MARKER}`,
    phone: '+91 98765 43210',
    email: `${MARKER}@example.com`,
    transcript: [{ speaker: 'user', text: `my secret is ${MARKER}` }],
    extractedData: { note: MARKER },
  });
  const post = (body: object, path = '/calls') =>
    request(app.getHttpServer()).post(`${path}?ref=${MARKER}`).set('X-Api-Key', apiKey).set(markedHeaders()).send(body);

  it('finds the marker in no line, whatever the error path, with exactly one line per request', async () => {
    // Validation: 400s
    sent(await post({ name: `${MARKER}${'x'.repeat(300)}` }).expect(400));
    sent(await post({ phone: `call ${MARKER}` }).expect(400));
    sent(
      await request(app.getHttpServer())
        .get(`/calls?search=${MARKER}${'x'.repeat(300)}`)
        .set('X-Api-Key', apiKey)
        .expect(400),
    );
    // The database refuses a value (the safety net): 400
    sent(await post(call(RAISED.refused)).expect(400));
    // The database unavailable (class 57, as a statement timeout): 503
    sent(await post(call(RAISED.unavailable)).expect(503));
    // Unexpected: 500
    sent(await post(call(RAISED.unexpected)).expect(500));
    // Successful requests with data in the body and the query string
    const created = sent(await post(call('Priya')).expect(201));
    sent(
      await request(app.getHttpServer())
        .get(`/calls?search=${MARKER}&status=${MARKER}`)
        .set('X-Api-Key', apiKey)
        .set(markedHeaders())
        .expect(200),
    );
    sent(await post({ name: MARKER, systemPrompt: `prompt ${MARKER}` }, '/agents').expect(201));
    // A key that is wrong, and one shaped like the marker: 401
    sent(await request(app.getHttpServer()).get('/agents').set('X-Api-Key', `vak_${MARKER}`).expect(401));
    // A recording upload whose signed playback URL (signature in the query string) is then fetched
    sent(
      await request(app.getHttpServer())
        .put(`/calls/${created.body.id}/recording?ref=${MARKER}`)
        .set('X-Api-Key', apiKey)
        .set('Content-Type', 'audio/mpeg')
        .send(Buffer.from(MARKER))
        .expect(204),
    );
    const playback = new URL(
      sent(await request(app.getHttpServer()).get(`/calls/${created.body.id}/recording`).set('X-Api-Key', apiKey).expect(200)).body.url,
    );
    sent(await request(app.getHttpServer()).get(`${playback.pathname}${playback.search}`).expect(200));

    await until(() => lines.filter((line) => line.includes('"responseTime"')).length >= requests);
    const [storageKey] = await dataSource.query(`SELECT recording_key FROM calls WHERE id = $1`, [created.body.id]);

    expect(lines.filter((line) => line.includes(MARKER))).toEqual([]);
    expect(
      lines.filter(
        (line) =>
          line.includes(apiKey) || line.includes('98765 43210') || line.includes('9876543210') || line.includes(storageKey.recording_key),
      ),
    ).toEqual([]);
    expect(lines.filter((line) => line.includes(playback.searchParams.get('signature')!))).toEqual([]);
    // Exactly one line per request, and the error paths were really logged (with what may be logged).
    expect(entries().filter((entry) => entry.responseTime !== undefined)).toHaveLength(requests);
    const logged = (msg: string) => entries().filter((entry) => entry.msg === msg);
    expect(logged('The database refused a value of the request')).toEqual([
      expect.objectContaining({ err: expect.objectContaining({ type: 'DatabaseError', code: RAISED.refused }) }),
    ]);
    expect(logged('Database unavailable')).toEqual([
      expect.objectContaining({
        err: expect.objectContaining({ type: 'DatabaseError', code: RAISED.unavailable, routine: expect.any(String) }),
      }),
    ]);
    expect(logged('Unexpected error')).toEqual([
      expect.objectContaining({
        err: expect.objectContaining({ type: 'DatabaseError', code: RAISED.unexpected, stack: expect.stringContaining('    at ') }),
      }),
    ]);
  });

  it('keeps of a raw pg error (the pg pool, no TypeORM) its type, SQLSTATE and names, never its message, detail or where', async () => {
    const client = new Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      const error = await client
        .query(
          `DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '23505', MESSAGE = 'dup ${MARKER}', DETAIL = 'Key (name)=(${MARKER})', CONSTRAINT = 'UQ_probe', TABLE = 'calls'; END $$`,
        )
        .catch((caught: unknown) => caught);
      expect((error as { constructor: { name: string } }).constructor.name).toBe('DatabaseError');
      const serialized = serializeError(error);
      expect(serialized).toMatchObject({ type: 'DatabaseError', code: '23505', constraint: 'UQ_probe', table: 'calls', severity: 'ERROR' });
      expect(JSON.stringify(serialized)).not.toContain(MARKER);
      const allowed = ['type', 'code', 'severity', 'constraint', 'table', 'column', 'dataType', 'routine', 'stack'];
      expect(Object.keys(serialized).filter((key) => !allowed.includes(key))).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it('removes the fields that carry request data wherever they are logged by mistake (redact)', async () => {
    const captured = capturedLogger('debug');
    captured.logger.warn(
      {
        query: `SELECT '${MARKER}'`,
        parameters: [MARKER],
        headers: { cookie: MARKER },
        req: { headers: { cookie: MARKER }, url: `/calls?search=${MARKER}` },
        kept: 'yes',
      },
      'oops',
    );
    await until(() => captured.lines.length > 0);
    expect(captured.entries()[0]).toMatchObject({ kept: 'yes', msg: 'oops' });
    expect(captured.lines.join('\n')).not.toContain(MARKER);
  });

  it.each([
    ['local: the recordings directory cannot be written', 'local'],
    ['s3: the store is unreachable', 's3'],
  ])('finds no storage key, path or marker when storage fails (%s)', async (_, driver) => {
    const storage = driver === 'local' ? await localTestStorage() : await s3TestStorage();
    const captured = capturedLogger('debug');
    // A job queue of its own: a job another app of this worker's database queued (a spoken call's recording to
    // assemble) must not be run here, writing into this storage (once, on Node 24, `.incoming` was found a directory).
    const jobQueueSchema = `jobs_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    const config = { ...loadConfig({ ...process.env, RATE_LIMIT: '0' }), logLevel: 'debug' as const, jobQueueSchema, ...storage.config };
    // Port 9 (discard), which nothing serves here; a free ephemeral port could be taken meanwhile by another test file.
    if (driver === 's3') config.storage = { ...config.storage, s3: { ...config.storage.s3!, endpoint: 'http://127.0.0.1:9' } };
    const storageApp = await createApp(config, process.env.DATABASE_URL!, { logger: captured.logger, openApiAtStartup: false });
    try {
      if (driver === 'local') {
        const incoming = path.join(config.dataDir, 'recordings', '.incoming');
        await mkdir(path.dirname(incoming), { recursive: true });
        await rm(incoming, { recursive: true, force: true });
        await writeFile(incoming, 'not a directory');
      }
      const key = (await storageApp.get(AccountsService).create('Storage')).key.apiKey;
      const callId = (await request(storageApp.getHttpServer()).post('/calls').set('X-Api-Key', key).send(call('Storage')).expect(201)).body
        .id;
      await request(storageApp.getHttpServer())
        .put(`/calls/${callId}/recording?ref=${MARKER}`)
        .set('X-Api-Key', key)
        .set(markedHeaders())
        .set('Content-Type', 'audio/mpeg')
        .send(Buffer.from(MARKER))
        .expect(503);
      await until(() => captured.lines.filter((line) => line.includes('"responseTime"')).length >= 2);

      expect(
        captured.lines.filter(
          (line) => line.includes(MARKER) || line.includes(key) || line.includes(config.dataDir) || /recordings\/[0-9a-f]{2}\//.test(line),
        ),
      ).toEqual([]);
      const failure = captured.entries().find((entry) => entry.err?.type === 'RecordingStorageError');
      expect(failure).toMatchObject({ level: 40, err: { reason: expect.stringMatching(/^could not store a recording: /) } });
    } finally {
      await storageApp.close();
      await storage.stop();
    }
  });
});
