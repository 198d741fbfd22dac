import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { startEmbeddedPostgres } from './embedded-postgres';

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

/** An embedded PostgreSQL in a temporary directory, for tests and tooling. */
export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'voice-agent-pg-'));
  fs.chmodSync(dataDir, 0o755); // the postgres system user must reach the cluster inside
  const server = await startEmbeddedPostgres({ dataDir, port: await freePort() });
  return {
    url: server.url,
    dataDir,
    async destroy() {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
