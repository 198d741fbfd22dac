import { Writable } from 'node:stream';
import pino from 'pino';
import pinoHttp from 'pino-http';
import request from 'supertest';
import * as http from 'node:http';
import { loggerOptions } from '../src/common/logger';
import { generateApiKey } from '../src/auth/api-key-token';

describe('request logs', () => {
  it('carry a request id, method, path and status, and never a header, the API key or the query string', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const options = loggerOptions({ logLevel: 'info' }).pinoHttp as Exclude<Parameters<typeof pinoHttp>[0], undefined>;
    const logger = pinoHttp({ ...options, logger: pino({ level: 'info' }, sink) });
    const server = http.createServer((req, res) => {
      logger(req, res);
      res.end('ok');
    });
    const apiKey = generateApiKey().apiKey;
    await request(server).get('/calls?search=Rahul&signature=abc').set('X-Api-Key', apiKey).set('X-Request-Id', 'req-42').expect(200);

    const log = lines.join('');
    const entry = JSON.parse(lines[0]);
    expect(entry.req).toEqual({ id: 'req-42', method: 'GET', path: '/calls' });
    expect(entry.res).toEqual({ statusCode: 200 });
    expect(log).not.toContain(apiKey);
    expect(log).not.toContain('Rahul');
    expect(log).not.toContain('signature');
  });
});
