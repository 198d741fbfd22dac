import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { AppModule } from './app.module';
import { AppConfig } from './config/config';
import { ApiExpressAdapter } from './common/api-express-adapter';
import { answerClientErrors } from './common/client-error';
import { applyHttpTimeouts, httpTimeouts } from './common/http-timeouts';
import { createLogger, PinoLoggerService, requestLogger } from './common/logger';
import { applySecurity } from './common/security';
import { serveOpenApiDocument } from './openapi';

/** How createApp builds the application beyond its configuration. */
export interface AppOptions {
  /** Where request logs and Nest's logs go (main.ts passes its own, to flush it at exit). */
  logger?: Logger;
  /** The OpenAPI document is built at startup (the default: a service), or at the first request for it (the tests). */
  openApiAtStartup?: boolean;
}

/** Builds the HTTP application (not yet listening): used by main.ts and by the tests alike. */
export async function createApp(config: AppConfig, databaseUrl: string, options: AppOptions = {}): Promise<INestApplication> {
  const { logger = createLogger(config), openApiAtStartup = true } = options;
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, databaseUrl), new ApiExpressAdapter(), {
    bodyParser: false, // JsonBodyGuard parses, once the request is authenticated and counted, in the API's error shape
    logger: ['error', 'warn'],
  });
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  const server = app.getHttpServer();
  answerClientErrors(server);
  applyHttpTimeouts(server, httpTimeouts(config));
  // Beyond it, Node closes a new connection at once: slow clients holding connections cannot exhaust the process.
  server.maxConnections = config.httpMaxConnections;
  app.use(requestLogger(logger));
  applySecurity(app, config);
  app.set('etag', false);
  await serveOpenApiDocument(app, { atStartup: openApiAtStartup });
  await app.init();
  app.useLogger(new PinoLoggerService(logger)); // after init: route-mapping chatter stays out of the logs
  return app;
}
