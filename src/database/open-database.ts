import { StartupError } from '../common/startup-error';
import { AppConfig } from '../config/config';
import { PortTakenError, startEmbeddedPostgres } from './embedded-postgres';

export interface OpenDatabase {
  url: string;
  /** Human-readable description for the start-up banner. */
  description: string;
  stop(): Promise<void>;
  /**
   * For the service: restarts the embedded PostgreSQL whenever it stops under this process (see
   * EmbeddedPostgres.keepRunning), until `stop`; `giveUp` gets one line when it cannot. Nothing with DATABASE_URL:
   * that server is someone else's to run.
   */
  keepRunning(giveUp: (reason: string) => void): void;
}

/**
 * The configured PostgreSQL (DATABASE_URL), or the embedded one under DATA_DIR, started if need be.
 * @param log notes for the operator (a port or a cluster directory other than the usual one)
 */
export async function openDatabase(
  config: Pick<AppConfig, 'databaseUrl' | 'dataDir' | 'embeddedPgPort'>,
  log?: (message: string) => void,
): Promise<OpenDatabase> {
  if (config.databaseUrl) {
    const { host, pathname } = new URL(config.databaseUrl);
    return { url: config.databaseUrl, description: `PostgreSQL at ${host}${pathname}`, stop: async () => {}, keepRunning: () => undefined };
  }
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, log }).catch((error) => {
    if (!(error instanceof PortTakenError)) throw error;
    throw new StartupError(
      `EMBEDDED_PG_PORT ${error.port} is already in use by another program: set EMBEDDED_PG_PORT to a free port, or unset it to have one chosen`,
      {
        cause: error,
      },
    );
  });
  const port = new URL(embedded.url).port;
  return {
    url: embedded.url,
    description: `embedded PostgreSQL on 127.0.0.1:${port}, data in ${config.dataDir}${embedded.owned ? '' : ' (already running)'}`,
    // Leave it running if another process (a CLI command, a second server) still uses it.
    stop: () => embedded.stop({ whenIdle: true }),
    keepRunning: (giveUp) => embedded.keepRunning(giveUp),
  };
}
