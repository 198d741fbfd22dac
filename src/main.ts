import './runtime-flags';
import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { createApp } from './app';
import { createLogger, flushLogs } from './common/logger';
import { AppConfig, ConfigError, loadConfig } from './config/config';
import { runMigrations } from './database/migrate';
import { searchLocaleWarning } from './database/search-locale';
import { OpenDatabase, openDatabase } from './database/open-database';
import { drainHttpServer } from './shutdown';

function banner(config: AppConfig, database: OpenDatabase, migrations: string[], startedInMs: number): string {
  const base = config.publicBaseUrl;
  return [
    `Voice Agent API listening on port ${config.port} (ready in ${startedInMs} ms)`,
    `  API:               ${base}`,
    `  API docs:          ${base}/docs   (OpenAPI document: ${base}/openapi.json)`,
    `  Health:            ${base}/health`,
    `  Database:          ${database.description}${migrations.length ? `; applied ${migrations.length} migration(s)` : ''}`,
    `  Create an API key: npm run cli -- account:create --name "Acme"`,
    `  Then:              curl -H "X-Api-Key: <key>" ${base}/agents`,
    '',
  ].join('\n');
}

/** SIGTERM/SIGINT: stop accepting, finish the requests accepted, close the pool, stop the embedded PostgreSQL. */
function stopGracefully(app: INestApplication, database: OpenDatabase, logger: Logger): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`${signal} received: finishing in-flight requests\n`);
    try {
      await drainHttpServer(app.getHttpServer());
      await app.close();
      await database.stop();
      flushLogs(logger);
      process.exit(0);
    } catch (error) {
      flushLogs(logger);
      console.error('Shutdown failed', error);
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const config = loadConfig();
  const database = await openDatabase(config);
  try {
    const migrations = await runMigrations(database.url, config);
    const logger = createLogger(config);
    const app = await createApp(config, database.url, logger);
    await app.listen(config.port);
    process.stdout.write(banner(config, database, migrations, Date.now() - startedAt));
    const localeWarning = await searchLocaleWarning(app.get(DataSource));
    if (localeWarning) logger.warn(localeWarning);
    stopGracefully(app, database, logger);
  } catch (error) {
    await database.stop();
    throw error;
  }
}

main().catch((error) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
