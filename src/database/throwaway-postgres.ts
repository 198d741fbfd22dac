import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { EmbeddedPostgres, EmbeddedPostgresOptions, startEmbeddedPostgres } from './embedded-postgres';

export interface ThrowawayPostgres {
  url: string;
  dataDir: string;
  /** Stops the server and deletes its data. */
  destroy(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts (or attaches to) the embedded PostgreSQL of `options.dataDir` on a free port. The port is free when
 * chosen, but another process can take it in the second before the server binds it (tests run in parallel):
 * then it tries again on another port.
 */
export async function startOnFreePort(
  options: Omit<EmbeddedPostgresOptions, 'port'>,
  { attempts = 3, choosePort = freePort }: { attempts?: number; choosePort?: () => Promise<number> } = {},
): Promise<EmbeddedPostgres> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEmbeddedPostgres({ ...options, port: await choosePort() });
    } catch (error) {
      if (attempt >= attempts || !/Address already in use/.test(String(error))) throw error;
      options.log?.(`The port was taken before PostgreSQL could bind it; trying another (attempt ${attempt + 1} of ${attempts})`);
    }
  }
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
