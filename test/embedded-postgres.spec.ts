import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { freePort } from '../src/database/throwaway-postgres';

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('embedded PostgreSQL', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-pg-'));
    fs.chmodSync(dataDir, 0o755);
  });
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('creates a cluster once, keeps data across restarts, and has the extensions the schema needs', async () => {
    const port = await freePort();
    const first = await startEmbeddedPostgres({ dataDir, port });
    expect(first.owned).toBe(true);
    await query(first.url, 'CREATE TABLE kept (value text); INSERT INTO kept VALUES ($$नमस्ते$$)');
    const available = await query(first.url, "SELECT name FROM pg_available_extensions WHERE name IN ('pg_trgm', 'btree_gin', 'pgcrypto') ORDER BY name");
    expect(available).toEqual([{ name: 'btree_gin' }, { name: 'pg_trgm' }, { name: 'pgcrypto' }]);
    await first.stop();

    const second = await startEmbeddedPostgres({ dataDir, port });
    expect(await query(second.url, 'SELECT value FROM kept')).toEqual([{ value: 'नमस्ते' }]);
    await second.stop();
  });

  it('lets a second process attach to the running server instead of starting another', async () => {
    const port = await freePort();
    const server = await startEmbeddedPostgres({ dataDir, port });
    const cli = await startEmbeddedPostgres({ dataDir, port: await freePort() });
    expect(cli.owned).toBe(false);
    expect(cli.url).toBe(server.url); // the running server's port, not the one asked for
    await cli.stop(); // a no-op: it does not own the server
    expect(await query(server.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    await server.stop();
  });

  it('leaves the server running on stop({ whenIdle }) while another client is connected', async () => {
    const server = await startEmbeddedPostgres({ dataDir, port: await freePort() });
    const client = new Client({ connectionString: server.url });
    await client.connect();
    await server.stop({ whenIdle: true });
    expect((await client.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    await client.end();
    await server.stop({ whenIdle: true });
    await expect(query(server.url, 'SELECT 1')).rejects.toThrow();
  });
});
