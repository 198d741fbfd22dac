import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import request from 'supertest';
import { AllExceptionsFilter } from '../src/common/all-exceptions.filter';
import { ApiExpressAdapter } from '../src/common/api-express-adapter';

/** Over 40 KB of JSON with two- to four-byte UTF-8 characters. */
const LARGE = Array.from({ length: 800 }, (_, index) => ({ index, name: `प्रिया 🙂 María ${index}` }));

@Controller('things')
class ThingsController {
  @Get('plain')
  plain() {
    return { ok: true };
  }

  @Get('large')
  large() {
    return LARGE;
  }
}

@Module({ controllers: [ThingsController], providers: [{ provide: APP_FILTER, useClass: AllExceptionsFilter }] })
class ThingsModule {}

describe('JSON replies (a route\'s result, through Nest and Express)', () => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await NestFactory.create(ThingsModule, new ApiExpressAdapter(), { logger: false });
    await app.init();
  });
  afterAll(() => app.close());

  it('sends plain objects as they are, as JSON with their length', async () => {
    const response = await request(app.getHttpServer()).get('/things/plain').expect(200, { ok: true });
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['content-length']).toBe(String(Buffer.byteLength('{"ok":true}')));
    const head = await request(app.getHttpServer()).head('/things/plain').expect(200);
    expect(head.text).toBeUndefined();
  });

  it('gives a large JSON body with multi-byte characters its length in bytes', async () => {
    const response = await request(app.getHttpServer()).get('/things/large').expect(200);
    expect(response.body).toEqual(LARGE);
    expect(response.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify(LARGE))));
    expect(Buffer.byteLength(response.text)).toBe(Buffer.byteLength(JSON.stringify(LARGE)));
  });
});
