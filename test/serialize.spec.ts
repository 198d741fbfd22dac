import { Controller, Get, INestApplication, Module } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import { PATH_METADATA } from '@nestjs/common/constants';
import request from 'supertest';
import { Agent } from '../src/agents/agent.entity';
import { AllExceptionsFilter } from '../src/common/all-exceptions.filter';
import { ApiExpressAdapter } from '../src/common/api-express-adapter';
import { Serialize } from '../src/common/serialize';

class NameResponse {
  name!: string;
}
const toNameResponse = (agent: Agent): NameResponse => ({ name: agent.name });
const agent = (name: string) => Object.assign(new Agent(), { id: 1, accountId: 7, name });

/** Over 40 KB of JSON with two- to four-byte UTF-8 characters. */
const LARGE = Array.from({ length: 800 }, (_, index) => ({ index, name: `प्रिया 🙂 María ${index}` }));

@Controller('things')
class ThingsController {
  @Get('one')
  @Serialize(NameResponse, toNameResponse)
  one() {
    return agent('Asha');
  }

  @Serialize(NameResponse, toNameResponse, { isArray: true }) // above the route decorator this time
  @Get('many')
  async many() {
    return [agent('Asha'), agent('Ravi')];
  }

  @Get('leaky')
  leaky() {
    return agent('Leak');
  }

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

describe('@Serialize and the reply check', () => {
  let app: INestApplication;
  beforeAll(async () => {
    app = await NestFactory.create(ThingsModule, new ApiExpressAdapter(), { logger: false });
    await app.init();
  });
  afterAll(() => app.close());

  it('maps one result and every item of a list, on either side of the route decorator', async () => {
    await request(app.getHttpServer()).get('/things/one').expect(200, { name: 'Asha' });
    await request(app.getHttpServer()).get('/things/many').expect(200, [{ name: 'Asha' }, { name: 'Ravi' }]);
  });

  it('keeps the handler name and the route metadata on the wrapped handler', () => {
    const many = ThingsController.prototype.many;
    expect(many.name).toBe('many');
    expect(Reflect.getMetadata(PATH_METADATA, many)).toBe('many');
  });

  it('refuses to send an entity returned without @Serialize: a generic 500 that leaks nothing', async () => {
    const response = await request(app.getHttpServer()).get('/things/leaky').expect(500);
    expect(response.body).toEqual({ statusCode: 500, error: 'Internal Server Error', message: 'Internal server error' });
    expect(JSON.stringify(response.body)).not.toContain('Leak');
  });

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
