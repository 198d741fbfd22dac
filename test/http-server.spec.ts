import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Body, Controller, Get, HttpCode, INestApplication, Module, Post, Query, Req, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
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

  it('refuses the server options it does not implement instead of ignoring them', async () => {
    for (const options of [{ forceCloseConnections: true }, { return503OnClosing: true }, { httpsOptions: {} }]) {
      await expect(NestFactory.create(ProbeModule, new ApiExpressAdapter(), { logger: false, ...options })).rejects.toThrow(
        /does not support/,
      );
    }
  });
});
