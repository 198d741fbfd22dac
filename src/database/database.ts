import type { Pool, PoolClient } from 'pg';
import type { DataSource } from 'typeorm';

/** Something SQL runs on: the pool, or the client of one transaction. Rows come back as the driver parses them. */
export interface Sql {
  query<R>(text: string, values?: readonly unknown[]): Promise<R[]>;
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
  constructor(private readonly pool: Pool) {}

  /** The Database on the pool of TypeORM's data source (the application's: DatabaseModule provides it). */
  static of(dataSource: DataSource): Database {
    return new Database((dataSource.driver as unknown as { master: Pool }).master);
  }

  async query<R>(text: string, values: readonly unknown[] = []): Promise<R[]> {
    return (await this.pool.query(text, values as unknown[])).rows as R[];
  }

  /**
   * Runs `work` in one transaction on one client: committed when it resolves, rolled back when it throws.
   * Repository methods that take part accept the transaction as their last argument (`sql: Sql = this.db`).
   */
  async transaction<T>(work: (sql: TransactionSql) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const committed: (() => void)[] = [];
    let broken = false;
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
      // A client whose ROLLBACK failed (connection lost) is not given back to the pool.
      client.release(broken);
    }
  }
}

export function clientSql(client: Pick<PoolClient, 'query'>): Sql {
  return { query: async <R>(text: string, values: readonly unknown[] = []) => (await client.query(text, values as unknown[])).rows as R[] };
}
