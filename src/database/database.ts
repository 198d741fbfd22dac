import { Injectable } from '@nestjs/common';
import { Readable } from 'node:stream';
import type { Pool, PoolClient } from 'pg';
import Cursor from 'pg-cursor';
import { DataSource } from 'typeorm';

/** Something SQL runs on: the pool, or the client of one transaction. Rows come back as the driver parses them. */
export interface Sql {
  query<R>(text: string, values?: readonly unknown[]): Promise<R[]>;
}

/**
 * The one way to the database: every repository runs its SQL through this, on the pool that TypeORM opened
 * with the service's settings (statement timeout, pool size, type parsers). TypeORM keeps the entities (the
 * schema's declaration), the migrations and the drift check; it is not on the request path.
 */
@Injectable()
export class Database implements Sql {
  private readonly pool: Pool;

  constructor(dataSource: DataSource) {
    this.pool = (dataSource.driver as unknown as { master: Pool }).master;
  }

  async query<R>(text: string, values: readonly unknown[] = []): Promise<R[]> {
    return (await this.pool.query(text, values as unknown[])).rows as R[];
  }

  /**
   * Runs `work` in one transaction on one client: committed when it resolves, rolled back when it throws.
   * Repository methods that take part accept the transaction as their last argument (`sql: Sql = this.db`).
   */
  async transaction<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const result = await work(clientSql(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw error;
    } finally {
      // A client whose ROLLBACK failed (connection lost) is not given back to the pool.
      client.release(broken);
    }
  }

  /**
   * The rows of one query through a server-side cursor, `batchSize` rows at a time, as a stream of arrays
   * of rows that fetches the next batch only when its consumer asks (backpressure): memory holds a batch or
   * two whatever the count. The first batch is fetched before this resolves, so that a failing query is an
   * error the caller can still answer (a 503, say) rather than a response cut short. The stream holds one
   * client of the pool until it ends or is destroyed; destroying it (a client that went away) closes the
   * cursor, which stops the query, and gives the client back.
   */
  async stream(text: string, values: readonly unknown[], batchSize: number): Promise<Readable> {
    const client = await this.pool.connect();
    const cursor = client.query(new Cursor(text, values as unknown[]));
    // pg's client-side read timeout (query_timeout) runs from a query's submission to its `callback`, which
    // would end an export that takes longer than it. A submittable calls `callback` when done: calling it now
    // clears that timer, and CursorBatches times each fetch instead.
    (cursor as unknown as { callback?: () => void }).callback?.();
    const batches = new CursorBatches(client, cursor, batchSize, this.pool.options.query_timeout);
    try {
      await batches.start();
    } catch (error) {
      batches.destroy();
      throw error;
    }
    return batches;
  }
}

/** Batches of rows read from a pg-cursor on a client of the pool; see Database.stream. */
class CursorBatches extends Readable {
  private first: unknown[] | undefined;
  /** The connection failed: the cursor cannot be closed, and the client is discarded. */
  private lost: Error | undefined;
  private finish: ((lost?: Error) => void) | undefined;

  constructor(
    private readonly client: PoolClient,
    private readonly cursor: Cursor,
    private readonly batchSize: number,
    /** Longest wait for one batch before the server is taken for gone (the pool's query_timeout). */
    private readonly fetchTimeoutMs: number | undefined,
  ) {
    // One batch read ahead at most.
    super({ objectMode: true, highWaterMark: 1 });
    // A client out of the pool has no error listener of the pool's: without this, a lost connection would throw.
    client.on('error', this.onConnectionError);
  }

  async start(): Promise<void> {
    this.first = await this.readBatch();
  }

  override _read(): void {
    const batch = this.first;
    this.first = undefined;
    (batch ? Promise.resolve(batch) : this.readBatch()).then(
      (rows) => {
        if (this.destroyed) return;
        if (rows.length) this.push(rows);
        if (rows.length < this.batchSize) this.push(null);
      },
      (error: Error) => this.destroy(error),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    let finished = false;
    this.finish = (lost) => {
      if (finished) return;
      finished = true;
      this.client.off('error', this.onConnectionError);
      this.client.release(lost);
      callback(error);
    };
    if (this.lost) return this.finish(this.lost);
    // Closing the portal ends the query on the server; the client is reusable once the server has answered.
    // A server that does not answer the close either is given up like an unanswered fetch.
    const timer = this.fetchTimeoutMs ? setTimeout(() => this.finish?.(new Error('Query read timeout')), this.fetchTimeoutMs) : undefined;
    this.cursor.close(() => {
      clearTimeout(timer);
      this.finish?.();
    });
  }

  private readonly onConnectionError = (error: Error): void => {
    this.lost = error;
    if (this.finish) this.finish(error);
    else this.destroy(error);
  };

  private readBatch(): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      // A server that stopped answering (network, frozen host) is given up, as the pool's query_timeout does for a query.
      const timer = this.fetchTimeoutMs
        ? setTimeout(() => {
            this.lost = new Error('Query read timeout');
            reject(this.lost);
          }, this.fetchTimeoutMs)
        : undefined;
      this.cursor.read(this.batchSize, (error, rows) => {
        clearTimeout(timer);
        if (error) reject(error);
        else resolve(rows);
      });
    });
  }
}

export function clientSql(client: Pick<PoolClient, 'query'>): Sql {
  return { query: async <R>(text: string, values: readonly unknown[] = []) => (await client.query(text, values as unknown[])).rows as R[] };
}
