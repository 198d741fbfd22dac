import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Logger } from '@nestjs/common';
import request from 'supertest';
import { generateApiKey } from '../src/auth/api-key-token';
import { createLogger, PinoLoggerService, requestLogger } from '../src/common/logger';

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
  return { logger, lines, entries: () => lines.map((line) => JSON.parse(line) as Record<string, any>) };
}

const until = async (condition: () => boolean) => {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
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
    expect(entry).toMatchObject({ level: 30, msg: 'request completed', req: { id: 'req-42', method: 'GET', path: '/calls' }, res: { statusCode: 200 } });
    expect(entry.req).toEqual({ id: 'req-42', method: 'GET', path: '/calls' });
    expect(typeof entry.responseTime).toBe('number');
    const text = lines.join('\n');
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain('Rahul');
    expect(text).not.toContain('signature');
  });

  it('makes an id when the incoming one is missing or malformed, and echoes it', async () => {
    const { logger, lines, entries } = capturedLogger();
    const log = requestLogger(logger);
    const server = http.createServer((req, res) => log(req, res, () => res.end('ok')));
    const response = await request(server).get('/agents').set('X-Request-Id', 'not a valid id!').expect(200);
    await until(() => lines.length > 0);
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(entries()[0].req.id).toBe(response.headers['x-request-id']);
  });

  it('logs a 5xx and a request the client abandoned at error level', async () => {
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
    const hanging = http.get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hang`);
    hanging.on('error', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    hanging.destroy();
    await until(() => lines.length >= 2);
    server.close();

    const [failed, aborted] = entries();
    expect(failed).toMatchObject({ level: 50, msg: 'request completed', res: { statusCode: 503 } });
    expect(aborted).toMatchObject({ level: 50, msg: 'request aborted', req: { method: 'GET', path: '/hang' } });
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
    expect(failed).toMatchObject({ level: 50, context: 'Exceptions', msg: 'Shutdown failed', stack: 'Error: boom\n    at stack' });
    expect(plain).toMatchObject({ level: 30, context: 'Exceptions', msg: 'plain message' });
    expect(thrown).toMatchObject({ level: 50, msg: 'thrown', err: { message: 'thrown', type: 'Error' } });
  });
});
