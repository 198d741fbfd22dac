import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import { AppConfig } from './config/config';
import { answerClientErrors } from './common/client-error';
import { applySecurity } from './common/security';
import { buildOpenApiDocument, serveOpenApiDocument } from './openapi';

/** Builds the HTTP application (not yet listening): used by main.ts and by the tests alike. */
export async function createApp(config: AppConfig, databaseUrl: string): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, databaseUrl), {
    bodyParser: false, // JsonBodyMiddleware parses, so that its errors have the API's shape
    logger: ['error', 'warn'],
  });
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  answerClientErrors(app.getHttpServer());
  applySecurity(app, config);
  app.set('etag', false);
  serveOpenApiDocument(app, await buildOpenApiDocument(app));
  await app.init();
  app.useLogger(app.get(Logger)); // after init: route-mapping chatter stays out of the logs
  return app;
}
