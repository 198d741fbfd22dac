import { Logger } from '@nestjs/common';
import type { Readable } from 'node:stream';
import type { Pool } from 'pg';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { Database } from '../src/database/database';
import { createTestContext, streamPoolOf, TestContext } from './helpers';

/** Database.stream: a server-side cursor read in batches, and what happens to its client in every ending. */
describe('Database.stream', () => {
  let context: TestContext;
  let database: Database;
  let pool: Pool;
  let observer: Client;

  beforeAll(async () => {
    context = await createTestContext();
    database = context.app.get(Database);
    pool = streamPoolOf(context.app);
    observer = new Client({ connectionString: process.env.DATABASE_URL });
    await observer.connect();
  });
  afterAll(async () => {
    await observer.end();
    await context.close();
  });

  /**
   * The streams' pool's backends that are in a transaction or running a statement (a stream's cursor is open).
   * The pool's clients are read from pg-pool's `_clients` (no public list), so that other test files' work on
   * the same server is never counted.
   */
  const busyBackends = async () => {
    const pids = (pool as unknown as { _clients: { processID: number }[] })._clients.map((client) => client.processID);
    return (await observer.query(`SELECT pid, state, query FROM pg_stat_activity WHERE pid = ANY($1) AND state <> 'idle'`, [pids]))
      .rows as {
      pid: number;
      state: string;
      query: string;
    }[];
  };
  /** One stream's cursor is open, its transaction idle between two fetches. */
  const waitingForNextFetch = async () => {
    const backends = await busyBackends();
    return backends.length === 1 && backends[0].state === 'idle in transaction';
  };
  /** Every client the pool opened is back in it, and nobody waits for one. */
  const poolIsWhole = () => pool.idleCount === pool.totalCount && pool.waitingCount === 0;
  const until = async (condition: () => boolean | Promise<boolean>) => {
    while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 20));
  };

  async function collect(stream: Readable): Promise<number[][]> {
    const batches: number[][] = [];
    for await (const batch of stream) batches.push((batch as { n: number }[]).map((row) => row.n));
    return batches;
  }

  it('reads every row, in order, in batches of at most batchSize', async () => {
    const stream = await database.stream('SELECT n FROM generate_series(1, 2500) AS n ORDER BY n', [], 1000);
    const batches = await collect(stream);
    expect(batches.map((batch) => batch.length)).toEqual([1000, 1000, 500]);
    expect(batches.flat()).toEqual(Array.from({ length: 2500 }, (_, i) => i + 1));
    await until(poolIsWhole);
  });

  it('ends cleanly when the count is an exact multiple of the batch, or zero', async () => {
    expect((await collect(await database.stream('SELECT n FROM generate_series(1, 20) AS n', [], 10))).flat()).toHaveLength(20);
    expect(await collect(await database.stream('SELECT n FROM generate_series(1, 0) AS n', [], 10))).toEqual([]);
    await until(poolIsWhole);
  });

  it("streams on a pool of its own: the main pool's settings for half its clients, without pg's read timeout (the stream's own), closed at shut-down", async () => {
    const short = await createTestContext({ dbStatementTimeoutMs: 1000, dbPoolSize: 6 });
    const main = (short.app.get(DataSource).driver as PostgresDriver).master as Pool;
    const streams = streamPoolOf(short.app);
    try {
      expect(streams).not.toBe(main);
      expect(streams.options).toMatchObject({ max: 3, statement_timeout: 1000, application_name: main.options.application_name });
      expect(main.options).toMatchObject({ max: 6, query_timeout: 3000 });
      expect(streams.options).not.toHaveProperty('query_timeout');
      expect((await collect(await short.app.get(Database).stream('SELECT n FROM generate_series(1, 3) AS n', [], 10))).flat()).toEqual([
        1, 2, 3,
      ]);
      expect(streams.totalCount).toBe(1);
    } finally {
      await short.close();
    }
    expect(streams.ended).toBe(true);
  });

  it('warns, by name and code only, when an idle client of the streams’ pool loses its connection; the next stream opens another', async () => {
    await collect(await database.stream('SELECT n FROM generate_series(1, 3) AS n', [], 10));
    await until(poolIsWhole);
    const pids = (pool as unknown as { _clients: { processID: number }[] })._clients.map((client) => client.processID);
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      const lost = () => warn.mock.calls.filter(([, message]) => message === 'An idle client of the streams’ pool lost its connection');
      await observer.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
      await until(() => lost().length === pids.length);
      expect(lost()).toEqual(
        pids.map(() => [{ err: { name: 'error', code: '57P01' } }, 'An idle client of the streams’ pool lost its connection']),
      );
      expect(pool.totalCount).toBe(0);
    } finally {
      warn.mockRestore();
    }
    expect((await collect(await database.stream('SELECT n FROM generate_series(1, 3) AS n', [], 10))).flat()).toEqual([1, 2, 3]);
  });

  it('runs each fetch under the statement timeout, not the whole read: a stream outlives it', async () => {
    const short = await createTestContext({ dbStatementTimeoutMs: 1000 });
    try {
      // Six fetches of about 250 ms each: 1.5 s in all, over the 1 s timeout, none of them near it.
      const stream = await short.app
        .get(Database)
        .stream('SELECT n, pg_sleep(CASE WHEN n % 10 = 0 THEN 0.25 ELSE 0 END) FROM generate_series(1, 60) AS n', [], 10);
      expect((await collect(stream)).flat()).toHaveLength(60);
    } finally {
      await short.close();
    }
  });

  it('has the server end the session of a stream nobody reads for its idle limit; the client is discarded', async () => {
    const totalBefore = pool.totalCount;
    const stream = await database.stream('SELECT generate_series(1, 1000) AS n', [], 10, { idleLimitMs: 200 });
    await new Promise((resolve) => stream.once('data', resolve));
    stream.pause();
    // Nobody reads: the next fetch is never asked for, and the server ends the idle transaction's session.
    const failed = await new Promise<Error>((resolve) => stream.once('error', resolve));
    expect(failed.message).toMatch(/idle-in-transaction timeout|terminat/i);
    await until(() => stream.closed);
    await until(() => pool.totalCount <= totalBefore && poolIsWhole());
    expect((await database.query<{ ok: number }>('SELECT 1 AS ok'))[0].ok).toBe(1);
  });

  it('rejects, before any row, a query that fails at once; the client goes back to the pool', async () => {
    await expect(database.stream('SELECT 1 / 0 AS n', [], 10)).rejects.toThrow('division by zero');
    await until(poolIsWhole);
    expect((await database.query<{ ok: number }>('SELECT 1 AS ok'))[0].ok).toBe(1);
  });

  it('errors the stream when the query fails mid-way; the client is usable again', async () => {
    const stream = await database.stream(
      'SELECT CASE WHEN n < 35 THEN n ELSE 1 / (n - n) END AS n FROM generate_series(1, 100) AS n',
      [],
      10,
    );
    await expect(collect(stream)).rejects.toThrow('division by zero');
    await until(poolIsWhole);
    expect((await database.query<{ ok: number }>('SELECT 1 AS ok'))[0].ok).toBe(1);
  });

  it('closes the cursor when destroyed mid-way: the query stops and the client goes back to the pool', async () => {
    const stream = await database.stream('SELECT generate_series(1, 100000000) AS n', [], 100);
    const first = await new Promise((resolve) => stream.once('data', resolve));
    expect(first).toHaveLength(100);
    // Paused (a 'data' listener left the stream flowing): once the batch read ahead is in, nothing is fetched, and
    // the cursor is open on the server, its transaction waiting for the next fetch.
    stream.pause();
    await until(waitingForNextFetch);
    expect(await busyBackends()).toEqual([
      expect.objectContaining({ state: 'idle in transaction', query: 'FETCH 100 FROM stream_cursor' }),
    ]);
    stream.destroy();
    await until(() => stream.closed);
    expect(await busyBackends()).toEqual([]);
    await until(poolIsWhole);
    expect((await database.query<{ ok: number }>('SELECT 1 AS ok'))[0].ok).toBe(1);
  });

  it('errors the stream and discards the client when the connection is lost mid-way', async () => {
    const stream = await database.stream('SELECT generate_series(1, 100000000) AS n', [], 100);
    await new Promise((resolve) => stream.once('data', resolve));
    stream.pause();
    await until(waitingForNextFetch);
    const [backend] = await busyBackends();
    const totalBefore = pool.totalCount;
    const failed = new Promise<Error>((resolve) => stream.once('error', resolve));
    await observer.query('SELECT pg_terminate_backend($1)', [backend.pid]);
    stream.resume();
    expect((await failed).message).toMatch(/terminat/i);
    await until(() => stream.closed);
    await until(() => pool.totalCount === totalBefore - 1 && poolIsWhole());
    expect((await database.query<{ ok: number }>('SELECT 1 AS ok'))[0].ok).toBe(1);
  });
});
