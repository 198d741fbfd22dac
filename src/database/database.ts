import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import type { PoolClient, PoolOptions, QueryConfig, QueryResult } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { READ_TIMEOUT_MESSAGE } from './database-errors';

export interface QueryOptions {
  /**
   * Keep the statement parsed and planned on each connection that runs it (a named prepared statement), instead
   * of parsing, analysing and planning it at every execution. For hot statements whose plan does not depend on
   * their values (lookups by key), where planning costs more than running them (docs/experiments.md,
   * "Conversations"). PostgreSQL replans it by itself when a table it reads changes.
   */
  prepared?: boolean;
}

/** Something SQL runs on: the pool, or the client of one transaction. Rows come back as the driver parses them. */
export interface Sql {
  query<R>(text: string, values?: readonly unknown[], options?: QueryOptions): Promise<R[]>;
}

/** The name of each prepared statement, by its text: one name per text, the same on every connection. */
const preparedNames = new Map<string, string>();

/** A prepared statement's query for the driver: named after its text, so that a name never means two texts. */
function preparedQuery(text: string, values: readonly unknown[]): QueryConfig {
  let name = preparedNames.get(text);
  if (!name) {
    name = `stmt_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    preparedNames.set(text, name);
  }
  return { name, text, values: values as unknown[] };
}

/** Runs a query on the pool or on one client, prepared when asked. */
async function run<R>(on: Pick<Pool, 'query'>, text: string, values: readonly unknown[], options: QueryOptions | undefined): Promise<R[]> {
  const result = options?.prepared ? await on.query(preparedQuery(text, values)) : await on.query(text, values as unknown[]);
  return result.rows as R[];
}

/** The SQL of one transaction (Database.transaction). */
export interface TransactionSql extends Sql {
  /**
   * Runs `callback` once the transaction has committed (never if it rolls back): for what must follow the
   * commit without being part of it, such as waking the workers of a job it queued.
   */
  afterCommit(callback: () => void): void;
}

/**
 * The one way to the database: every repository runs its SQL through this, on the pool that TypeORM opened
 * with the service's settings (statement timeout, pool size, type parsers). TypeORM keeps the entities (the
 * schema's declaration), the migrations and the drift check; it is not on the request path.
 */
export class Database implements Sql {
  /** The clients of Database.stream (see streamPool). */
  private readonly streamPool: Pool;
  /** The client-side read timeout of the pool's queries (pg's `query_timeout`), which streams apply themselves. */
  private readonly readTimeoutMs: number | undefined;

  constructor(private readonly pool: Pool) {
    this.streamPool = streamPool(pool);
    this.readTimeoutMs = (pool.options as DriverSettings).query_timeout;
  }

  /**
   * The Database on the pool of TypeORM's data source (the application's: DatabaseModule provides it).
   * `PostgresDriver.master` is TypeORM's public (if untyped) handle on that pg pool; an upgrade that renames
   * it fails here, at start-up, rather than at the first query.
   */
  static of(dataSource: DataSource): Database {
    const pool = (dataSource.driver as PostgresDriver).master as Pool | undefined;
    if (typeof pool?.connect !== 'function' || typeof pool.query !== 'function' || typeof pool.options !== 'object') {
      throw new Error("TypeORM's PostgresDriver has no pg Pool as `master`: the data source's pool cannot be shared");
    }
    return new Database(pool);
  }

  query<R>(text: string, values: readonly unknown[] = [], options?: QueryOptions): Promise<R[]> {
    return run<R>(this.pool, text, values, options);
  }

  /**
   * Runs `work` in one transaction on one client: committed when it resolves, rolled back when it throws.
   * Repository methods that take part accept the transaction as their last argument (`sql: Sql = this.db`).
   */
  async transaction<T>(work: (sql: TransactionSql) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const committed: (() => void)[] = [];
    let broken = false;
    // Out of the pool, a client has no error listener of the pool's: a connection lost meanwhile (a failover, an
    // operator's pg_terminate_backend) would throw from the socket's event and end the process. It fails the
    // statement under way or the next one instead, and the client is not given back.
    const lost = () => (broken = true);
    client.on('error', lost);
    try {
      await client.query('BEGIN');
      const result = await work({ ...clientSql(client), afterCommit: (callback) => committed.push(callback) });
      await client.query('COMMIT');
      for (const callback of committed) callback();
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw error;
    } finally {
      // A client whose connection was lost (or whose ROLLBACK failed) is not given back to the pool.
      client.off('error', lost);
      client.release(broken);
    }
  }

  /**
   * The rows of one query through a server-side cursor (`DECLARE … CURSOR` in a read-only transaction), as a
   * stream of arrays of rows that FETCHes the next `batchSize` rows only when its consumer asks (backpressure):
   * memory holds a batch or two whatever the count. Each FETCH is a statement of its own, under the usual
   * statement and read timeouts (a protocol-level portal would have one statement timeout for the whole read).
   * The first batch is fetched before this resolves, so that a failing query is an error the caller can still
   * answer (a 503, say) rather than a response cut short. The stream holds one client of the streams' pool until
   * it ends or is destroyed; destroying it (a client that went away) closes the cursor, which stops the query,
   * and gives the client back.
   */
  async stream(
    text: string,
    values: readonly unknown[],
    batchSize: number,
    { idleLimitMs = STREAM_IDLE_LIMIT_MS } = {},
  ): Promise<Readable> {
    const batches = new CursorBatches(await this.streamPool.connect(), batchSize, this.readTimeoutMs);
    try {
      await batches.open(text, values, idleLimitMs);
    } catch (error) {
      batches.destroy();
      throw error;
    }
    return batches;
  }

  /** How many streams can hold a client at once: half the main pool's size (see streamPool). */
  get maxStreams(): number {
    return this.streamPool.options.max;
  }

  /** Closes the streams' pool (TypeORM closes the other one), once every stream has given its client back. */
  async onApplicationShutdown(): Promise<void> {
    if (!this.streamPool.ending) await this.streamPool.end();
  }
}

/**
 * The pool of Database.stream: the main pool's settings (PostgreSQL's statement timeout, type parsers, …) for
 * half as many clients, without pg's per-query read timeout (`query_timeout`), which the streams apply to each
 * statement themselves. pg's implementation of that timeout kept each FETCH's rows alive across two
 * young-generation collections until V8 had optimised pg's `Client.query` for good (in the service, it was
 * deoptimised and optimised again through the first exports): during the first exports after start-up nearly
 * every row was promoted to the old generation, so the streams time their statements themselves
 * (docs/experiments.md, "Calls for integrators").
 */
function streamPool(main: Pool): Pool {
  const { query_timeout: _readTimeout, max, ...settings } = main.options as DriverSettings;
  const pool = new Pool({ ...settings, max: Math.max(1, Math.floor(max / 2)) });
  // An idle client whose connection breaks (a restart, an operator's pg_terminate_backend) is dropped by the
  // pool, which also emits it here: without a listener, the process would exit. By name and code only, as the
  // export's failures are logged.
  pool.on('error', ({ name, code }: Error & { code?: unknown }) => {
    logger.warn({ err: { name, code } }, 'An idle client of the streams’ pool lost its connection');
  });
  return pool;
}

/** A pool's settings, with the driver's per-query read timeout (a Client setting, which pg's types leave out). */
type DriverSettings = PoolOptions & { query_timeout?: number };

const logger = new Logger('Database');

/** The cursor of Database.stream: one per client at a time, in the stream's own transaction. */
const CURSOR = 'stream_cursor';
/** Longest a stream's consumer may leave it unread before the server ends its session: 5 minutes by default. */
const STREAM_IDLE_LIMIT_MS = 300_000;

/** A database error has a SQLSTATE; anything else (a lost connection, a read timeout) leaves the client unusable. */
const isServerError = (error: unknown) =>
  typeof (error as { code?: unknown })?.code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code);

/** Batches of rows FETCHed from the cursor Database.stream declared on a client of the pool. */
class CursorBatches extends Readable {
  private first: unknown[] | undefined;
  private ended = false;
  /** The connection failed: no statement can end the transaction, and the client is discarded. */
  private lost: Error | undefined;

  constructor(
    private readonly client: PoolClient,
    private readonly batchSize: number,
    private readonly readTimeoutMs: number | undefined,
  ) {
    // One batch read ahead at most.
    super({ objectMode: true, highWaterMark: 1 });
    // A client out of the pool has no error listener of the pool's: without this, a lost connection would throw.
    client.on('error', this.onConnectionError);
  }

  /** Opens the cursor in its transaction, and fetches the first batch. */
  async open(text: string, values: readonly unknown[], idleLimitMs: number): Promise<void> {
    await this.query('BEGIN READ ONLY');
    // A consumer that stops reading must not hold a connection and a snapshot for ever: the server ends the session.
    await this.query(`SET LOCAL idle_in_transaction_session_timeout = ${Math.round(idleLimitMs)}`);
    await this.query(`DECLARE ${CURSOR} NO SCROLL CURSOR FOR ${text}`, values);
    this.first = await this.fetch();
  }

  override _read(): void {
    const batch = this.first;
    this.first = undefined;
    (batch ? Promise.resolve(batch) : this.fetch()).then(
      (rows) => {
        if (this.destroyed) return;
        if (rows.length) this.push(rows);
        if (rows.length < this.batchSize) {
          this.ended = true;
          this.push(null);
        }
      },
      (error: Error) => this.destroy(error),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const release = (broken?: Error) => {
      this.client.off('error', this.onConnectionError);
      this.client.release(broken);
      callback(error);
    };
    if (this.lost) return release(this.lost);
    // Ending the transaction closes the cursor, which stops the query. It waits for a FETCH in flight (bounded by
    // the timeouts); if it fails, the connection is in doubt and is discarded.
    this.client.query(this.ended ? 'COMMIT' : 'ROLLBACK').then(
      () => release(),
      (failure: Error) => release(failure),
    );
  }

  private readonly onConnectionError = (error: Error): void => {
    this.lost = error;
    this.destroy(error);
  };

  private fetch(): Promise<unknown[]> {
    return this.query(`FETCH ${this.batchSize} FROM ${CURSOR}`);
  }

  /**
   * One statement on the stream's client, given up after the read timeout (the server stopped answering), which
   * leaves the connection unusable. pg's callback form: see streamPool for why not its own read timeout.
   */
  private query(text: string, values: readonly unknown[] = []): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      const fail = (error: Error) => {
        if (!isServerError(error)) this.lost = error;
        reject(error);
      };
      const timer = this.readTimeoutMs ? setTimeout(() => fail(new Error(READ_TIMEOUT_MESSAGE)), this.readTimeoutMs) : undefined;
      this.client.query(text, values as unknown[], (error: Error | undefined, result: QueryResult) => {
        clearTimeout(timer);
        if (error) fail(error);
        else resolve(result.rows);
      });
    });
  }
}

export function clientSql(client: Pick<PoolClient, 'query'>): Sql {
  return { query: <R>(text: string, values: readonly unknown[] = [], options?: QueryOptions) => run<R>(client, text, values, options) };
}
