import {
  Controller,
  Delete,
  Get,
  INestApplication,
  LoggerService,
  Module,
  NotFoundException,
  RequestMethod,
  Res,
  Type,
} from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { APP_FILTER, APP_GUARD, ModulesContainer, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
import request from 'supertest';
import { AllExceptionsFilter } from '../src/common/all-exceptions.filter';
import { ApiErrors, NoContent } from '../src/common/api-errors.decorator';
import { ApiExpressAdapter } from '../src/common/api-express-adapter';
import { ResponseContext, responseDeclaration, Responds, ResponseMapping, WritesOwnResponse } from '../src/common/responds';
import { APP_CONFIG } from '../src/config/config.module';
import { createTestContext, TestContext } from './helpers';
import { registeredRoutes } from './routes';

/** A route of a Nest controller: `GET /agents/:agentId`, with its handler. */
interface NestRoute {
  route: string;
  name: string;
  handler: object;
}

const asList = (path: string | string[] | undefined): string[] => (Array.isArray(path) ? path : [path ?? '']);
const joinPath = (base: string, path: string) => `/${base}/${path}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');

/** Every handler of every controller the application registered, with the routes Express serves it on. */
function nestRoutes(app: INestApplication): NestRoute[] {
  const routes: NestRoute[] = [];
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Type<unknown>;
      const prototype = controller.prototype as Record<string, object>;
      for (const key of Object.getOwnPropertyNames(prototype)) {
        const handler = prototype[key];
        const paths = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
        if (key === 'constructor' || paths === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
        for (const base of asList(Reflect.getMetadata(PATH_METADATA, controller) as string | string[] | undefined)) {
          for (const path of asList(paths))
            routes.push({ route: `${method} ${joinPath(base, path)}`, name: `${controller.name}.${key}`, handler });
        }
      }
    }
  }
  return routes;
}

/** Served by Swagger's own Express handlers, which no Nest guard sees (a document of the API, not a row). */
const isSwaggerRoute = (route: string) => / \/(docs(\/|$)|openapi\.json$)/.test(route);

describe('response mapping: every route of the application', () => {
  let context: TestContext;
  beforeAll(async () => (context = await createTestContext()));
  afterAll(() => context.close());

  it('walks every route Express serves (all of them but the Swagger document and UI are Nest handlers)', () => {
    const walked = new Set(nestRoutes(context.app).map(({ route }) => route));
    const served = registeredRoutes(context).filter((route) => !isSwaggerRoute(route));
    expect(served.filter((route) => !walked.has(route))).toEqual([]);
    expect(walked.size).toBeGreaterThan(40);
  });

  it('declares on every route a mapper (@Responds), no body (a 204) or a response the handler writes itself', () => {
    const undeclared = nestRoutes(context.app)
      .filter(({ handler }) => responseDeclaration(handler) === undefined)
      .map(({ route, name }) => `${route} (${name})`);
    expect(undeclared).toEqual([]);
  });
});

/** A row with a field the response must never carry. */
interface ProbeRow {
  id: number;
  secret: string;
}

class ProbeResponse {
  id: number;
}

const SECRET = 'the-secret-field-value';
const row = (id: number): ProbeRow => ({ id, secret: SECRET });
const toProbeResponse = ({ id }: ProbeRow): ProbeResponse => ({ id });

/** Every way a route can declare its response, and one that declares none. */
@Controller('probe')
class ProbeController {
  undeclaredCalls = 0;

  @Get('one')
  @Responds(ProbeResponse, toProbeResponse)
  one(): ProbeRow {
    return row(1);
  }

  @Get('list')
  @Responds([ProbeResponse], toProbeResponse)
  list(): Promise<ProbeRow[]> {
    return Promise.resolve([row(1), row(2), row(3)]);
  }

  @Get('context')
  @Responds(ProbeResponse, (_row: ProbeRow, { publicBaseUrl }: ResponseContext) => ({ id: publicBaseUrl.length }))
  withContext(): ProbeRow {
    return row(1);
  }

  @Get('not-a-list')
  @Responds([ProbeResponse], toProbeResponse)
  notAList(): ProbeRow[] {
    return row(1) as unknown as ProbeRow[];
  }

  @Get('missing')
  @Responds(ProbeResponse, toProbeResponse)
  missing(): ProbeRow {
    throw new NotFoundException(`Probe not found (${SECRET.length})`);
  }

  @Get('undeclared')
  @ApiErrors(404) // documentation alone declares nothing about the body
  undeclared(): ProbeRow {
    this.undeclaredCalls++;
    return row(1);
  }

  @Delete('no-body')
  @NoContent()
  noBodyWithValue(): ProbeRow {
    return row(1);
  }

  @Delete('no-body-empty')
  @NoContent()
  noBody(): void {}

  @Get('own')
  @WritesOwnResponse()
  own(@Res() response: Response): void {
    response.type('text/plain').send('written by the handler');
  }
}

@Module({
  controllers: [ProbeController],
  providers: [
    { provide: APP_CONFIG, useValue: { publicBaseUrl: 'https://api.example.com' } },
    { provide: APP_GUARD, useClass: ResponseMapping },
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
  ],
})
class ProbeModule {}

/** What the application logs, each call's arguments as text (an Error by its name, message and stack). */
class CapturedLogs implements LoggerService {
  readonly lines: string[] = [];
  private record = (...args: unknown[]) =>
    this.lines.push(
      JSON.stringify(args, (_key, value: unknown) =>
        value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value,
      ),
    );
  log = this.record;
  error = this.record;
  warn = this.record;
}

describe('ResponseMapping, the global guard', () => {
  let app: INestApplication;
  let logs: CapturedLogs;
  beforeAll(async () => {
    logs = new CapturedLogs();
    app = await NestFactory.create(ProbeModule, new ApiExpressAdapter(), { logger: logs });
    await app.init();
  });
  afterAll(() => app.close());

  it("sends what the route's mapper makes of the row, never the row", async () => {
    const response = await request(app.getHttpServer()).get('/probe/one').expect(200);
    expect(response.body).toEqual({ id: 1 });
  });

  it('maps each element of a list', async () => {
    const response = await request(app.getHttpServer()).get('/probe/list').expect(200);
    expect(response.body).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
  });

  it('gives the mapper the response context (PUBLIC_BASE_URL)', async () => {
    const response = await request(app.getHttpServer()).get('/probe/context').expect(200);
    expect(response.body).toEqual({ id: 'https://api.example.com'.length });
  });

  it('refuses a route that declares no response, before its handler runs: a 500, logged with the route and no value', async () => {
    const before = logs.lines.length;
    const response = await request(app.getHttpServer()).get('/probe/undeclared').expect(500);
    expect(response.body).toEqual({ statusCode: 500, error: 'Internal Server Error', message: 'Internal server error' });
    expect(app.get(ProbeController).undeclaredCalls).toBe(0);
    const logged = logs.lines.slice(before).join('\n');
    expect(logged).toContain('ProbeController.undeclared declares no response');
    expect(logged).not.toContain(SECRET);
    expect(JSON.stringify(response.body)).not.toContain(SECRET);
  });

  it('refuses a value from a route that declares no body, without sending or logging it', async () => {
    const before = logs.lines.length;
    const response = await request(app.getHttpServer()).delete('/probe/no-body').expect(500);
    expect(JSON.stringify(response.body)).not.toContain(SECRET);
    const logged = logs.lines.slice(before).join('\n');
    expect(logged).toContain('ProbeController.noBodyWithValue returned a value');
    expect(logged).not.toContain(SECRET);
  });

  it('answers a route without a body with its 204, and leaves a response the handler writes alone', async () => {
    await request(app.getHttpServer()).delete('/probe/no-body-empty').expect(204, '');
    await request(app.getHttpServer()).get('/probe/own').expect(200, 'written by the handler');
  });

  it('refuses a list route that returns something else than an array, without sending or logging it', async () => {
    const before = logs.lines.length;
    const response = await request(app.getHttpServer()).get('/probe/not-a-list').expect(500);
    expect(JSON.stringify(response.body)).not.toContain(SECRET);
    const logged = logs.lines.slice(before).join('\n');
    expect(logged).toContain('ProbeController.notAList is a list route that returned something else');
    expect(logged).not.toContain(SECRET);
  });

  it("answers a mapped route's error in the error shape, not through its mapper", async () => {
    const response = await request(app.getHttpServer()).get('/probe/missing').expect(404);
    expect(response.body).toEqual({ statusCode: 404, error: 'Not Found', message: `Probe not found (${SECRET.length})` });
  });

  it('refuses to start on an HTTP adapter that would send the rows as they are (not ApiExpressAdapter)', async () => {
    const plain = await NestFactory.create(ProbeModule, new ExpressAdapter(), { logger: false });
    try {
      await expect(plain.init()).rejects.toThrow(/rows would be sent unmapped/);
    } finally {
      await plain.close();
    }
  });
});
