import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Body, Controller, Get, Header, HttpCode, INestApplication, Module, Post, Query, Req, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express, Request, Response } from 'express';
import request from 'supertest';
import { ApiExpressAdapter } from '../src/common/api-express-adapter';

@Controller('probe')
class ProbeController {
  @Get('express')
  express(@Req() req: Request, @Query('q') q: string) {
    return { q, path: req.path, host: req.hostname };
  }

  @Get('raw')
  raw(@Res() res: Response) {
    res.status(203).type('text').send('raw');
  }

  @Post('echo')
  @HttpCode(200)
  echo(@Body() body: unknown) {
    return body;
  }

  @Get('typed')
  @Header('Content-Type', 'application/vnd.example+json')
  typed() {
    return { typed: true };
  }

  @Get('text')
  text() {
    return 'plain';
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

describe('the HTTP server of ApiExpressAdapter', () => {
  let app: INestApplication;
  let server: Server;
  beforeAll(async () => {
    app = await NestFactory.create(ProbeModule, new ApiExpressAdapter(), { logger: false });
    await app.init();
    server = app.getHttpServer();
  });
  afterAll(() => app.close());

  it("makes every request and response with the Express app's prototypes, before Express sees them (its setPrototypeOf changes nothing)", async () => {
    const express = app.getHttpAdapter().getInstance() as Express;
    const seen: [unknown, unknown][] = []; // the prototypes as the server made them, before Express ran
    const capture = (req: IncomingMessage, res: ServerResponse) => seen.push([Object.getPrototypeOf(req), Object.getPrototypeOf(res)]);
    server.prependListener('request', capture);
    try {
      await request(server).get('/probe/express?q=1').expect(200);
      await request(server).post('/probe/echo').send({ a: 1 }).expect(200);
    } finally {
      server.removeListener('request', capture);
    }
    expect(seen).toHaveLength(2);
    for (const [requestPrototype, responsePrototype] of seen) {
      expect(requestPrototype).toBe(express.request);
      expect(responsePrototype).toBe(express.response);
    }
  });

  it("keeps Express's request and response API, and request bodies still stream", async () => {
    await request(server)
      .get('/probe/express?q=hello')
      .set('Host', 'api.example.com')
      .expect(200, { q: 'hello', path: '/probe/express', host: 'api.example.com' });
    const raw = await request(server).get('/probe/raw').expect(203);
    expect(raw.text).toBe('raw');
    expect(raw.headers['content-type']).toMatch(/^text\/plain/);
    await request(server)
      .post('/probe/echo')
      .send({ name: 'Asha', list: [1, 2] })
      .expect(200, { name: 'Asha', list: [1, 2] });
  });

  it("sends a handler's result as Express's own adapter does: status, headers and bytes, HEAD, conditional requests, a handler's Content-Type", async () => {
    const express = await NestFactory.create(ProbeModule, new ExpressAdapter(), { logger: false });
    for (const each of [app, express]) (each.getHttpAdapter().getInstance() as Express).set('etag', false); // as createApp does
    await express.init();
    const answer = async (
      target: INestApplication,
      method: 'get' | 'head' | 'post',
      path: string,
      headers: Record<string, string> = {},
    ) => {
      const client = request(target.getHttpServer());
      const response = await client[method](path)
        .set(headers)
        .send(method === 'post' ? { name: 'Āśā 😀', list: [1, 2] } : undefined)
        .buffer(true)
        .parse((res, done) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => done(null, Buffer.concat(chunks)));
        });
      const { date: _date, ...kept } = response.headers;
      return { status: response.status, headers: kept, body: (response.body as Buffer | undefined)?.toString('utf8') ?? '' };
    };
    try {
      const cases: [method: 'get' | 'head' | 'post', path: string, headers?: Record<string, string>][] = [
        ['get', '/probe/express?q=%C3%A9%E2%82%AC'],
        ['head', '/probe/express?q=%C3%A9%E2%82%AC'],
        ['post', '/probe/echo'],
        ['get', '/probe/express', { 'If-None-Match': '*' }],
        ['get', '/probe/express', { 'If-Modified-Since': new Date(Date.now() + 60_000).toUTCString() }],
        ['get', '/probe/typed'],
        ['get', '/probe/text'],
      ];
      for (const [method, path, headers] of cases) {
        const ours = await answer(app, method, path, headers);
        expect({ method, path, ...ours }).toEqual({ method, path, ...(await answer(express, method, path, headers)) });
      }
      expect((await answer(app, 'get', '/probe/express?q=%C3%A9')).headers['content-type']).toBe('application/json; charset=utf-8');
    } finally {
      await express.close();
    }
  });

  it('refuses the server options it does not implement instead of ignoring them', async () => {
    for (const options of [{ forceCloseConnections: true }, { return503OnClosing: true }, { httpsOptions: {} }]) {
      await expect(NestFactory.create(ProbeModule, new ApiExpressAdapter(), { logger: false, ...options })).rejects.toThrow(
        /does not support/,
      );
    }
  });
});
