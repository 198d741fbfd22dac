import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  EmbeddedPostgres,
  EmbeddedPostgresOptions,
  freePort,
  PortTakenError,
  startEmbeddedPostgres,
} from '../src/database/embedded-postgres';

/**
 * Tooling around the embedded PostgreSQL for the tests, the scripts and the benchmarks (not the service: it
 * lives here, not in src/): free ports, a retry when one was taken meanwhile, throwaway clusters.
 */
export { freePort };

export interface ThrowawayPostgres {
  url: string;
  dataDir: string;
  /** Stops the server and deletes its data. */
  destroy(): Promise<void>;
}

/** How a server reports that its port was taken: Node's error code, or the one line of the service's start-up error. */
const PORT_TAKEN = /EADDRINUSE|is already in use/;

/**
 * Runs `start`, which binds ports it has just chosen free, again when one of them was taken in between: another
 * process can take a free port in the second before the server binds it (tests run in parallel).
 * @param options.onRetry called before each new attempt, with its number
 */
export async function retryWhenPortTaken<T>(
  start: () => Promise<T>,
  { attempts = 3, onRetry }: { attempts?: number; onRetry?: (attempt: number) => void } = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= attempts || !(error instanceof PortTakenError || PORT_TAKEN.test(String(error)))) throw error;
      onRetry?.(attempt + 1);
    }
  }
}

/** Starts (or attaches to) the embedded PostgreSQL of `options.dataDir` on a free port (another one if it was taken). */
export function startOnFreePort(
  options: Omit<EmbeddedPostgresOptions, 'port'>,
  { attempts = 3, choosePort = freePort }: { attempts?: number; choosePort?: () => Promise<number> } = {},
): Promise<EmbeddedPostgres> {
  return retryWhenPortTaken(async () => startEmbeddedPostgres({ ...options, port: await choosePort() }), {
    attempts,
    onRetry: (attempt) =>
      options.log?.(`The port was taken before PostgreSQL could bind it; trying another (attempt ${attempt} of ${attempts})`),
  });
}

/** An embedded PostgreSQL in a temporary directory, for tests and tooling. */
export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voice-agent-pg-'));
  fs.chmodSync(dataDir, 0o755); // the postgres system user must reach the cluster inside
  const server = await startOnFreePort({ dataDir });
  return {
    url: server.url,
    dataDir,
    async destroy() {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
