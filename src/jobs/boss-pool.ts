import { setImmediate as nextTurn } from 'node:timers/promises';
import { Pool, PoolConfig, QueryResult } from 'pg';
import type PgBoss from 'pg-boss';

/**
 * pg-boss's connections, given to it as its `db` option: a pool of our own, which counts the statements in
 * flight, so that stopping can wait for a moment when none is (see `quiet`).
 */
export class BossPool implements PgBoss.Db {
  private readonly pool: Pool;
  private inFlight = 0;
  private waiters: (() => void)[] = [];

  constructor(config: PoolConfig, onError: (error: Error) => void) {
    this.pool = new Pool(config);
    this.pool.on('error', onError);
  }

  async executeSql(text: string, values?: unknown[]): Promise<QueryResult> {
    this.inFlight += 1;
    try {
      return await this.pool.query(text, values);
    } finally {
      this.inFlight -= 1;
      if (this.inFlight === 0) for (const waiter of this.waiters.splice(0)) waiter();
    }
  }

  /**
   * Resolves at the start of a turn of the event loop in which no statement is in flight: every loop of
   * pg-boss's is then waiting on a timer, which its `stop`, called at once by the awaiting caller (its
   * continuation runs in this same turn, before any timer or I/O), clears or aborts.
   */
  async quiet(): Promise<void> {
    for (;;) {
      await nextTurn();
      if (this.inFlight === 0) return;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  async end(): Promise<void> {
    if (!this.pool.ended && !this.pool.ending) await this.pool.end();
  }
}
