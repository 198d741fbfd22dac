import './runtime-flags';
import 'reflect-metadata';
import type { Server } from 'node:http';
import { INestApplication } from '@nestjs/common';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { createApp } from './app';
import { createLogger, flushLogs } from './common/logger';
import { describeStartupFailure, StartupError } from './common/startup-error';
import { AppConfig, loadConfig } from './config/config';
import { prepareDataDir, removeCreatedDirs } from './config/data-dir';
import { runMigrations } from './database/migrate';
import { searchLocaleWarning } from './database/search-locale';
import { OpenDatabase, openDatabase } from './database/open-database';
import { drainHttpServer } from './shutdown';
import { VoiceGateway } from './voice/voice.gateway';

/** Says something about the process's life (start, notes, stop) at info level, whatever LOG_LEVEL hides (but silent). */
type Announce = (message: string, fields?: Record<string, unknown>, details?: string[]) => void;

/**
 * On a terminal: readable lines (with `details` under the message). Otherwise: JSON lines through the logger,
 * like every other line of the stream (`fields` carry the details).
 */
function announcer(logger: Logger): Announce {
  if (process.stdout.isTTY) return (message, _fields, details = []) => process.stdout.write([message, ...details, ''].join('\n'));
  const lifecycle = logger.isLevelEnabled('info') || logger.level === 'silent' ? logger : logger.child({}, { level: 'info' });
  return (message, fields = {}) => lifecycle.info(fields, message);
}

function announceReady(announce: Announce, config: AppConfig, database: OpenDatabase, migrations: string[], startedInMs: number): void {
  const base = config.publicBaseUrl;
  const createKey = 'npm run cli -- account:create --name "Acme"';
  announce(
    `Voice Agent API listening on port ${config.port} (ready in ${startedInMs} ms)`,
    {
      port: config.port,
      readyInMs: startedInMs,
      api: base,
      docs: `${base}/docs`,
      openapi: `${base}/openapi.json`,
      health: `${base}/health`,
      database: database.description,
      migrationsApplied: migrations,
      createApiKey: createKey,
    },
    [
      `  API:               ${base}`,
      `  API docs:          ${base}/docs   (OpenAPI document: ${base}/openapi.json)`,
      `  Health:            ${base}/health`,
      `  Database:          ${database.description}${migrations.length ? `; applied ${migrations.length} migration(s)` : ''}`,
      `  Create an API key: ${createKey}`,
      `  Then:              curl -H "X-Api-Key: <key>" ${base}/agents`,
    ],
  );
}

/** SIGTERM/SIGINT: stop accepting, finish the requests accepted, close the pool, stop the embedded PostgreSQL. */
function stopGracefully(app: INestApplication, database: OpenDatabase, logger: Logger, announce: Announce): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    announce(`${signal} received: finishing in-flight requests`, { signal });
    try {
      // Voice sockets first: the HTTP server's close waits for upgraded sockets, and their conversations go on elsewhere.
      await app.get(VoiceGateway).closeAll();
      await drainHttpServer(app.getHttpServer() as Server);
      await app.close();
      await database.stop();
      announce('Stopped', { signal });
      flushLogs(logger);
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'Shutdown failed');
      flushLogs(logger);
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/** app.listen, with a port taken said in one line. */
async function listen(app: INestApplication, port: number): Promise<void> {
  await app.listen(port).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE' && error.code !== 'EACCES') throw error;
    const problem = error.code === 'EADDRINUSE' ? 'is already in use by another program' : 'may not be used by this user';
    throw new StartupError(`PORT ${port} ${problem}: set PORT to another port`, { cause: error });
  });
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const config = loadConfig();
  const logger = createLogger(config);
  const announce = announcer(logger);
  // Local recordings and the embedded PostgreSQL live there; a start that fails leaves no empty DATA_DIR behind.
  const createdDataDir = config.storage.driver === 'local' || !config.databaseUrl ? prepareDataDir(config.dataDir) : undefined;
  try {
    const database = await openDatabase(config, (note) => announce(note));
    try {
      const migrations = await runMigrations(database.url, config);
      const app = await createApp(config, database.url, { logger });
      // Asked before listening, so that nothing of the start is left once it says it is ready (keepRunning below included).
      const localeWarning = await searchLocaleWarning(app.get(DataSource));
      await listen(app, config.port);
      announceReady(announce, config, database, migrations, Date.now() - startedAt);
      if (localeWarning) logger.warn(localeWarning);
      stopGracefully(app, database, logger, announce);
      // The service owns its embedded PostgreSQL: killed under it (the OOM killer), it is restarted; when it cannot
      // be, the process exits with one line, for its supervisor to restart the whole.
      database.keepRunning((reason) => {
        process.stderr.write(`${reason}\n`);
        flushLogs(logger);
        process.exit(1);
      });
    } catch (error) {
      await database.stop();
      throw error;
    }
  } catch (error) {
    removeCreatedDirs(config.dataDir, createdDataDir);
    throw error;
  } finally {
    flushLogs(logger);
  }
}

main().catch((error) => {
  process.stderr.write(`${describeStartupFailure(error)}\n`);
  process.exit(1);
});
