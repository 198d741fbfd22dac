import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { searchLocaleWarning } from '../src/database/search-locale';
import { freePort, startOnFreePort } from '../scripts/throwaway-postgres';

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
    const first = await startOnFreePort({ dataDir });
    expect(first.owned).toBe(true);
    await query(first.url, 'CREATE TABLE kept (value text); INSERT INTO kept VALUES ($$नमस्ते$$)');
    const available = await query(first.url, "SELECT name FROM pg_available_extensions WHERE name IN ('pg_trgm', 'btree_gin', 'pgcrypto') ORDER BY name");
    expect(available).toEqual([{ name: 'btree_gin' }, { name: 'pg_trgm' }, { name: 'pgcrypto' }]);
    await first.stop();

    const second = await startOnFreePort({ dataDir });
    expect(await query(second.url, 'SELECT value FROM kept')).toEqual([{ value: 'नमस्ते' }]);
    await second.stop();
  });

  it('lets a second process attach to the running server instead of starting another', async () => {
    const server = await startOnFreePort({ dataDir });
    const cli = await startEmbeddedPostgres({ dataDir, port: await freePort() });
    expect(cli.owned).toBe(false);
    expect(cli.url).toBe(server.url); // the running server's port, not the one asked for
    await cli.stop(); // a no-op: it does not own the server
    expect(await query(server.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
    await server.stop();
  });

  it('starts on another port when the one it chose was taken before the server could bind it', async () => {
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const taken = (squatter.address() as net.AddressInfo).port;
    const ports = [taken, await freePort()];
    try {
      const server = await startOnFreePort({ dataDir }, { choosePort: async () => ports.shift()! });
      expect(Number(new URL(server.url).port)).not.toBe(taken);
      expect(ports).toEqual([]);
      expect(await query(server.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
      await server.stop();
    } finally {
      squatter.close();
    }
  });

  it('leaves the server running on stop({ whenIdle }) while another client is connected', async () => {
    const server = await startOnFreePort({ dataDir });
    const client = new Client({ connectionString: server.url });
    await client.connect();
    await server.stop({ whenIdle: true });
    expect((await client.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    await client.end();
    await server.stop({ whenIdle: true });
    await expect(query(server.url, 'SELECT 1')).rejects.toThrow();
  });
});

describe('the search locale', () => {
  const testDatabase = process.env.DATABASE_URL!;
  const asDataSource = (url: string) => ({ query: (sql: string) => query(url, sql) }) as never;

  it('gives pg_trgm the letters of every script in the embedded cluster (LC_CTYPE C.UTF-8)', async () => {
    const rows = (await query(testDatabase, "SELECT cardinality(show_trgm('র্জুন')) AS bengali, cardinality(show_trgm('பிரி')) AS tamil, cardinality(show_trgm('张伟')) AS chinese")) as Record<string, number>[];
    expect(rows[0].bengali).toBeGreaterThan(0);
    expect(rows[0].tamil).toBeGreaterThan(0);
    expect(rows[0].chinese).toBeGreaterThan(0);
    expect(await searchLocaleWarning(asDataSource(testDatabase))).toBeNull();
  });

  it('warns at start-up about a database whose LC_CTYPE is C', async () => {
    const name = `ctype_c_${process.pid}`;
    await query(testDatabase, `CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LC_CTYPE 'C' LC_COLLATE 'C'`);
    try {
      const url = new URL(testDatabase);
      url.pathname = `/${name}`;
      expect(await searchLocaleWarning(asDataSource(url.toString()))).toMatch(/LC_CTYPE is C: searches of names in non-Latin scripts cannot use the trigram index/);
    } finally {
      await query(testDatabase, `DROP DATABASE ${name}`);
    }
  });
});
